#include "llm_data.h"

#include <algorithm>
#include <cmath>

#include "../common/error.h"
#include "../runtime/numeric.h"
#include "decode_program.h"
#include "gemm_program.h"
#include "llm_program.h"

namespace kb {
namespace {

// LLaMA-3.1's rope_theta: the rotary frequencies are theta^(-2i / head_dim) (values only).
constexpr double kRopeTheta = 500000.0;
// Data mode computes every value on the host: a step of at most this many multiply-accumulates,
// and at most this many values of weights and KV cache held.
constexpr std::int64_t kDataMaxMacs = INT64_C(1) << 32, kDataMaxValues = INT64_C(1) << 26;

using Values = std::vector<float>;

// `n` values uniform in [lo - half, lo + half), as `type` holds them.
Values draw(std::int64_t n, std::uint64_t seed, std::uint64_t id, double lo, double half, DType type) {
  Values v(static_cast<std::size_t>(n));
  const std::uint64_t s = seed * UINT64_C(0x9E3779B97F4A7C15) + id;
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = round_to(type, static_cast<float>(lo + half * uniform_pm1(s, static_cast<std::uint64_t>(i))));
  return v;
}

// Columns [c0, c0 + n) of a row-major [rows, cols] block.
Values columns(const Values& a, std::int64_t rows, std::int64_t cols, std::int64_t c0, std::int64_t n) {
  Values out(static_cast<std::size_t>(rows * n));
  for (std::int64_t r = 0; r < rows; ++r)
    std::copy_n(a.begin() + r * cols + c0, n, out.begin() + r * n);
  return out;
}

// The model's values: weights of every layer (B of each GEMM is [in, out]), the norms' weights,
// the step's input activations and, for decode, the KV cache's earlier positions.
struct Weights {
  std::vector<Values> attn_norm, qkv, o, mlp_norm, gate_up, down, k_cache, v_cache;  // per layer
  Values final_norm, lm_head, x;
};

// The step's shape, as the layer program sees it on its one rank.
struct Dims {
  std::int64_t B, T, S, M;  // sequences, tokens of each (1 in decode), positions attended, rows
  std::int64_t H, I, heads, kvh, d, G, q, kv, V, layers;
  bool decode;
  DType wtype, kvtype;
  // Row r's position in its sequence.
  std::int64_t position(std::int64_t r) const { return decode ? S - 1 : r % T; }
};

Dims dims_of(const LlmConfig& c) {
  Dims a{};
  a.decode = c.phase == static_cast<std::int64_t>(LlmPhase::decode);
  a.B = c.batch, a.T = a.decode ? 1 : c.prompt, a.S = a.decode ? c.context : c.prompt, a.M = a.B * a.T;
  a.H = c.hidden, a.I = c.intermediate, a.heads = c.heads, a.kvh = c.kv_heads, a.d = c.head_dim, a.G = a.heads / a.kvh;
  a.q = a.heads * a.d, a.kv = a.kvh * a.d, a.V = c.vocab, a.layers = c.layers;
  a.wtype = c.weight_bytes == 1 ? DType::fp8 : DType::f16;
  a.kvtype = c.kv_bytes == 1 ? DType::fp8 : DType::f16;
  return a;
}

Weights draw_weights(const Dims& a, std::uint64_t seed) {
  Weights w;
  std::uint64_t id = 0;
  // Weights scaled by 1/sqrt(fan-in), so that activations keep their size through the layers.
  auto matrix = [&](std::int64_t in, std::int64_t out) {
    return draw(in * out, seed, ++id, 0.0, 1.0 / std::sqrt(static_cast<double>(in)), a.wtype);
  };
  auto norm = [&] { return draw(a.H, seed, ++id, 1.0, 0.25, a.wtype); };
  for (std::int64_t l = 0; l < a.layers; ++l) {
    w.attn_norm.push_back(norm());
    w.qkv.push_back(matrix(a.H, a.q + 2 * a.kv));
    w.o.push_back(matrix(a.q, a.H));
    w.mlp_norm.push_back(norm());
    w.gate_up.push_back(matrix(a.H, 2 * a.I));
    w.down.push_back(matrix(a.I, a.H));
    const std::int64_t earlier = a.decode ? a.B * a.kvh * (a.S - 1) * a.d : 0;  // [B, kvh, S - 1, d]
    w.k_cache.push_back(draw(earlier, seed, ++id, 0.0, 1.0, a.kvtype));
    w.v_cache.push_back(draw(earlier, seed, ++id, 0.0, 1.0, a.kvtype));
  }
  w.final_norm = norm();
  w.lm_head = matrix(a.H, a.V);
  w.x = draw(a.M * a.H, seed, ++id, 0.0, 1.0, DType::f16);
  return w;
}

double rope_angle(const Dims& a, std::int64_t pos, std::int64_t i) {
  return static_cast<double>(pos) * std::pow(kRopeTheta, -2.0 * static_cast<double>(i) / static_cast<double>(a.d));
}

// Runs each kernel of the layer program in data mode and carries the values between them.
class DataPass {
 public:
  DataPass(const Dims& a, const Weights& w, LlmDataReport& rep) : a_(a), w_(w), rep_(rep), x_(w.x) {}

