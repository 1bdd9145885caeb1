// The barrier between a step's kernels, measured (docs/adr/0019-whole-models.md): a layer
// composed as one graph with no barrier, its kernels ordered by their activations only or by
// each PE's program order only, against the layer as timed; and the runtime's gate that the
// composition rests on.
#include <gtest/gtest.h>

#include <cstdio>

#include "host/common/error.h"
#include "host/families/llm/llm_program.h"
#include "host/families/llm/llm_barrier.h"
#include "host/runtime/context.h"
#include "tiny_llm.h"
#include "topologies.h"

namespace kb {
namespace {

// Two launches on tiny (1 GHz, 4 lanes, DMA 8 GB/s, HBM latency 10 ns): PE 0 runs exp over
// 16 values (16 cycles) and stores them to x (4 ns busy), done at 30 ns; then PE 1 loads w,
// resident, and x, and copies x from HBM to PE 0. With the gate on the first launch's end,
// x's load and copy wait for it and w's load does not; without it, x's load follows w's on
// PE 1's queue, and the copy's DMA read x's.
TEST(LlmBarrier, TheGateHoldsReadsOfAllButResidentTensors) {
  for (bool gated : {false, true}) {
    RuntimeContext ctx(unittest::tiny());
    const Tensor x = ctx.zeros({1, 16}, DType::f16, Placement{}, "x");
    const Tensor w = ctx.zeros({1, 16}, DType::f16, Placement{}, "w");
    ctx.set_resident(w);
    ctx.launch("first", LaunchGrid{1, 1, 1}, [&](PeProgram& p) {
      const SramBuf b = p.sram(32, DType::f16);
      p.store(b, x, Region{0, 1, 0, 16}, {p.vector_exp(b, 16)});
    });
    if (gated) ctx.set_gate(ctx.join(0));
    OpId lw = engine::kNoOp, lx = engine::kNoOp, cx = engine::kNoOp;
    SramBuf into;
    ctx.launch("second", LaunchGrid{1, 1, 2}, [&](PeProgram& p) {
      if (p.rank().pe == 0) into = p.sram(32, DType::f16);
      if (p.rank().pe != 1) return;
      lw = p.load(w, Region{0, 1, 0, 16}, p.sram(32, DType::f16));
      lx = p.load(x, Region{0, 1, 0, 16}, p.sram(32, DType::f16));
      cx = p.copy(x, Region{0, 1, 0, 16}, Rank{0, 0, 0}, into);
    });
    const RunReport r = ctx.run();
    ASSERT_EQ(r.status, engine::Status::ok) << r.message;
    EXPECT_EQ(r.result.timing[static_cast<std::size_t>(lw)].start, 0) << gated;
    EXPECT_EQ(r.result.timing[static_cast<std::size_t>(lx)].start, gated ? 30000 : 4000) << gated;
    EXPECT_GE(r.result.timing[static_cast<std::size_t>(cx)].start, gated ? 30000 : 8000) << gated;
    if (!gated) {
      EXPECT_LT(r.result.timing[static_cast<std::size_t>(cx)].start, 30000);
    }
  }
}

LlmConfig tiny_model(LlmPhase phase) { return unittest::tiny_llm(phase, 4, 512, 64); }

// Without a barrier a layer is never slower, and with only each PE's program order it is
// at least as fast as with the activations' order too.
TEST(LlmBarrier, ALayerWithoutBarriersIsNoSlower) {
  for (LlmPhase phase : {LlmPhase::decode, LlmPhase::prefill})
    for (std::int64_t kase = 1; kase <= 4; ++kase)
      for (std::int64_t level : {1, 2}) {
        LlmConfig c = tiny_model(phase);
        c.attention_case = kase, c.tp_level = level;
        const LlmBarrierCost b = llm_barrier_cost(c);
        // The gate holds: the activations' order costs time over PE order alone; and a
        // norm's weights load ahead of its kernel.
        EXPECT_LT(b.pe_order, b.tensor_order) << kase << " " << level;
        EXPECT_LT(b.tensor_order, b.with_barrier) << kase << " " << level;
        EXPECT_GT(b.pe_order, 0);
        std::printf("[ barrier ] tiny %s case %lld level %lld: with %lld ps, tensor order %lld (%.1f %%), PE order %lld (%.1f %%)\n",
                    phase == LlmPhase::decode ? "decode" : "prefill", static_cast<long long>(kase),
                    static_cast<long long>(level), static_cast<long long>(b.with_barrier),
                    static_cast<long long>(b.tensor_order), 100.0 * (1.0 - double(b.tensor_order) / double(b.with_barrier)),
                    static_cast<long long>(b.pe_order), 100.0 * (1.0 - double(b.pe_order) / double(b.with_barrier)));
      }
  LlmConfig c = tiny_model(LlmPhase::decode);
  c.tp = 2;
  EXPECT_THROW(llm_barrier_cost(c), InputError);
}

}  // namespace
}  // namespace kb
