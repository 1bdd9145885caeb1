#include "llm_barrier.h"

#include <algorithm>

#include "../../common/error.h"
#include "../../runtime/context.h"
#include "../decode/decode_program.h"
#include "../gemm/gemm_program.h"
#include "llm_program.h"

namespace kb {
namespace {

// Builds the layer's kernels into `ctx` in program order; with `gated`, each kernel's
// activation reads wait for the kernel before (the waves of one attention kernel share it).
class Compose {
 public:
  Compose(RuntimeContext& ctx, bool gated) : ctx_(ctx), gated_(gated) {}
  void gemm(const GemmConfig& g, const LlmKernel& k, bool layer) {
    if (next(k, layer)) gemm_compose(ctx_, g);
  }
  void attention(const DecodeConfig& d, const LlmKernel& k, bool layer) {
    if (next(k, layer)) decode_compose(ctx_, d);
  }
  void attention(const LlmAttnConfig& x, const LlmKernel& k, bool layer) {
    if (next(k, layer)) llm_attn_compose(ctx_, x);
  }
  void allreduce(const AllreduceConfig&, const LlmKernel&, bool) {
    throw InternalError("a composed layer runs one rank: no allreduce", __FILE__, __LINE__);
  }
  void vector(const LlmVecConfig& x, const LlmKernel& k, bool layer) {
    if (next(k, layer)) llm_vec_compose(ctx_, x);
  }
  void transfer(const LlmSendConfig&) {}

 private:
  bool next(const LlmKernel& k, bool layer) {
    if (!layer) return false;  // the head is not the layer's
    if (&k != last_) {         // a new kernel (not a further wave of the last)
      if (gated_ && last_) ctx_.set_gate(ctx_.join(first_));
      first_ = ctx_.graph().ops().size();
      last_ = &k;
    }
    return true;
  }
  RuntimeContext& ctx_;
  bool gated_;
  const LlmKernel* last_ = nullptr;
  std::size_t first_ = 0;
};

// The most ops the layer's kernels build, summed, and a join each.
struct CountOps {
  std::int64_t ops = 0;
  void gemm(const GemmConfig& g, const LlmKernel&, bool layer) { add(layer, gemm_reference_ops(g)); }
  void attention(const DecodeConfig& d, const LlmKernel&, bool layer) { add(layer, decode_reference_ops(d)); }
  void attention(const LlmAttnConfig& x, const LlmKernel&, bool layer) { add(layer, llm_attn_reference_ops(x)); }
  void allreduce(const AllreduceConfig&, const LlmKernel&, bool) {}
  void vector(const LlmVecConfig& x, const LlmKernel&, bool layer) { add(layer, llm_vec_reference_ops(x)); }
  void transfer(const LlmSendConfig&) {}
  void add(bool layer, std::int64_t n) {
    if (layer) ops = sat_add(ops, sat_add(n, 1));
  }
};

ps_t composed_layer(const LlmConfig& c, bool gated) {
  RuntimeContext ctx(topology_of(llm_rank_hw(c)));
  CountOps count;
  llm_for_each_kernel(c, count);
  ctx.limit_ops(count.ops);
  Compose compose(ctx, gated);
  try {
    llm_for_each_kernel(c, compose);
  } catch (const InputError& e) {
    throw InternalError(std::string("a composed layer was rejected by the runtime: ") + e.what(), __FILE__, __LINE__);
  }
  return ctx.run_checked("llm", "composed layer").summary.latency_ps;
}

}  // namespace

LlmBarrierCost llm_barrier_cost(const LlmConfig& c) {
  const std::int32_t st = llm_check(c);
  if (st != kLlmOk) throw InputError(llm_status_message(st, c));
  if (c.tp != 1 || c.pp != 1 || c.microbatches != 1)
    throw InputError("a layer without barriers is composed on one rank, one stage and one micro-batch (tp, pp and "
                     "micro-batches 1)");
  LlmConfig one = c;
  one.layers_run = 1;
  LlmBarrierCost r;
  r.with_barrier = llm_reference(one).layer_ps;
  r.tensor_order = composed_layer(c, true);
  r.pe_order = composed_layer(c, false);
  return r;
}

}  // namespace kb