  void start_layer(std::int64_t l) {
    layer_ = l;
    ran_ = 0;
  }
  ps_t ran() const { return ran_; }
  const Values& logits() const { return logits_; }
  const Values& hidden() const { return x_; }  // the residual stream after the last layer

  void gemm(const GemmConfig& g, const LlmKernel& k, bool layer) {
    if (!runs(layer)) return;
    const std::string name = k.name;
    const std::size_t l = static_cast<std::size_t>(layer_);
    KernelValues v;
    if (name == "qkv") v.in = {h_, w_.qkv[l]};
    else if (name == "o_proj") v.in = {att_, w_.o[l]};
    else if (name == "gate_up") v.in = {h_, w_.gate_up[l]};
    else if (name == "down") v.in = {act_, w_.down[l]};
    else if (name == "lm_head") v.in = {h_, w_.lm_head};  // on the final norm's rows
    else unknown(name);
    add(layer, gemm_reference(g, nullptr, &v).latency_ps);
    if (name == "qkv") qkv_ = std::move(v.out);
    else if (name == "o_proj" || name == "down") y_ = std::move(v.out);
    else if (name == "gate_up") gate_up_ = std::move(v.out);
    else logits_ = std::move(v.out);
  }

  // Decode: the sequences of one wave against the cache, its last position the new one.
  void attention(const DecodeConfig& dc, const LlmKernel&, bool layer) {
    if (!runs(layer)) return;
    const std::int64_t n = dc.batch, b0 = wave_done_, d = a_.d, S = a_.S, G = a_.G, kvh = a_.kvh;
    const Values& kc = w_.k_cache[static_cast<std::size_t>(layer_)];
    const Values& vc = w_.v_cache[static_cast<std::size_t>(layer_)];
    Values q(static_cast<std::size_t>(n * kvh * G * d)), K(static_cast<std::size_t>(n * kvh * d * S)), V(K.size());
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t h = 0; h < kvh; ++h) {
        const std::int64_t u = b * kvh + h, row = b0 + b;
        for (std::int64_t g = 0; g < G; ++g)
          for (std::int64_t e = 0; e < d; ++e)
            q[static_cast<std::size_t>((u * G + g) * d + e)] = qk_[static_cast<std::size_t>(row * (a_.q + a_.kv) + (h * G + g) * d + e)];
        for (std::int64_t s = 0; s < S; ++s)
          for (std::int64_t e = 0; e < d; ++e) {
            const bool fresh = s == S - 1;
            const std::size_t old = static_cast<std::size_t>(((row * kvh + h) * (S - 1) + s) * d + e);
            const std::size_t now = static_cast<std::size_t>(row * 2 * a_.kv + h * d + e);
            K[static_cast<std::size_t>((u * d + e) * S + s)] = fresh ? kv_new_[now] : kc[old];
            V[static_cast<std::size_t>((u * S + s) * d + e)] = fresh ? kv_new_[now + static_cast<std::size_t>(a_.kv)] : vc[old];
          }
      }
    KernelValues v;
    v.in = {std::move(q), std::move(K), std::move(V)};
    add(layer, decode_reference(dc, nullptr, &v).latency_ps);
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t j = 0; j < a_.heads; ++j)  // query head j = h G + g is row u G + g
        std::copy_n(v.out.begin() + ((b * kvh + j / G) * G + j % G) * d, d, att_.begin() + ((b0 + b) * a_.q + j * d));
    wave_done_ += n;
  }

