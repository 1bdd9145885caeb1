// Data mode's shared parts (src/host/families/llm/llm_data.cpp and llm_data_moe.cpp): the
// values of a step, its shape on the tensor-parallel ranks, the weights' slices a rank holds,
// and the float64 pass's building blocks. Host only, values only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../../../device/models/llm/llm_model.h"
#include "../../common/error.h"
#include "../../runtime/numeric.h"

namespace kb {
namespace llm_data {

using Values = std::vector<float>;

// LLaMA-3.1's rope_theta: the rotary frequencies are theta^(-2i / head_dim) (values only).
constexpr double kRopeTheta = 500000.0;

// `n` values uniform in [lo - half, lo + half), as `type` holds them.
inline Values draw(std::int64_t n, std::uint64_t seed, std::uint64_t id, double lo, double half, DType type) {
  Values v(static_cast<std::size_t>(n));
  const std::uint64_t s = seed * UINT64_C(0x9E3779B97F4A7C15) + id;
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = round_to(type, static_cast<float>(lo + half * uniform_pm1(s, static_cast<std::uint64_t>(i))));
  return v;
}

// Columns [c0, c0 + n) of a row-major [rows, cols] block.
inline Values columns(const Values& a, std::int64_t rows, std::int64_t cols, std::int64_t c0, std::int64_t n) {
  Values out(static_cast<std::size_t>(rows * n));
  for (std::int64_t r = 0; r < rows; ++r)
    std::copy_n(a.begin() + r * cols + c0, n, out.begin() + r * n);
  return out;
}

// The step's shape: the model's, and a tensor-parallel rank's share (Megatron's split,
// docs/model.md section 13.2).
struct Dims {
  std::int64_t B, T, S, M;  // sequences, tokens of each (1 in decode), positions attended, rows
  std::int64_t H, I, heads, kvh, d, G, q, kv, V, layers;
  std::int64_t tp, hq, hkv, qr, kvr, Ir, Vr;  // a rank's query and KV heads, widths, MLP columns, vocabulary rows
  bool decode;
  DType wtype, kvtype;
  // A mixture-of-experts model's (E 0: a dense one): routed experts, a token's, an expert's
  // and the shared expert's intermediate sizes (a rank's share of the shared one: Sr), the
  // first dense layers, group-limited routing's groups, extra copies, and the router's
  // scores (sigmoid: DeepSeek-V3's, with a correction bias; else softmax).
  std::int64_t E = 0, K = 0, Im = 0, Sh = 0, Sr = 0, dense = 0, groups = 1, topk_groups = 1, redundant = 0;
  bool sigmoid = false;
  bool moe_layer(std::int64_t l) const { return E > 0 && l >= dense; }
  // Multi-head latent attention's (C 0: none): the query latent (0: none), the KV latent, a
  // head's rotated and other q/k values (d = dn + dr), its v values, and a cached token's
  // values (C + dr).
  std::int64_t Q = 0, C = 0, dr = 0, dn = 0, dv = 0, lat = 0;
  // Row r's position in its sequence.
  std::int64_t position(std::int64_t r) const { return decode ? S - 1 : r % T; }
  // The model's query head of rank r's i-th, and KV head of its j-th.
  std::int64_t q_head(std::int64_t r, std::int64_t i) const { return r * hq + i; }
  std::int64_t kv_head(std::int64_t r, std::int64_t j) const { return tp <= kvh ? r * hkv + j : r * kvh / tp; }
};

inline Dims dims_of(const LlmConfig& c) {
  Dims a{};
  a.decode = c.phase == static_cast<std::int64_t>(LlmPhase::decode);
  a.B = c.batch, a.T = a.decode ? 1 : c.prompt, a.S = a.decode ? c.context : c.prompt, a.M = a.B * a.T;
  a.H = c.hidden, a.I = c.intermediate, a.heads = c.heads, a.kvh = c.kv_heads, a.d = c.head_dim, a.G = a.heads / a.kvh;
  a.q = a.heads * a.d, a.kv = a.kvh * a.d, a.V = c.vocab, a.layers = c.layers;
  a.wtype = c.weight_bytes == 1 ? DType::fp8 : DType::f16;
  a.kvtype = c.kv_bytes == 1 ? DType::fp8 : DType::f16;
  a.tp = c.tp, a.hq = a.heads / a.tp, a.hkv = llm_rank_kv_heads(llm_shape_of(c), a.tp);
  a.qr = a.hq * a.d, a.kvr = a.hkv * a.d, a.Ir = ceil_div(a.I, a.tp), a.Vr = ceil_div(a.V, a.tp);
  a.E = c.experts, a.K = c.top_k, a.Im = c.moe_intermediate, a.Sh = c.shared_intermediate, a.Sr = ceil_div(a.Sh, a.tp);
  a.dense = c.experts > 0 ? c.dense_layers : 0, a.groups = c.expert_groups, a.topk_groups = c.topk_groups;
  a.redundant = c.redundant_experts, a.sigmoid = c.router_scores == 1;
  if (c.kv_lora > 0) a.Q = c.q_lora, a.C = c.kv_lora, a.dr = c.rope_dim, a.dn = a.d - a.dr, a.dv = c.v_head, a.lat = a.C + a.dr;
  return a;
}

// Every run of a kernel with values (each rank's, each copy's) takes the same time: the one
// config the timing run times.
inline void same_time(ps_t& took, ps_t latency, const std::string& name) {
  if (took >= 0 && latency != took)
    throw InternalError("kernel " + name + " took " + std::to_string(latency) + " ps on one run and " + std::to_string(took) +
                            " on another",
                        __FILE__, __LINE__);
  took = latency;
}

// RoPE's table for the kernel, [M, n]: per row, the n / 2 cosines, then as many sines, of
// its position times base^(-2i / n) (n: the rotated values of a head).
inline Values rope_table(const Dims& a, std::int64_t n) {
  Values t(static_cast<std::size_t>(a.M * n));
  const std::int64_t half = n / 2;
  for (std::int64_t r = 0; r < a.M; ++r)
    for (std::int64_t i = 0; i < half; ++i) {
      const double th = static_cast<double>(a.position(r)) * std::pow(kRopeTheta, -2.0 * static_cast<double>(i) / static_cast<double>(n));
      t[static_cast<std::size_t>(r * n + i)] = static_cast<float>(std::cos(th));
      t[static_cast<std::size_t>(r * n + half + i)] = static_cast<float>(std::sin(th));
    }
  return t;
}

// Rank r's n of `total` (from `base`): [r n, (r + 1) n), -1 past the end.
inline std::vector<std::int64_t> share(std::int64_t r, std::int64_t n, std::int64_t total, std::int64_t base) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = r * n; i < (r + 1) * n; ++i) out.push_back(i < total ? base + i : -1);
  return out;
}

