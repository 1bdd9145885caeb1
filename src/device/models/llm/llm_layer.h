// The layer program of a whole model under a mapping: the kernels one tensor-parallel rank
// runs for one layer of a step, in program order, and those after the last layer (final
// norm and LM head), each with its shape and the work it must do (docs/model.md section
// 13.3). Both engines run this program, and the bounds of section 13.2 are its sums.
#pragma once

#include <cstdint>

#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "llm_mapping.h"
#include "../vector.h"

namespace kb {

#define KB_LLM_KERNEL_KINDS(X) X(norm) X(gemm) X(rope) X(kv_append) X(attention) X(allreduce) X(residual) X(silu_mul)
#define KB_LLM_KIND_ITEM(name) name,
#define KB_LLM_KIND_NAME(name) #name,
enum class LlmKernelKind : std::int32_t { KB_LLM_KERNEL_KINDS(KB_LLM_KIND_ITEM) };
constexpr const char* kLlmKernelKindNames[] = {KB_LLM_KERNEL_KINDS(KB_LLM_KIND_NAME)};
#undef KB_LLM_KIND_ITEM
#undef KB_LLM_KIND_NAME

// One kernel on one rank. GEMMs: c[m, n] = a[m, k] b[k, n]. Vector kernels: `rows` x `cols`
// values streamed from HBM through the vector engine and back, `vector_cycles` on one PE.
// Attention: `rows` query heads of every sequence against `cols` KV heads over the
// positions. Allreduce: `bytes` per rank.
struct LlmKernel {
  LlmKernelKind kind;
  const char* name;
  std::int64_t m, k, n;
  std::int64_t rows, cols;
  std::int64_t vector_cycles;  // vector kernels: on one PE, every row
  std::int64_t bytes;          // allreduce: per rank; kv_append: written
  std::int64_t macs;           // multiply-accumulates
  std::int64_t hbm_read, hbm_write;  // bytes the kernel must move (its operands once)
};

constexpr int kLlmLayerKernels = 14, kLlmHeadKernels = 2;

namespace llm_detail {

KB_HD inline LlmKernel gemm(const char* name, std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t wb) {
  LlmKernel g{LlmKernelKind::gemm, name, m, k, n, 0, 0, 0, 0, m * k * n, k * n * wb + m * k * 2, m * n * 2};
  return g;
}
// A vector kernel over rows x cols activations (fp16), reading `inputs` such tensors and
// `extra` bytes (a norm's weights), writing one.
KB_HD inline LlmKernel vec(LlmKernelKind kind, const char* name, std::int64_t rows, std::int64_t cols, std::int64_t cycles,
                           std::int64_t inputs, std::int64_t extra) {
  LlmKernel v{kind, name, 0, 0, 0, rows, cols, cycles, 0, 0, inputs * rows * cols * 2 + extra, rows * cols * 2};
  return v;
}

}  // namespace llm_detail

// One pass of the vector engine over a tile: the op, and the values it covers.
struct LlmVecPass {
  VecOp op;
  std::int64_t rows, cols;  // row ops: rows x cols; elementwise: rows x cols values
};

// The passes over a tile of `t` rows, in order (their cycles are section 13.3's); returns
// how many (at most 5). kv_append has none: the tile is copied from HBM to HBM.
KB_HD inline int llm_vec_passes(std::int64_t kind, std::int64_t t, std::int64_t cols, LlmVecPass out[5]) {
  int n = 0;
  switch (static_cast<LlmKernelKind>(kind)) {
    case LlmKernelKind::norm:
      out[n++] = {VecOp::row_sumsq, t, cols};  // each row's sum of squares
      out[n++] = {VecOp::rsqrt, 1, t};         // 1/sqrt(mean + eps) of each row
      out[n++] = {VecOp::row_mul, t, cols};    // scale each row
      out[n++] = {VecOp::col_mul, t, cols};    // the norm's weights
      break;
    case LlmKernelKind::rope: out[n++] = {VecOp::rope, t, cols}; break;
    case LlmKernelKind::silu_mul:
      out[n++] = {VecOp::silu, t, cols};  // gate / (1 + e^-gate)
      out[n++] = {VecOp::mul, t, cols};   // x up
      break;
    case LlmKernelKind::residual: out[n++] = {VecOp::add, t, cols}; break;
    default: break;
  }
  return n;
}

// Vector cycles of kernel `kind` over `rows` x `cols` values on one PE: its passes'.
KB_HD inline std::int64_t llm_vec_cycles(LlmKernelKind kind, std::int64_t rows, std::int64_t cols, std::int64_t lanes) {
  LlmVecPass p[5];
  const int n = llm_vec_passes(static_cast<std::int64_t>(kind), rows, cols, p);
  std::int64_t cycles = 0;
  for (int i = 0; i < n; ++i) cycles += vector_cycles(p[i].op, p[i].rows, p[i].cols, lanes);
  return cycles;
}

// One layer of the step on one rank of stage 0's tp group, in program order; returns the
// count (the allreduces are left out at tp = 1).
KB_HD inline int llm_layer_program(const HwConfig& h, const LlmShape& m, const LlmRun& r, LlmKernel out[kLlmLayerKernels]) {
  using llm_detail::gemm;
  using llm_detail::vec;
  const std::int64_t t = r.tp, M = llm_tokens(r), H = m.hidden, L = h.vector_lanes, wb = r.weight_bytes;
  const std::int64_t q = llm_q_width(m) / t, kvh = llm_rank_kv_heads(m, t), kv = kvh * m.head_dim;
  const std::int64_t inter = ceil_div(m.intermediate, t);
  int n = 0;
  out[n++] = vec(LlmKernelKind::norm, "attn_norm", M, H, llm_vec_cycles(LlmKernelKind::norm, M, H, L), 1, H * wb);
  out[n++] = gemm("qkv", M, H, q + 2 * kv, wb);
  out[n++] = vec(LlmKernelKind::rope, "rope", M, q + kv, llm_vec_cycles(LlmKernelKind::rope, M, q + kv, L), 1,
                 M * m.head_dim * 2);  // and the table's cos/sin rows
  {
    // K and V into the cache; into an 8-bit cache through a conversion pass.
    const std::int64_t convert = r.kv_bytes == 1 ? vector_cycles(VecOp::copy, M, 2 * kv, L) : 0;
    LlmKernel a{LlmKernelKind::kv_append, "kv_append", 0, 0, 0, M, 2 * kv, convert, M * 2 * kv * r.kv_bytes, 0, 0,
                M * 2 * kv * r.kv_bytes};
    out[n++] = a;
  }
  {
    // Each sequence's query heads against its KV cache: a decoded token attends to the
    // context; prompt token i (from 1) to the i positions up to it (causal).
    const bool decode = r.phase == static_cast<std::int64_t>(LlmPhase::decode);
    const std::int64_t pairs = decode ? r.context : r.prompt * (r.prompt + 1) / 2;
    // A decode step reads every position from the cache (the new one appended just before,
    // at kv_bytes); a prefill reads the prompt's own K and V (fp16), as the QKV GEMM wrote them.
    const std::int64_t kv_read = decode ? r.batch * r.context * 2 * kv * r.kv_bytes : M * 2 * kv * 2;
    LlmKernel a{LlmKernelKind::attention, "attention", 0, 0, 0, llm_q_width(m) / t / m.head_dim, kvh, 0, 0,
                r.batch * 2 * q * pairs, kv_read + M * q * 2, M * q * 2};
    out[n++] = a;
  }
  out[n++] = gemm("o_proj", M, q, H, wb);
  if (t > 1) out[n++] = LlmKernel{LlmKernelKind::allreduce, "attn_allreduce", 0, 0, 0, M, H, 0, M * H * 2, 0, 0, 0};
  out[n++] = vec(LlmKernelKind::residual, "attn_residual", M, H, vector_cycles(VecOp::add, M, H, L), 2, 0);
  out[n++] = vec(LlmKernelKind::norm, "mlp_norm", M, H, llm_vec_cycles(LlmKernelKind::norm, M, H, L), 1, H * wb);
  out[n++] = gemm("gate_up", M, H, 2 * inter, wb);
  out[n++] = vec(LlmKernelKind::silu_mul, "silu_mul", M, inter, llm_vec_cycles(LlmKernelKind::silu_mul, M, inter, L), 2, 0);
  out[n++] = gemm("down", M, inter, H, wb);
  if (t > 1) out[n++] = LlmKernel{LlmKernelKind::allreduce, "mlp_allreduce", 0, 0, 0, M, H, 0, M * H * 2, 0, 0, 0};
  out[n++] = vec(LlmKernelKind::residual, "mlp_residual", M, H, vector_cycles(VecOp::add, M, H, L), 2, 0);
  return n;
}

// After the last layer, on one rank of the last stage: the final norm of each sequence's
// last token and the LM head over the rank's vocabulary rows (sampling takes the logits
// where they are).
KB_HD inline int llm_head_program(const HwConfig& h, const LlmShape& m, const LlmRun& r, LlmKernel out[kLlmHeadKernels]) {
  const std::int64_t B = r.batch, H = m.hidden;
  out[0] = llm_detail::vec(LlmKernelKind::norm, "final_norm", B, H, llm_vec_cycles(LlmKernelKind::norm, B, H, h.vector_lanes), 1, H * r.weight_bytes);
  out[1] = llm_detail::gemm("lm_head", B, H, ceil_div(m.vocab, r.tp), r.weight_bytes);
  return 2;
}

}  // namespace kb