  // Prefill: causal attention of every prompt over its own fresh keys and values.
  void attention(const LlmAttnConfig& x, const LlmKernel&, bool layer) {
    if (!runs(layer)) return;
    const std::int64_t T = a_.T, d = a_.d, G = a_.G, kvh = a_.kvh, KV = a_.B * kvh, w = a_.q + 2 * a_.kv;
    Values q(static_cast<std::size_t>(KV * T * G * d)), K(static_cast<std::size_t>(KV * d * T)), V(K.size());
    for (std::int64_t b = 0; b < a_.B; ++b)
      for (std::int64_t h = 0; h < kvh; ++h) {
        const std::int64_t u = b * kvh + h;
        for (std::int64_t t = 0; t < T; ++t) {
          const std::int64_t row = b * T + t;
          for (std::int64_t e = 0; e < d; ++e) {
            for (std::int64_t g = 0; g < G; ++g)
              q[static_cast<std::size_t>(((u * T + t) * G + g) * d + e)] =
                  qk_[static_cast<std::size_t>(row * (a_.q + a_.kv) + (h * G + g) * d + e)];
            K[static_cast<std::size_t>((u * d + e) * T + t)] = qk_[static_cast<std::size_t>(row * (a_.q + a_.kv) + a_.q + h * d + e)];
            V[static_cast<std::size_t>((u * T + t) * d + e)] = qkv_[static_cast<std::size_t>(row * w + a_.q + a_.kv + h * d + e)];
          }
        }
      }
    KernelValues v;
    v.in = {std::move(q), std::move(K), std::move(V)};
    add(layer, llm_attn_reference(x, nullptr, &v).latency_ps);
    for (std::int64_t b = 0; b < a_.B; ++b)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t j = 0; j < a_.heads; ++j)
          std::copy_n(v.out.begin() + (((b * kvh + j / G) * T + t) * G + j % G) * d, d, att_.begin() + ((b * T + t) * a_.q + j * d));
  }

  void allreduce(const AllreduceConfig&, const LlmKernel&, bool) {
    throw InternalError("data mode runs one rank: no allreduce", __FILE__, __LINE__);
  }

  void vector(const LlmVecConfig& x, const LlmKernel& k, bool layer) {
    if (!runs(layer)) return;
    const std::string name = k.name;
    const std::size_t l = static_cast<std::size_t>(layer_);
    KernelValues v;
    if (name == "attn_norm") v.in = {x_, w_.attn_norm[l]};
    else if (name == "mlp_norm") v.in = {x_, w_.mlp_norm[l]};
    else if (name == "final_norm") v.in = {last_rows(), w_.final_norm};
    else if (name == "rope") v.in = {columns(qkv_, a_.M, a_.q + 2 * a_.kv, 0, a_.q + a_.kv), rope_table()};
    else if (name == "kv_append") v.in = {kv_rows()};
    else if (name == "silu_mul") v.in = {columns(gate_up_, a_.M, 2 * a_.I, 0, a_.I), columns(gate_up_, a_.M, 2 * a_.I, a_.I, a_.I)};
    else if (name == "attn_residual" || name == "mlp_residual") v.in = {x_, y_};
    else unknown(name);
    add(layer, llm_vec_reference(x, nullptr, &v).latency_ps);
    if (name == "attn_norm" || name == "mlp_norm" || name == "final_norm") h_ = std::move(v.out);
    else if (name == "rope") qk_ = std::move(v.out);
    else if (name == "kv_append") kv_new_ = std::move(v.out), wave_done_ = 0, att_.assign(static_cast<std::size_t>(a_.M * a_.q), 0.0f);
    else if (name == "silu_mul") act_ = std::move(v.out);
    else x_ = std::move(v.out);
  }

  void transfer(const LlmSendConfig&) { throw InternalError("data mode runs one stage: no transfer", __FILE__, __LINE__); }

  bool last_layer = false;

 private:
  [[noreturn]] static void unknown(const std::string& name) {
    throw InternalError("data mode does not know the layer program's kernel " + name, __FILE__, __LINE__);
  }
  // The layer's kernels run every pass; the head's after the last layer only.
  bool runs(bool layer) const { return layer || last_layer; }
  void add(bool layer, ps_t latency) {
    ++rep_.kernels;
    if (layer) ran_ += latency;
    else rep_.head_ps += latency;
  }
  // Each sequence's last token: the rows the head reads.
  Values last_rows() const {
    Values out(static_cast<std::size_t>(a_.B * a_.H));
    for (std::int64_t b = 0; b < a_.B; ++b) std::copy_n(x_.begin() + ((b + 1) * a_.T - 1) * a_.H, a_.H, out.begin() + b * a_.H);
    return out;
  }
  // Per row: head_dim / 2 cosines, then as many sines, of the row's position.
  Values rope_table() const {
    Values t(static_cast<std::size_t>(a_.M * a_.d));
    const std::int64_t half = a_.d / 2;
    for (std::int64_t r = 0; r < a_.M; ++r)
      for (std::int64_t i = 0; i < half; ++i) {
        const double th = rope_angle(a_, a_.position(r), i);
        t[static_cast<std::size_t>(r * a_.d + i)] = static_cast<float>(std::cos(th));
        t[static_cast<std::size_t>(r * a_.d + half + i)] = static_cast<float>(std::sin(th));
      }
    return t;
  }
  // The new positions' K (rotated) and V, [M, 2 kv].
  Values kv_rows() const {
    Values out(static_cast<std::size_t>(a_.M * 2 * a_.kv));
    for (std::int64_t r = 0; r < a_.M; ++r) {
      std::copy_n(qk_.begin() + r * (a_.q + a_.kv) + a_.q, a_.kv, out.begin() + r * 2 * a_.kv);
      std::copy_n(qkv_.begin() + r * (a_.q + 2 * a_.kv) + a_.q + a_.kv, a_.kv, out.begin() + r * 2 * a_.kv + a_.kv);
    }
    return out;
  }

  const Dims& a_;
  const Weights& w_;
  LlmDataReport& rep_;
  std::int64_t layer_ = 0, wave_done_ = 0;
  ps_t ran_ = 0;
  Values x_, h_, qkv_, qk_, kv_new_, att_, y_, gate_up_, act_, logits_;
};