// Rank r's share of a weight matrix [rows, cols]: the columns (or rows) `pick` names, in
// order, -1 for a zero one (the padding of an uneven split).
inline Values take_cols(const Values& w, std::int64_t rows, std::int64_t cols, const std::vector<std::int64_t>& pick) {
  Values out(static_cast<std::size_t>(rows) * pick.size(), 0.0f);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < pick.size(); ++j)
      if (pick[j] >= 0) out[static_cast<std::size_t>(i) * pick.size() + j] = w[static_cast<std::size_t>(i * cols + pick[j])];
  return out;
}
inline Values take_rows(const Values& w, std::int64_t cols, const std::vector<std::int64_t>& pick) {
  Values out(pick.size() * static_cast<std::size_t>(cols), 0.0f);
  for (std::size_t i = 0; i < pick.size(); ++i)
    if (pick[i] >= 0) std::copy_n(w.begin() + pick[i] * cols, cols, out.begin() + static_cast<std::ptrdiff_t>(i) * cols);
  return out;
}

using Dense = std::vector<double>;

// RoPE in float64, from its definition (not the kernels' helpers): pair (i, i + n/2) of the n
// values at x rotated by pos / base^(2i / n).
inline void rope_f64(double* x, std::int64_t n, std::int64_t pos) {
  const std::int64_t half = n / 2;
  for (std::int64_t i = 0; i < half; ++i) {
    const double th = static_cast<double>(pos) / std::pow(kRopeTheta, static_cast<double>(2 * i) / static_cast<double>(n));
    const double u = x[i], v = x[half + i];
    x[i] = u * std::cos(th) - v * std::sin(th), x[half + i] = v * std::cos(th) + u * std::sin(th);
  }
}

inline Dense rms_norm(const Dense& x, std::int64_t rows, std::int64_t cols, const Values& g) {
  Dense out(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (std::int64_t c = 0; c < cols; ++c) ss += x[static_cast<std::size_t>(r * cols + c)] * x[static_cast<std::size_t>(r * cols + c)];
    const double s = 1.0 / std::sqrt(ss / static_cast<double>(cols) + static_cast<double>(kLlmRmsNormEps));
    for (std::int64_t c = 0; c < cols; ++c)
      out[static_cast<std::size_t>(r * cols + c)] = x[static_cast<std::size_t>(r * cols + c)] * s * g[static_cast<std::size_t>(c)];
  }
  return out;
}

inline Dense matmul(const Dense& a, std::int64_t m, std::int64_t k, const Values& b, std::int64_t n) {
  Dense c(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const double x = a[static_cast<std::size_t>(i * k + p)];
      for (std::int64_t j = 0; j < n; ++j) c[static_cast<std::size_t>(i * n + j)] += x * b[static_cast<std::size_t>(p * n + j)];
    }
  return c;
}

}  // namespace llm_data
}  // namespace kb
