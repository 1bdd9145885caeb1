// The layer program of a whole model under a mapping: the kernels one tensor-parallel rank
// runs for one layer of a step, in program order, and those after the last layer (final
// norm and LM head), each with its shape and the work it must do (docs/model.md section
// 13.3). Both engines run this program, and the bounds of section 13.2 are its sums.
#pragma once

#include <cstdint>

#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "llm_mapping.h"
#include "llm_moe.h"
#include "../vector.h"

namespace kb {

#define KB_LLM_KERNEL_KINDS(X) X(norm) X(gemm) X(rope) X(kv_append) X(attention) X(allreduce) X(residual) X(silu_mul) X(l2_norm)
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
  // A MoE layer's: the kernel runs `repeat` times in turn (a rank's routed experts, each
  // alike), and its role, when it has one (kLlmRole*), sets its kind of time in the step.
  std::int64_t repeat = 1;
  std::int32_t role = 0;
};

// Roles of MoE kernels: routed experts' GEMMs, and the dispatch and combine of their tokens.
constexpr std::int32_t kLlmRoleNone = 0, kLlmRoleExpert = 1, kLlmRoleDispatch = 2, kLlmRoleCombine = 3;

constexpr int kLlmLayerKernels = 26, kLlmHeadKernels = 2;

namespace llm_detail {

KB_HD inline LlmKernel gemm(const char* name, std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t wb) {
  LlmKernel g{LlmKernelKind::gemm, name, m, k, n, 0, 0, 0, 0, m * k * n, k * n * wb + m * k * 2, m * n * 2, 1, kLlmRoleNone};
  return g;
}
// A collective of the tensor-parallel group: `bytes` per rank.
KB_HD inline LlmKernel collective(const char* name, std::int64_t rows, std::int64_t cols, std::int64_t bytes, std::int32_t role) {
  LlmKernel a{LlmKernelKind::allreduce, name, 0, 0, 0, rows, cols, 0, bytes, 0, 0, 0, 1, role};
  return a;
}
KB_HD inline LlmKernel times(LlmKernel k, std::int64_t repeat, std::int32_t role) {
  k.repeat = repeat, k.role = role;
  return k;
}
// A vector kernel over rows x cols activations (fp16), reading `inputs` such tensors and
// `extra` bytes (a norm's weights), writing one.
KB_HD inline LlmKernel vec(LlmKernelKind kind, const char* name, std::int64_t rows, std::int64_t cols, std::int64_t cycles,
                           std::int64_t inputs, std::int64_t extra) {
  LlmKernel v{kind, name, 0, 0, 0, rows, cols, cycles, 0, 0, inputs * rows * cols * 2 + extra, rows * cols * 2, 1, kLlmRoleNone};
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
    case LlmKernelKind::l2_norm:  // Llama 4's q/k norm: RMSNorm's passes, no weights
      out[n++] = {VecOp::row_sumsq, t, cols};
      out[n++] = {VecOp::rsqrt, 1, t};
      out[n++] = {VecOp::row_mul, t, cols};
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

// Multi-head latent attention on one rank (docs/model.md section 13.12), its heads split
// over the tp ranks (or whole, data-parallel): the down-projections of the query latent (when
// q_lora > 0), the KV latent and the rotated k in one GEMM, replicated on every rank; their
// norms; the query heads' up-projection; RoPE over the rotated parts of the rank's queries
// and the shared k; the latent and rotated k into the cache. A decode step runs absorbed:
// each head's q_nope through its slice of kv_b's k half (q_absorb, one GEMM a head), the
// attention as one KV head of kv_lora + rope_dim values whose V is the latent, and each
// head's latent output through its slice of kv_b's v half (v_absorb). A prefill runs
// expanded: kv_b over the latents gives each head's k_nope and v, and the attention has
// heads of head_dim (q, k) and v_head (v). Then O, its allreduce and the residual.
KB_HD inline int llm_mla_program(const HwConfig& h, const LlmShape& m, const LlmRun& r, LlmKernel* out) {
  using llm_detail::gemm;
  using llm_detail::times;
  using llm_detail::vec;
  const std::int64_t t = r.attention_dp ? 1 : r.tp, M = llm_tokens(r), H = m.hidden, L = h.vector_lanes, wb = r.weight_bytes;
  const std::int64_t hh = m.heads / t, d = m.head_dim, dr = m.rope_dim, dn = d - dr, dv = m.v_head, C = m.kv_lora;
  const std::int64_t lat = llm_latent_width(m), Q = m.q_lora;
  int n = 0;
  out[n++] = vec(LlmKernelKind::norm, "attn_norm", M, H, llm_vec_cycles(LlmKernelKind::norm, M, H, L), 1, H * wb);
  out[n++] = gemm("q_kv_a", M, H, (Q > 0 ? Q : hh * d) + lat, wb);
  if (Q > 0) out[n++] = vec(LlmKernelKind::norm, "q_a_norm", M, Q, llm_vec_cycles(LlmKernelKind::norm, M, Q, L), 1, Q * wb);
  out[n++] = vec(LlmKernelKind::norm, "kv_a_norm", M, C, llm_vec_cycles(LlmKernelKind::norm, M, C, L), 1, C * wb);
  if (Q > 0) out[n++] = gemm("q_b", M, Q, hh * d, wb);
  out[n++] = vec(LlmKernelKind::rope, "rope", M, (hh + 1) * dr, llm_vec_cycles(LlmKernelKind::rope, M, (hh + 1) * dr, L), 1, M * dr * 2);
  {
    const std::int64_t convert = r.kv_bytes == 1 ? vector_cycles(VecOp::copy, M, lat, L) : 0;
    LlmKernel a{LlmKernelKind::kv_append, "kv_append", 0, 0, 0, M, lat, convert, M * lat * r.kv_bytes, 0, 0,
                M * lat * r.kv_bytes, 1, kLlmRoleNone};
    out[n++] = a;
  }
  if (r.phase == static_cast<std::int64_t>(LlmPhase::decode)) {
    out[n++] = times(gemm("q_absorb", M, dn, C, wb), hh, kLlmRoleNone);
    LlmKernel a{LlmKernelKind::attention, "attention", 0, 0, 0, hh, 1, 0, 0, r.batch * hh * (lat + C) * r.context,
                r.batch * r.context * lat * r.kv_bytes + M * hh * lat * 2, M * hh * C * 2, 1, kLlmRoleNone};
    out[n++] = a;
    out[n++] = times(gemm("v_absorb", M, C, dv, wb), hh, kLlmRoleNone);
  } else {
    out[n++] = gemm("kv_b", M, C, hh * (dn + dv), wb);
    const std::int64_t pairs = r.prompt * (r.prompt + 1) / 2;
    LlmKernel a{LlmKernelKind::attention, "attention", 0, 0, 0, hh, hh, 0, 0, r.batch * hh * (d + dv) * pairs,
                M * hh * (2 * d + dv) * 2, M * hh * dv * 2, 1, kLlmRoleNone};
    out[n++] = a;
  }
  out[n++] = gemm("o_proj", M, hh * dv, H, wb);
  if (t > 1) out[n++] = llm_detail::collective("attn_allreduce", M, H, M * H * 2, kLlmRoleNone);
  out[n++] = vec(LlmKernelKind::residual, "attn_residual", M, H, vector_cycles(VecOp::add, M, H, L), 2, 0);
  return n;
}

// The attention half of one layer on one rank, in program order (llm_layer_program): a
// layer with RoPE, or (`nope`) one of Llama 4's without (no RoPE, no q/k norm, every
// position; section 13.14). An attention kernel's `k` is its chunk of positions (0: all).
KB_HD inline int llm_attention_program(const HwConfig& h, const LlmShape& m, const LlmRun& r, LlmKernel* out, bool nope = false) {
  using llm_detail::gemm;
  using llm_detail::vec;
  if (llm_mla(m)) return llm_mla_program(h, m, r, out);
  // Attention tensor-parallel over the group, or data-parallel (each rank its own sequences,
  // every attention weight: r.batch is then the rank's).
  const std::int64_t t = r.attention_dp ? 1 : r.tp, M = llm_tokens(r), H = m.hidden, L = h.vector_lanes, wb = r.weight_bytes;
  const std::int64_t q = llm_q_width(m) / t, kvh = llm_rank_kv_heads(m, t), kv = kvh * m.head_dim;
  const std::int64_t window = nope ? 0 : m.attn_chunk;
  int n = 0;
  out[n++] = vec(LlmKernelKind::norm, "attn_norm", M, H, llm_vec_cycles(LlmKernelKind::norm, M, H, L), 1, H * wb);
  out[n++] = gemm("qkv", M, H, q + 2 * kv, wb);
  if (m.qk_norm && !nope) {  // a norm over each head's q, and each head's k: RMSNorm (Qwen3) or L2 (Llama 4)
    const std::int64_t qr = M * (q / m.head_dim), kr = M * kvh, d = m.head_dim;
    const LlmKernelKind kind = m.qk_norm == 2 ? LlmKernelKind::l2_norm : LlmKernelKind::norm;
    const std::int64_t w = m.qk_norm == 2 ? 0 : d * wb;
    out[n++] = vec(kind, "q_norm", qr, d, llm_vec_cycles(kind, qr, d, L), 1, w);
    out[n++] = vec(kind, "k_norm", kr, d, llm_vec_cycles(kind, kr, d, L), 1, w);
  }
  if (!nope)
    out[n++] = vec(LlmKernelKind::rope, "rope", M, q + kv, llm_vec_cycles(LlmKernelKind::rope, M, q + kv, L), 1,
                   M * m.head_dim * 2);  // and the table's cos/sin rows
  {
    // K and V into the cache; into an 8-bit cache through a conversion pass.
    const std::int64_t convert = r.kv_bytes == 1 ? vector_cycles(VecOp::copy, M, 2 * kv, L) : 0;
    LlmKernel a{LlmKernelKind::kv_append, "kv_append", 0, 0, 0, M, 2 * kv, convert, M * 2 * kv * r.kv_bytes, 0, 0,
                M * 2 * kv * r.kv_bytes, 1, kLlmRoleNone};
    out[n++] = a;
  }
  {
    // Each sequence's query heads against its KV cache: a decoded token attends to the
    // context; prompt token i (from 1) to the i positions up to it (causal); under chunked
    // attention, only to the positions of its own chunk.
    const bool decode = r.phase == static_cast<std::int64_t>(LlmPhase::decode);
    const std::int64_t seen = llm_window_positions(r.context, window);
    const std::int64_t pairs = decode ? seen : llm_window_pairs(r.prompt, window) + r.prompt * r.prior;
    // A decode step reads the positions it attends to from the cache (the new one appended
    // just before, at kv_bytes); a prefill reads the prompt's own K and V (fp16), as the QKV
    // GEMM wrote them, and the positions cached before it (chunked prefill) from the cache.
    const std::int64_t kv_read = decode ? r.batch * seen * 2 * kv * r.kv_bytes : M * 2 * kv * 2 + r.batch * r.prior * 2 * kv * r.kv_bytes;
    LlmKernel a{LlmKernelKind::attention, "attention", 0, window, 0, llm_q_width(m) / t / m.head_dim, kvh, 0, 0,
                r.batch * 2 * q * pairs, kv_read + M * q * 2, M * q * 2, 1, kLlmRoleNone};
    out[n++] = a;
  }
  out[n++] = gemm("o_proj", M, q, H, wb);
  if (t > 1) out[n++] = llm_detail::collective("attn_allreduce", M, H, M * H * 2, kLlmRoleNone);
  out[n++] = vec(LlmKernelKind::residual, "attn_residual", M, H, vector_cycles(VecOp::add, M, H, L), 2, 0);
  return n;
}

// The MoE half of one layer on one rank (docs/model.md section 13.11): the router, the
// routed experts of the busiest rank, each a GEMM pair of its share of the tokens in turn,
// the shared expert, and, over two or more ranks, the tokens' dispatch to their experts and
// the outputs' combine (all-to-alls under data-parallel attention; under tensor-parallel
// attention every rank holds every token, and the combine is an allreduce).
KB_HD inline int llm_moe_program(const HwConfig& h, const LlmShape& m, const LlmRun& r, LlmKernel* out) {
  using llm_detail::gemm;
  using llm_detail::times;
  using llm_detail::vec;
  const std::int64_t t = r.tp, M = llm_tokens(r), H = m.hidden, L = h.vector_lanes, wb = r.weight_bytes, I = m.moe_intermediate;
  const MoeLoad load = llm_moe_load(m, r);
  const std::int64_t g = load.rank_copies, T = load.rank_tokens, each = g > 0 ? ceil_div(T, g) : 0;
  const std::int64_t shared = r.attention_dp ? m.shared_intermediate : ceil_div(m.shared_intermediate, t);
  int n = 0;
  out[n++] = vec(LlmKernelKind::norm, "mlp_norm", M, H, llm_vec_cycles(LlmKernelKind::norm, M, H, L), 1, H * wb);
  out[n++] = gemm("router", M, H, m.experts, wb);
  const bool a2a = t > 1 && r.attention_dp;
  // The busiest rank receives T (token, expert) pairs of H values.
  if (a2a) out[n++] = llm_detail::collective("moe_dispatch", T, H, T * H * r.dispatch_bytes, kLlmRoleDispatch);
  if (g > 0) {
    out[n++] = times(gemm("expert_gate_up", each, H, 2 * I, wb), g, kLlmRoleExpert);
    out[n++] = times(vec(LlmKernelKind::silu_mul, "expert_silu_mul", each, I, llm_vec_cycles(LlmKernelKind::silu_mul, each, I, L), 2, 0),
                     g, kLlmRoleExpert);
    out[n++] = times(gemm("expert_down", each, I, H, wb), g, kLlmRoleExpert);
  }
  if (shared > 0) {
    out[n++] = gemm("shared_gate_up", M, H, 2 * shared, wb);
    out[n++] = vec(LlmKernelKind::silu_mul, "shared_silu_mul", M, shared, llm_vec_cycles(LlmKernelKind::silu_mul, M, shared, L), 2, 0);
    out[n++] = gemm("shared_down", M, shared, H, wb);
  }
  // Each token's routed outputs scaled by its routing weights and added (with the shared
  // expert's): on the busiest rank before an allreduce, on each rank after an all-to-all.
  const std::int64_t sum_rows = (a2a ? M * m.top_k : T) + (shared > 0 ? M : 0);
  if (!a2a) out[n++] = vec(LlmKernelKind::residual, "moe_sum", sum_rows, H, vector_cycles(VecOp::add, sum_rows, H, L), 2, 0);
  if (a2a) out[n++] = llm_detail::collective("moe_combine", T, H, T * H * 2, kLlmRoleCombine);
  else if (t > 1) out[n++] = llm_detail::collective("moe_allreduce", M, H, M * H * 2, kLlmRoleCombine);
  if (a2a) out[n++] = vec(LlmKernelKind::residual, "moe_sum", sum_rows, H, vector_cycles(VecOp::add, sum_rows, H, L), 2, 0);
  out[n++] = vec(LlmKernelKind::residual, "mlp_residual", M, H, vector_cycles(VecOp::add, M, H, L), 2, 0);
  return n;
}

// One layer of the step on one rank of stage 0's tp group, in program order; returns the
// count (the allreduces are left out at tp = 1). A layer of the first kind, or of the second
// (`alt`, llm_alt_layers): a MoE model's first dense layers (under data-parallel attention,
// each rank's own tokens through the whole dense MLP), or Llama 4's layers without RoPE.
KB_HD inline int llm_layer_program(const HwConfig& h, const LlmShape& m, const LlmRun& r, LlmKernel out[kLlmLayerKernels],
                                   bool alt = false) {
  using llm_detail::gemm;
  using llm_detail::vec;
  const bool dense = alt && m.experts > 0 && m.dense_layers > 0;
  int n = llm_attention_program(h, m, r, out, alt && !dense && m.nope_every > 0);
  if (m.experts > 0 && !dense) return n + llm_moe_program(h, m, r, out + n);
  const std::int64_t t = r.attention_dp ? 1 : r.tp, M = llm_tokens(r), H = m.hidden, L = h.vector_lanes, wb = r.weight_bytes;
  const std::int64_t inter = ceil_div(m.intermediate, t);
  out[n++] = vec(LlmKernelKind::norm, "mlp_norm", M, H, llm_vec_cycles(LlmKernelKind::norm, M, H, L), 1, H * wb);
  out[n++] = gemm("gate_up", M, H, 2 * inter, wb);
  out[n++] = vec(LlmKernelKind::silu_mul, "silu_mul", M, inter, llm_vec_cycles(LlmKernelKind::silu_mul, M, inter, L), 2, 0);
  out[n++] = gemm("down", M, inter, H, wb);
  if (t > 1) out[n++] = llm_detail::collective("mlp_allreduce", M, H, M * H * 2, kLlmRoleNone);
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