// The float64 forward pass: the same model on the same weights, by the textbook formulas.
using Dense = std::vector<double>;

Dense rms_norm(const Dense& x, std::int64_t rows, std::int64_t cols, const Values& g) {
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

Dense matmul(const Dense& a, std::int64_t m, std::int64_t k, const Values& b, std::int64_t n) {
  Dense c(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const double x = a[static_cast<std::size_t>(i * k + p)];
      for (std::int64_t j = 0; j < n; ++j) c[static_cast<std::size_t>(i * n + j)] += x * b[static_cast<std::size_t>(p * n + j)];
    }
  return c;
}

// The logits, and in `hidden` the residual stream after the last layer, [M, H].
Dense forward_f64(const Dims& a, const Weights& w, Dense* hidden) {
  const std::int64_t M = a.M, H = a.H, d = a.d, half = d / 2, wq = a.q + 2 * a.kv;
  Dense x(w.x.begin(), w.x.end());
  for (std::int64_t l = 0; l < a.layers; ++l) {
    const std::size_t L = static_cast<std::size_t>(l);
    Dense qkv = matmul(rms_norm(x, M, H, w.attn_norm[L]), M, H, w.qkv[L], wq);
    for (std::int64_t r = 0; r < M; ++r)  // RoPE on every query and key head
      for (std::int64_t h = 0; h < a.heads + a.kvh; ++h)
        for (std::int64_t i = 0; i < half; ++i) {
          // The position, and the frequency, from the definitions (not the kernels' helpers).
          const std::int64_t pos = a.decode ? a.S - 1 : r - (r / a.T) * a.T;
          const double th = static_cast<double>(pos) / std::pow(kRopeTheta, static_cast<double>(2 * i) / static_cast<double>(d));
          double& x1 = qkv[static_cast<std::size_t>(r * wq + h * d + i)];
          double& x2 = qkv[static_cast<std::size_t>(r * wq + h * d + half + i)];
          const double u = x1, v = x2;
          x1 = u * std::cos(th) - v * std::sin(th);
          x2 = v * std::cos(th) + u * std::sin(th);
        }
    Dense att(static_cast<std::size_t>(M * a.q), 0.0);
    std::vector<double> score(static_cast<std::size_t>(a.S));
    for (std::int64_t r = 0; r < M; ++r) {
      const std::int64_t b = r / a.T, pos = a.decode ? a.S - 1 : r - b * a.T;
      for (std::int64_t j = 0; j < a.heads; ++j) {
        const std::int64_t h = j / a.G;
        // Key and value of position s: the cache's earlier positions (decode), or row s of
        // this sequence's prompt.
        auto key = [&](std::int64_t s, std::int64_t e) -> double {
          if (a.decode && s < a.S - 1) return w.k_cache[L][static_cast<std::size_t>(((b * a.kvh + h) * (a.S - 1) + s) * d + e)];
          const std::int64_t row = a.decode ? r : b * a.T + s;
          return qkv[static_cast<std::size_t>(row * wq + a.q + h * d + e)];
        };
        auto value = [&](std::int64_t s, std::int64_t e) -> double {
          if (a.decode && s < a.S - 1) return w.v_cache[L][static_cast<std::size_t>(((b * a.kvh + h) * (a.S - 1) + s) * d + e)];
          const std::int64_t row = a.decode ? r : b * a.T + s;
          return qkv[static_cast<std::size_t>(row * wq + a.q + a.kv + h * d + e)];
        };
        double top = -1e300;
        for (std::int64_t s = 0; s <= pos; ++s) {
          double dot = 0;
          for (std::int64_t e = 0; e < d; ++e) dot += qkv[static_cast<std::size_t>(r * wq + j * d + e)] * key(s, e);
          score[static_cast<std::size_t>(s)] = dot / std::sqrt(static_cast<double>(d));
          top = std::max(top, score[static_cast<std::size_t>(s)]);
        }
        double sum = 0;
        for (std::int64_t s = 0; s <= pos; ++s) sum += (score[static_cast<std::size_t>(s)] = std::exp(score[static_cast<std::size_t>(s)] - top));
        for (std::int64_t s = 0; s <= pos; ++s)
          for (std::int64_t e = 0; e < d; ++e)
            att[static_cast<std::size_t>(r * a.q + j * d + e)] += score[static_cast<std::size_t>(s)] / sum * value(s, e);
      }
    }
    const Dense o = matmul(att, M, a.q, w.o[L], H);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    const Dense gu = matmul(rms_norm(x, M, H, w.mlp_norm[L]), M, H, w.gate_up[L], 2 * a.I);
    Dense act(static_cast<std::size_t>(M * a.I));
    for (std::int64_t r = 0; r < M; ++r)
      for (std::int64_t i = 0; i < a.I; ++i) {
        const double g = gu[static_cast<std::size_t>(r * 2 * a.I + i)], u = gu[static_cast<std::size_t>(r * 2 * a.I + a.I + i)];
        act[static_cast<std::size_t>(r * a.I + i)] = g / (1.0 + std::exp(-g)) * u;
      }
    const Dense down = matmul(act, M, a.I, w.down[L], H);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  *hidden = x;
  Dense last(static_cast<std::size_t>(a.B * H));
  for (std::int64_t b = 0; b < a.B; ++b) std::copy_n(x.begin() + ((b + 1) * a.T - 1) * H, H, last.begin() + b * H);
  return matmul(rms_norm(last, a.B, H, w.final_norm), a.B, H, w.lm_head, a.V);
}

}  // namespace

std::string llm_data_refusal(const LlmConfig& c) {
  if (c.tp != 1) return "--data runs one rank: --tp 1 (got " + std::to_string(c.tp) + ")";
  if (c.pp != 1) return "--data runs one pipeline stage: --pp 1 (got " + std::to_string(c.pp) + ")";
  if (c.microbatches != 1) return "--data runs the batch whole: --microbatches 1 (got " + std::to_string(c.microbatches) + ")";
  if (c.layers_run != 0 && c.layers_run != c.layers)
    return "--data runs every layer: leave --layers out (got " + std::to_string(c.layers_run) + " of " + std::to_string(c.layers) + ")";
  const LlmResult r = llm_model(c);
  if (r.status == kLlmOk && r.macs > kDataMaxMacs)
    return "--data computes every value on the host: at most " + std::to_string(kDataMaxMacs) +
           " multiply-accumulates a step; this step has " + std::to_string(r.macs) + " (a smaller model, batch or context)";
  if (r.status == kLlmOk) {
    const Dims a = dims_of(c);
    const std::int64_t layer = a.H * (a.q + 2 * a.kv) + a.q * a.H + 3 * a.H * a.I + 2 * a.H,
                       cache = a.decode ? 2 * a.B * a.kvh * (a.S - 1) * a.d : 0;
    const std::int64_t values = a.layers * (layer + cache) + a.H * a.V + a.H;
    if (values > kDataMaxValues)
      return "--data holds every weight and cached value on the host: at most " + std::to_string(kDataMaxValues) +
             " values; this model and step have " + std::to_string(values) + " (a smaller model, batch or context)";
  }
  return "";
}

LlmDataReport llm_data_run(const LlmConfig& c, std::uint64_t seed) {
  const std::int32_t st = llm_check(c);
  if (st != kLlmOk) throw InputError(llm_status_message(st, c));
  const std::string why = llm_data_refusal(c);
  if (!why.empty()) throw InputError(why);
  const Dims a = dims_of(c);
  const Weights w = draw_weights(a, seed);
  LlmDataReport rep;
  rep.sequences = a.B, rep.vocab = a.V;
  DataPass pass(a, w, rep);
  for (std::int64_t l = 0; l < a.layers; ++l) {
    pass.start_layer(l);
    pass.last_layer = l + 1 == a.layers;
    llm_for_each_kernel(c, pass);
    if (l == 0) rep.layer_ps = pass.ran();
    if (pass.ran() != rep.layer_ps)
      throw InternalError("layer " + std::to_string(l) + " took " + std::to_string(pass.ran()) + " ps in data mode, the first " +
                              std::to_string(rep.layer_ps) + " ps",
                          __FILE__, __LINE__);
  }
  // Values never change timing: each layer, and the head, as the timing run takes them.
  LlmConfig one = c;
  one.layers_run = 1;
  const LlmResult timed = llm_reference(one);
  if (timed.layer_ps != rep.layer_ps || timed.head_ps != rep.head_ps)
    throw InternalError("data mode took " + std::to_string(rep.layer_ps) + " ps a layer and " + std::to_string(rep.head_ps) +
                            " ps for the head; the timing run " + std::to_string(timed.layer_ps) + " and " +
                            std::to_string(timed.head_ps),
                        __FILE__, __LINE__);
  rep.logits = pass.logits();
  Dense hidden;
  rep.expected = forward_f64(a, w, &hidden);
  const Values& got = pass.hidden();
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    rep.hidden_max_abs_error = std::max(rep.hidden_max_abs_error, std::fabs(static_cast<double>(got.at(i)) - hidden[i]));
    rep.hidden_max_abs = std::max(rep.hidden_max_abs, std::fabs(hidden[i]));
  }
  double sq = 0;
  for (std::size_t i = 0; i < rep.expected.size(); ++i) {
    const double e = std::fabs(static_cast<double>(rep.logits.at(i)) - rep.expected[i]);
    rep.max_abs_error = std::max(rep.max_abs_error, e);
    rep.max_abs_logit = std::max(rep.max_abs_logit, std::fabs(rep.expected[i]));
    sq += e * e;
  }
  rep.rms_error = std::sqrt(sq / static_cast<double>(std::max<std::size_t>(1, rep.expected.size())));
  return rep;
}

}  // namespace kb
