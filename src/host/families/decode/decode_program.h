// GQA decode attention on the reference runtime: flash decoding of one token against a KV
// cache placed in HBM by one of four sharding cases (src/device/models/decode/decode_model.h), each PE
// working through its shard in chunks and the partial (m, l, O) merged up the trees of the
// collectives' reduce to the centre root.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../../device/models/decode/decode_model.h"
#include "../../runtime/context.h"
#include "../../kernels/kernel_values.h"

namespace kb {

struct DecodeRun {
  RunReport report;
  // Data mode: the inputs (q [units x G, d], K [batch, h_kv, d, S], V [batch, h_kv, S, d])
  // and the answer as written to HBM, [units x G, d]; with allreduce, one per cube.
  std::vector<float> q, k, v;
  std::vector<std::vector<float>> outputs;
  std::int64_t readers = 0;  // PEs that loaded from HBM
};

// Runs the config (decode_check must accept it); data mode fills q, K and V with random
// values from `seed`, or with `inputs` (q, K, V in the layouts above) when given.
DecodeRun run_decode(const DecodeConfig& c, bool data, std::uint64_t seed = 1, const std::string* trace_path = nullptr,
                     const std::vector<std::vector<float>>* inputs = nullptr);

// softmax(q K^T / sqrt(d)) V in float64, [units x G, d], from a run's inputs.
std::vector<double> decode_dense_reference(const DecodeConfig& c, const DecodeRun& run);

// Merges flash partials (m2, l2, O2) of `rows` rows into (m1, l1, O1) with scratch t:
// t = m1; t = max(t, m2); m1 = exp(m1 - t); m2 = exp(m2 - t); l1 = l1 m1 + l2 m2;
// O1 = O1 m1 + O2 m2; m1 = t (dec_detail::merge_ps times it). Returns the last op.
OpId flash_merge(PeProgram& p, SramBuf m1, SramBuf l1, SramBuf o1, SramBuf m2, SramBuf l2, SramBuf o2, SramBuf t,
                 std::int64_t rows, std::int64_t d, Deps deps);

// Flash decoding's chunk loop as ops, shared by the decode kernel and prefill's causal
// attention (src/host/families/llm/llm_program.cpp), so both run what dec_detail::step times.
// The accumulators (m, l, O and a scratch row t) and a chunk's partials (mc, lc, oc).
struct FlashBufs {
  SramBuf m, l, o, t, mc, lc, oc;
};
// A causal block (prefill's diagonal) masks, in data mode, the scores of positions (from
// pos0) past each row's token (from first_token, `heads` rows a token).
struct FlashCausal {
  bool on = false;
  std::int64_t first_token = 0, heads = 1, pos0 = 0;
};
struct FlashChunks {
  OpId mm1_of[2] = {engine::kNoOp, engine::kNoOp}, mm2_of[2] = {engine::kNoOp, engine::kNoOp};
  OpId rs_prev = engine::kNoOp, last_mm = engine::kNoOp, last_vec = engine::kNoOp;
  // What chunk `slot`'s K and V loads must follow (their buffers free).
  // A value head of dv values (0: d), and V the first dv rows of K's buffer (shared: K's buffer
  // is free once O is done).
  std::int64_t dv = 0;
  bool shared = false;
  OpId k_free(int slot) const { return shared ? mm2_of[slot] : mm1_of[slot]; }
  OpId v_free(int slot) const { return mm2_of[slot]; }
  // One chunk of n positions whose K and V loads (into k and v) are ldk and ldv, for `rows`
  // query rows q (loaded by lq): S = q K^T into s, the softmax passes, O = P V, and, after
  // the first chunk, the merge of the chunk's partials into the accumulators.
  void step(PeProgram& p, int slot, bool first, OpId lq, OpId ldk, OpId ldv, SramBuf q, SramBuf k, SramBuf v, SramBuf s,
            std::int64_t rows, std::int64_t n, std::int64_t d, float scale, const FlashBufs& b, FlashCausal mask = FlashCausal());
};

// The kernel of `c` (allreduce 0) built into `ctx`, a context of `c`'s machine that holds
// other kernels too: its tensors and its launch, its symmetric buffers returned (no run).
void decode_compose(RuntimeContext& ctx, const DecodeConfig& c);

// The ops run_decode builds for `c`, at most (found without building them).
std::int64_t decode_reference_ops(const DecodeConfig& c);
// The family's reference: the figures of run_decode, as the model reports them.
// With `data`: in data mode on data->in (q, K, V as run_decode lays them out), the answer
// [units x G, d] left in data->out (c.allreduce must be 0).
DecodeResult decode_reference(const DecodeConfig& c, const std::string* trace_path, KernelValues* data = nullptr);

// The one-line reason a status names, for `eval decode`.
std::string decode_status_message(std::int32_t status, const DecodeConfig& c);
// The type the KV cache is held in: fp16, or fp8 (e4m3) at one byte a value.
inline DType decode_kv_dtype(const DecodeConfig& c) { return dec_kv_bytes(c) == 1 ? DType::fp8 : DType::f16; }

// The original study's panel name and kind of a case (1..4).
const char* decode_panel(std::int64_t decode_case);
const char* decode_kind(std::int64_t decode_case);
const char* decode_case_name(std::int64_t decode_case);  // "cube-SP / PE-TP", ...

}  // namespace kb
