#include "llm_data.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "../../common/error.h"
#include "../../runtime/numeric.h"
#include "../collective/allreduce_program.h"
#include "../decode/decode_program.h"
#include "../gemm/gemm_program.h"
#include "llm_data_detail.h"
#include "llm_data_mla.h"
#include "llm_data_moe.h"
#include "llm_program.h"

namespace kb {
namespace llm_data {
namespace {

// Data mode computes every value on the host: a step of at most this many multiply-accumulates,
// and at most this many values of weights and KV cache held.
constexpr std::int64_t kDataMaxMacs = INT64_C(1) << 32, kDataMaxValues = INT64_C(1) << 26;

// The model's values: weights of every layer (B of each GEMM is [in, out]) and the norms'.
struct Weights {
  std::vector<Values> attn_norm, qkv, o, mlp_norm, gate_up, down;  // per layer (a MoE layer: no gate_up, down)
  std::vector<MoeWeights> moe;                                     // per layer (a dense layer: none)
  std::vector<MlaWeights> mla;                                     // per layer (latent attention; no qkv)
  Values final_norm, lm_head;
};
// The step's: its input activations [M, H] and, for decode, the KV cache's earlier positions
// per layer [B, kv_heads, S - 1, d].
struct Inputs {
  Values x;
  std::vector<Values> k_cache, v_cache;
};

Weights draw_weights(const Dims& a, std::uint64_t seed, Inputs& in) {
  Weights w;
  std::uint64_t id = 0;
  // Weights scaled by 1/sqrt(fan-in), so that activations keep their size through the layers.
  auto matrix = [&](std::int64_t in, std::int64_t out) {
    return draw(in * out, seed, ++id, 0.0, 1.0 / std::sqrt(static_cast<double>(in)), a.wtype);
  };
  auto norm = [&] { return draw(a.H, seed, ++id, 1.0, 0.25, a.wtype); };
  for (std::int64_t l = 0; l < a.layers; ++l) {
    w.attn_norm.push_back(norm());
    const bool mla = a.C > 0;
    w.qkv.push_back(mla ? Values{} : matrix(a.H, a.q + 2 * a.kv));
    w.mla.push_back(mla ? draw_mla_weights(a, seed, &id) : MlaWeights{});
    w.o.push_back(mla ? matrix(a.heads * a.dv, a.H) : matrix(a.q, a.H));
    w.mlp_norm.push_back(norm());
    w.gate_up.push_back(a.moe_layer(l) ? Values{} : matrix(a.H, 2 * a.I));
    w.down.push_back(a.moe_layer(l) ? Values{} : matrix(a.I, a.H));
    w.moe.push_back(a.moe_layer(l) ? draw_moe_weights(a, seed, &id) : MoeWeights{});
    // [B, kvh, S - 1, d] each of K and V; latent attention's [B, S - 1, C + dr] (in k_cache).
    const std::int64_t earlier = a.decode ? (mla ? a.B * (a.S - 1) * a.lat : a.B * a.kvh * (a.S - 1) * a.d) : 0;
    in.k_cache.push_back(draw(earlier, seed, ++id, 0.0, 1.0, a.kvtype));
    in.v_cache.push_back(draw(mla ? 0 : earlier, seed, ++id, 0.0, 1.0, a.kvtype));
  }
  w.final_norm = norm();
  w.lm_head = matrix(a.H, a.V);
  in.x = draw(a.M * a.H, seed, ++id, 0.0, 1.0, DType::f16);
  return w;
}

// Micro-batch m of n: its sequences' rows of the inputs.
Inputs micro_batch(const Dims& a, const Inputs& in, std::int64_t m, std::int64_t n) {
  const std::int64_t per = a.B / n;
  auto rows = [&](const Values& v, std::int64_t row) {  // `row` values a sequence
    return Values(v.begin() + m * per * row, v.begin() + (m + 1) * per * row);
  };
  Inputs out;
  out.x = rows(in.x, a.T * a.H);
  for (std::size_t l = 0; l < in.k_cache.size(); ++l) {  // a prefill has no earlier positions
    out.k_cache.push_back(rows(in.k_cache[l], static_cast<std::int64_t>(in.k_cache[l].size()) / a.B));
    out.v_cache.push_back(rows(in.v_cache[l], static_cast<std::int64_t>(in.v_cache[l].size()) / a.B));
  }
  return out;
}

// Runs each kernel of the layer program in data mode and carries the values between them.
// Every tensor-parallel rank runs its kernels on its share (the timing run times one rank:
// the others take the same time, which is checked); the norms and residual adds work on the
// whole activation, alike on every rank, so they run once.
class DataPass {
 public:
  DataPass(const Dims& a, const Weights& w, const Inputs& in, LlmDataReport& rep)
      : a_(a), w_(w), in_(in), rep_(rep), x_(in.x), rank_(static_cast<std::size_t>(a.tp)) {}

  // A MoE layer runs in two visits of the layer program: up to its router, then (with the
  // config of the routing its values gave, which sets the experts' kernels) the rest.
  enum class Part { all, until_router, after_router };
  void start_layer(std::int64_t l) {
    layer_ = l;
    ran_ = 0;
    const std::size_t L = static_cast<std::size_t>(l);
    moe_.reset(a_.moe_layer(l) ? new MoeLayerData(a_, w_.moe[L]) : nullptr);
    mla_.reset(a_.C > 0 ? new MlaLayerData(a_, w_.mla[L], w_.o[L], in_.k_cache[L]) : nullptr);
  }
  void start_visit(Part part) { part_ = part, past_router_ = false, alt_ = false; }
  void layer_kind(bool alt) { alt_ = alt; }
  const MoeLayerData* moe() const { return moe_.get(); }
  ps_t ran() const { return ran_; }
  // The logits, [B, V]: each rank's vocabulary rows side by side.
  Values logits() const {
    Values out(static_cast<std::size_t>(a_.B * a_.V));
    for (std::int64_t b = 0; b < a_.B; ++b)
      for (std::int64_t v = 0; v < a_.V; ++v)
        out[static_cast<std::size_t>(b * a_.V + v)] = rank_[static_cast<std::size_t>(v / a_.Vr)].logits[static_cast<std::size_t>(b * a_.Vr + v % a_.Vr)];
    return out;
  }
  const Values& hidden() const { return x_; }  // the residual stream after the last layer

  void gemm(const GemmConfig& g, const LlmKernel& k, bool layer) {
    const std::string name = k.name;
    if (name == "router") {
      const bool mine = runs(layer);
      past_router_ = true;
      if (mine) add(layer, moe_->router(g, h_), k.repeat);
      return;
    }
    if (!runs(layer)) return;
    if (MoeLayerData::handles(name)) {
      add(layer, moe_->gemm(g, name), k.repeat);
      return;
    }
    if (mla_ && MlaLayerData::handles(name)) {
      add(layer, mla_->gemm(g, name, h_), k.repeat);
      if (name == "o_proj") {
        for (std::int64_t r = 0; r < a_.tp; ++r) rank_[static_cast<std::size_t>(r)].y = mla_->y(r);
        if (a_.tp == 1) y_ = rank_[0].y;  // no allreduce at tp 1
      }
      return;
    }
    const std::size_t l = static_cast<std::size_t>(layer_);
    ps_t took = -1;
    for (std::int64_t r = 0; r < a_.tp; ++r) {
      Rank& me = rank_[static_cast<std::size_t>(r)];
      KernelValues v;
      if (name == "qkv") v.in = {h_, take_cols(w_.qkv[l], a_.H, a_.q + 2 * a_.kv, qkv_cols(r))};
      else if (name == "o_proj") v.in = {me.att, take_rows(w_.o[l], a_.H, q_rows(r))};
      else if (name == "gate_up") v.in = {h_, take_cols(w_.gate_up[l], a_.H, 2 * a_.I, gate_up_cols(r))};
      else if (name == "down") v.in = {me.act, take_rows(w_.down[l], a_.H, share(r, a_.Ir, a_.I, 0))};
      else if (name == "lm_head") v.in = {h_, take_cols(w_.lm_head, a_.H, a_.V, share(r, a_.Vr, a_.V, 0))};
      else unknown(name);
      same_time(took, gemm_reference(g, nullptr, &v).latency_ps, name);
      if (name == "qkv") me.qkv = std::move(v.out);
      else if (name == "o_proj" || name == "down") me.y = std::move(v.out);
      else if (name == "gate_up") me.gate_up = std::move(v.out);
      else me.logits = std::move(v.out);
    }
    add(layer, took);
    if (a_.tp == 1 && (name == "o_proj" || name == "down")) y_ = rank_[0].y;  // no allreduce at tp 1
  }

  // Decode: the sequences of one wave against the cache, its last position the new one.
  void attention(const DecodeConfig& dc, const LlmKernel&, bool layer) {
    if (!runs(layer)) return;
    if (mla_) {
      add(layer, mla_->attention(dc));
      return;
    }
    const std::int64_t n = dc.batch, b0 = wave_done_, d = a_.d, S = a_.S, kvh = a_.hkv, G = a_.hq / a_.hkv;
    const Values& kc = in_.k_cache[static_cast<std::size_t>(layer_)];
    const Values& vc = in_.v_cache[static_cast<std::size_t>(layer_)];
    ps_t took = -1;
    for (std::int64_t r = 0; r < a_.tp; ++r) {
      Rank& me = rank_[static_cast<std::size_t>(r)];
      Values q(static_cast<std::size_t>(n * kvh * G * d)), K(static_cast<std::size_t>(n * kvh * d * S)), V(K.size());
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t h = 0; h < kvh; ++h) {
          const std::int64_t u = b * kvh + h, row = b0 + b, model_h = a_.kv_head(r, h);
          for (std::int64_t g = 0; g < G; ++g)
            for (std::int64_t e = 0; e < d; ++e)
              q[static_cast<std::size_t>((u * G + g) * d + e)] = me.qk[static_cast<std::size_t>(row * (a_.qr + a_.kvr) + (h * G + g) * d + e)];
          for (std::int64_t s = 0; s < S; ++s)
            for (std::int64_t e = 0; e < d; ++e) {
              const bool fresh = s == S - 1;
              const std::size_t old = static_cast<std::size_t>(((row * a_.kvh + model_h) * (S - 1) + s) * d + e);
              const std::size_t now = static_cast<std::size_t>(row * 2 * a_.kvr + h * d + e);
              K[static_cast<std::size_t>((u * d + e) * S + s)] = fresh ? me.kv_new[now] : kc[old];
              V[static_cast<std::size_t>((u * S + s) * d + e)] = fresh ? me.kv_new[now + static_cast<std::size_t>(a_.kvr)] : vc[old];
            }
        }
      KernelValues v;
      v.in = {std::move(q), std::move(K), std::move(V)};
      same_time(took, decode_reference(dc, nullptr, &v).latency_ps, "attention");
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t j = 0; j < a_.hq; ++j)  // query head j = h G + g is row u G + g
          std::copy_n(v.out.begin() + ((b * kvh + j / G) * G + j % G) * d, d, me.att.begin() + ((b0 + b) * a_.qr + j * d));
    }
    add(layer, took);
    wave_done_ += n;
  }

  // Prefill: causal attention of every prompt over its own fresh keys and values.
  void attention(const LlmAttnConfig& x, const LlmKernel&, bool layer) {
    if (!runs(layer)) return;
    if (mla_) {
      add(layer, mla_->attention(x));
      return;
    }
    const std::int64_t T = a_.T, d = a_.d, kvh = a_.hkv, G = a_.hq / a_.hkv, KV = a_.B * kvh;
    const std::int64_t wq = a_.qr + a_.kvr, w = a_.qr + 2 * a_.kvr;
    ps_t took = -1;
    for (std::int64_t r = 0; r < a_.tp; ++r) {
      Rank& me = rank_[static_cast<std::size_t>(r)];
      Values q(static_cast<std::size_t>(KV * T * G * d)), K(static_cast<std::size_t>(KV * d * T)), V(K.size());
      for (std::int64_t b = 0; b < a_.B; ++b)
        for (std::int64_t h = 0; h < kvh; ++h) {
          const std::int64_t u = b * kvh + h;
          for (std::int64_t t = 0; t < T; ++t) {
            const std::int64_t row = b * T + t;
            for (std::int64_t e = 0; e < d; ++e) {
              for (std::int64_t g = 0; g < G; ++g)
                q[static_cast<std::size_t>(((u * T + t) * G + g) * d + e)] = me.qk[static_cast<std::size_t>(row * wq + (h * G + g) * d + e)];
              K[static_cast<std::size_t>((u * d + e) * T + t)] = me.qk[static_cast<std::size_t>(row * wq + a_.qr + h * d + e)];
              V[static_cast<std::size_t>((u * T + t) * d + e)] = me.qkv[static_cast<std::size_t>(row * w + a_.qr + a_.kvr + h * d + e)];
            }
          }
        }
      KernelValues v;
      v.in = {std::move(q), std::move(K), std::move(V)};
      same_time(took, llm_attn_reference(x, nullptr, &v).latency_ps, "attention");
      for (std::int64_t b = 0; b < a_.B; ++b)
        for (std::int64_t t = 0; t < T; ++t)
          for (std::int64_t j = 0; j < a_.hq; ++j)
            std::copy_n(v.out.begin() + (((b * kvh + j / G) * T + t) * G + j % G) * d, d, me.att.begin() + ((b * T + t) * a_.qr + j * d));
    }
    add(layer, took);
  }

  // The ranks' partial sums of the O projection or the down projection, summed by the
  // collective's program on the reference engine.
  void allreduce(const AllreduceConfig& c, const LlmKernel&, bool layer) {
    if (!runs(layer)) return;
    std::vector<Values> parts;
    for (const Rank& me : rank_) parts.push_back(me.y);
    const CollectiveRun run = run_collective(c, true, 1, nullptr, &parts);
    add(layer, run.report.summary.latency_ps);
    y_ = run.values.at(0);
    for (const Values& v : run.values)
      if (v != y_) throw InternalError("the allreduce left different sums on its ranks", __FILE__, __LINE__);
  }

  void vector(const LlmVecConfig& x, const LlmKernel& k, bool layer) {
    if (!runs(layer)) return;
    const std::string name = k.name;
    if (mla_ && MlaLayerData::handles(name)) {
      add(layer, mla_->vector(x, name), k.repeat);
      return;
    }
    if (MoeLayerData::handles(name)) {
      add(layer, moe_->vector(x, name), k.repeat);
      if (name == "moe_sum") {
        for (std::size_t r = 0; r < rank_.size(); ++r) rank_[r].y = moe_->parts()[r];
        if (a_.tp == 1) y_ = rank_[0].y;  // no allreduce at tp 1
      }
      return;
    }
    const std::size_t l = static_cast<std::size_t>(layer_);
    const bool each = name == "rope" || name == "kv_append" || name == "silu_mul";  // on each rank's share
    ps_t took = -1;
    for (std::int64_t r = 0; r < (each ? a_.tp : 1); ++r) {
      Rank& me = rank_[static_cast<std::size_t>(r)];
      KernelValues v;
      if (name == "attn_norm") v.in = {x_, w_.attn_norm[l]};
      else if (name == "mlp_norm") v.in = {x_, w_.mlp_norm[l]};
      else if (name == "final_norm") v.in = {last_rows(), w_.final_norm};
      else if (name == "rope") v.in = {columns(me.qkv, a_.M, a_.qr + 2 * a_.kvr, 0, a_.qr + a_.kvr), rope_table(a_, a_.d)};
      else if (name == "kv_append") v.in = {kv_rows(me)};
      else if (name == "silu_mul") v.in = {columns(me.gate_up, a_.M, 2 * a_.Ir, 0, a_.Ir), columns(me.gate_up, a_.M, 2 * a_.Ir, a_.Ir, a_.Ir)};
      else if (name == "attn_residual" || name == "mlp_residual") v.in = {x_, y_};
      else unknown(name);
      same_time(took, llm_vec_reference(x, nullptr, &v).latency_ps, name);
      if (name == "attn_norm" || name == "mlp_norm" || name == "final_norm") h_ = std::move(v.out);
      else if (name == "rope") me.qk = std::move(v.out);
      else if (name == "kv_append") {
        me.kv_new = std::move(v.out);
        me.att.assign(static_cast<std::size_t>(a_.M * a_.qr), 0.0f);
        wave_done_ = 0;
      } else if (name == "silu_mul") me.act = std::move(v.out);
      else x_ = std::move(v.out);
    }
    add(layer, took);
  }

  void transfer(const LlmSendConfig&) {}  // between stages the activation arrives as it left

  bool last_layer = false;

 private:
  // One rank's tensors.
  struct Rank {
    Values qkv, qk, kv_new, att, y, gate_up, act, logits;
  };
  [[noreturn]] static void unknown(const std::string& name) {
    throw InternalError("data mode does not know the layer program's kernel " + name, __FILE__, __LINE__);
  }
  // The QKV weight's columns of rank r: its query heads', then its KV heads' K and V.
  std::vector<std::int64_t> qkv_cols(std::int64_t r) const {
    std::vector<std::int64_t> out;
    for (std::int64_t i = 0; i < a_.hq; ++i)
      for (std::int64_t e = 0; e < a_.d; ++e) out.push_back(a_.q_head(r, i) * a_.d + e);
    for (std::int64_t part = 0; part < 2; ++part)
      for (std::int64_t j = 0; j < a_.hkv; ++j)
        for (std::int64_t e = 0; e < a_.d; ++e) out.push_back(a_.q + part * a_.kv + a_.kv_head(r, j) * a_.d + e);
    return out;
  }
  std::vector<std::int64_t> q_rows(std::int64_t r) const { return share(r, a_.qr, a_.q, 0); }
  std::vector<std::int64_t> gate_up_cols(std::int64_t r) const {
    std::vector<std::int64_t> out = share(r, a_.Ir, a_.I, 0), up = share(r, a_.Ir, a_.I, a_.I);
    out.insert(out.end(), up.begin(), up.end());
    return out;
  }
  // The layer's kernels of its kind run every pass (a MoE model's dense layers are the
  // program's second kind), the part of them this visit runs; the head's after the last layer.
  bool runs(bool layer) const {
    if (!layer) return last_layer && part_ != Part::until_router;
    if (alt_ != (a_.E > 0 && !a_.moe_layer(layer_))) return false;
    return part_ == Part::all || (part_ == Part::until_router) != past_router_;
  }
  // A kernel repeated (a rank's routed experts) takes its time `repeat` times, as timed.
  void add(bool layer, ps_t latency, std::int64_t repeat = 1) {
    ++rep_.kernels;
    if (layer) ran_ += latency * repeat;
    else rep_.head_ps += latency * repeat;
  }
  // Each sequence's last token: the rows the head reads.
  Values last_rows() const {
    Values out(static_cast<std::size_t>(a_.B * a_.H));
    for (std::int64_t b = 0; b < a_.B; ++b) std::copy_n(x_.begin() + ((b + 1) * a_.T - 1) * a_.H, a_.H, out.begin() + b * a_.H);
    return out;
  }
  // The new positions' K (rotated) and V of a rank, [M, 2 kv].
  Values kv_rows(const Rank& me) const {
    Values out(static_cast<std::size_t>(a_.M * 2 * a_.kvr));
    for (std::int64_t r = 0; r < a_.M; ++r) {
      std::copy_n(me.qk.begin() + r * (a_.qr + a_.kvr) + a_.qr, a_.kvr, out.begin() + r * 2 * a_.kvr);
      std::copy_n(me.qkv.begin() + r * (a_.qr + 2 * a_.kvr) + a_.qr + a_.kvr, a_.kvr, out.begin() + r * 2 * a_.kvr + a_.kvr);
    }
    return out;
  }

  const Dims& a_;
  const Weights& w_;
  const Inputs& in_;
  LlmDataReport& rep_;
  std::int64_t layer_ = 0, wave_done_ = 0;
  ps_t ran_ = 0;
  std::unique_ptr<MoeLayerData> moe_;
  std::unique_ptr<MlaLayerData> mla_;
  Part part_ = Part::all;
  bool past_router_ = false, alt_ = false;
  Values x_, h_, y_;
  std::vector<Rank> rank_;
};

// The float64 forward pass: the same model on the same weights, by the textbook formulas.



// The logits, and in `hidden` the residual stream after the last layer, [M, H].
// A MoE layer's block takes its routing from the run's where the two differ by a near tie
// (`routes`: the run's routing of every row, per layer; moe_f64).
Dense forward_f64(const Dims& a, const Weights& w, const Inputs& in, const std::vector<Routing>& routes, LlmDataReport& rep,
                  Dense* hidden) {
  const std::int64_t M = a.M, H = a.H, d = a.d, wq = a.q + 2 * a.kv;
  Dense x(in.x.begin(), in.x.end());
  for (std::int64_t l = 0; l < a.layers; ++l) {
    const std::size_t L = static_cast<std::size_t>(l);
    if (a.C > 0) {  // latent attention
      const Dense o = mla_f64(a, w.mla[L], w.o[L], rms_norm(x, M, H, w.attn_norm[L]), in.k_cache[L]);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    } else {
      Dense qkv = matmul(rms_norm(x, M, H, w.attn_norm[L]), M, H, w.qkv[L], wq);
      for (std::int64_t r = 0; r < M; ++r)  // RoPE on every query and key head, at the row's position
        for (std::int64_t h = 0; h < a.heads + a.kvh; ++h) rope_f64(qkv.data() + r * wq + h * d, d, a.decode ? a.S - 1 : r - (r / a.T) * a.T);
      Dense att(static_cast<std::size_t>(M * a.q), 0.0);
      std::vector<double> score(static_cast<std::size_t>(a.S));
      for (std::int64_t r = 0; r < M; ++r) {
        const std::int64_t b = r / a.T, pos = a.decode ? a.S - 1 : r - b * a.T;
        for (std::int64_t j = 0; j < a.heads; ++j) {
          const std::int64_t h = j / a.G;
          // Key and value of position s: the cache's earlier positions (decode), or row s of
          // this sequence's prompt.
          auto key = [&](std::int64_t s, std::int64_t e) -> double {
            if (a.decode && s < a.S - 1) return in.k_cache[L][static_cast<std::size_t>(((b * a.kvh + h) * (a.S - 1) + s) * d + e)];
            const std::int64_t row = a.decode ? r : b * a.T + s;
            return qkv[static_cast<std::size_t>(row * wq + a.q + h * d + e)];
          };
          auto value = [&](std::int64_t s, std::int64_t e) -> double {
            if (a.decode && s < a.S - 1) return in.v_cache[L][static_cast<std::size_t>(((b * a.kvh + h) * (a.S - 1) + s) * d + e)];
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
    }
    if (a.moe_layer(l)) {
      const Dense y = moe_f64(a, w.moe[L], rms_norm(x, M, H, w.mlp_norm[L]), M, routes[L], &rep.routing_flips, &rep.routing_flip_gap);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
      continue;
    }
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
}  // namespace llm_data

std::string llm_data_refusal(const LlmConfig& c) {
  using namespace llm_data;
  if (c.experts > 0 && c.attention_dp)
    return "--data runs a mixture-of-experts model's attention tensor-parallel only (--attention tp, the experts' "
           "outputs combined by an allreduce): the values of data-parallel attention's dispatch and combine are not "
           "computed yet; leave --data out to time it";
  if (c.nope_every > 0 || c.attn_chunk > 0 || c.qk_norm > 0)
    return "--data runs LLaMA's attention only: layers without RoPE, chunked attention and q/k norms are not computed "
           "yet; leave --data out to time them";
  if (c.prior > 0)
    return "--data runs whole prompts: leave --prior out (a chunk after cached positions is timed, not computed)";
  if (c.layers_run != 0 && c.layers_run != c.layers)
    return "--data runs every layer: leave --layers out (got " + std::to_string(c.layers_run) + " of " + std::to_string(c.layers) + ")";
  const LlmResult r = llm_model(c);
  if (r.status == kLlmOk && r.macs > kDataMaxMacs)
    return "--data computes every value on the host: at most " + std::to_string(kDataMaxMacs) +
           " multiply-accumulates a step; this step has " + std::to_string(r.macs) + " (a smaller model, batch or context)";
  if (r.status == kLlmOk) {
    const Dims a = dims_of(c);
    const std::int64_t qall = a.Q > 0 ? a.Q : a.heads * a.d;
    const std::int64_t attention = a.C > 0 ? a.H * (qall + a.lat) + a.Q + a.C + a.Q * a.heads * a.d + a.C * a.heads * (a.dn + a.dv) +
                                                 a.heads * a.dv * a.H
                                           : a.H * (a.q + 2 * a.kv) + a.q * a.H;
    const std::int64_t layer = attention + 3 * a.H * a.I + 2 * a.H,
                       cache = a.decode ? (a.C > 0 ? a.B * (a.S - 1) * a.lat : 2 * a.B * a.kvh * (a.S - 1) * a.d) : 0;
    // A MoE layer: the router, its bias and every expert for the dense MLP.
    const std::int64_t moe = a.H * a.E + a.E + a.E * 3 * a.H * a.Im + 3 * a.H * a.Sh - 3 * a.H * a.I;
    const std::int64_t values = a.layers * (layer + cache) + (a.E > 0 ? (a.layers - a.dense) * moe : 0) + a.H * a.V + a.H;
    if (values > kDataMaxValues)
      return "--data holds every weight and cached value on the host: at most " + std::to_string(kDataMaxValues) +
             " values; this model and step have " + std::to_string(values) + " (a smaller model, batch or context)";
  }
  return "";
}

LlmDataReport llm_data_run(const LlmConfig& c, std::uint64_t seed) {
  using namespace llm_data;
  const std::int32_t st = llm_check(c);
  if (st != kLlmOk) throw InputError(llm_status_message(st, c));
  const std::string why = llm_data_refusal(c);
  if (!why.empty()) throw InputError(why);
  const Dims a = dims_of(c);
  Inputs in;
  const Weights w = draw_weights(a, seed, in);
  LlmDataReport rep;
  rep.sequences = a.B, rep.vocab = a.V;
  // Each micro-batch through every layer and the head (its own sequences, the same kernels).
  // A MoE layer's routing comes from its router's values: the layer takes the time the timing
  // run gives that routing (its expert_tokens).
  // The timing run of one layer of each kind and the head (their times are the step's).
  LlmConfig layer1 = c;
  layer1.layers_run = 1;
  const LlmResult timed = llm_reference(layer1);
  std::vector<Routing> routes(static_cast<std::size_t>(a.layers));
  Values got;
  for (std::int64_t mb = 0; mb < c.microbatches; ++mb) {
    Dims am = a;
    am.B = a.B / c.microbatches, am.M = am.B * a.T;
    const Inputs part = micro_batch(a, in, mb, c.microbatches);
    LlmDataReport one;
    DataPass pass(am, w, part, one);
    for (std::int64_t l = 0; l < a.layers; ++l) {
      pass.start_layer(l);
      pass.last_layer = l + 1 == a.layers;
      ps_t want = a.E > 0 ? timed.dense_layer_ps : timed.layer_ps;
      if (!a.moe_layer(l)) {
        pass.start_visit(DataPass::Part::all);
        llm_for_each_kernel(c, pass);
      } else {
        pass.start_visit(DataPass::Part::until_router);
        llm_for_each_kernel(c, pass);
        const Routing& r = pass.moe()->routing();
        LlmConfig routed = layer1;
        for (std::int64_t e = 0; e < a.E; ++e) routed.expert_tokens[e] = static_cast<std::int32_t>(r.tokens[static_cast<std::size_t>(e)]);
        if (llm_check(routed) != kLlmOk)
          throw InputError("--data: layer " + std::to_string(l) + "'s routing from the router's values: " +
                           llm_status_message(llm_check(routed), routed));
        pass.start_visit(DataPass::Part::after_router);
        llm_for_each_kernel(routed, pass);
        want = llm_reference(routed).layer_ps;
        Routing& all = routes[static_cast<std::size_t>(l)];
        all.expert.insert(all.expert.end(), r.expert.begin(), r.expert.end());
        all.weight.insert(all.weight.end(), r.weight.begin(), r.weight.end());
      }
      if (mb == 0) rep.layers_ps.push_back(pass.ran());
      if (pass.ran() != want)
        throw InternalError("layer " + std::to_string(l) + " took " + std::to_string(pass.ran()) + " ps in data mode, the timing run " +
                                std::to_string(want) + " ps",
                            __FILE__, __LINE__);
    }
    if (mb == 0) rep.head_ps = one.head_ps;
    if (one.head_ps != rep.head_ps) throw InternalError("the head's time differs between micro-batches", __FILE__, __LINE__);
    rep.kernels += one.kernels;
    const Values logits = pass.logits();
    rep.logits.insert(rep.logits.end(), logits.begin(), logits.end());
    got.insert(got.end(), pass.hidden().begin(), pass.hidden().end());
  }
  // A MoE layer's time is its first's; a dense layer's its model's first dense layer's.
  rep.layer_ps = rep.layers_ps[static_cast<std::size_t>(a.dense)];
  if (a.dense > 0) rep.dense_layer_ps = rep.layers_ps.front();
  if (timed.head_ps != rep.head_ps)
    throw InternalError("data mode took " + std::to_string(rep.head_ps) + " ps for the head; the timing run " +
                            std::to_string(timed.head_ps),
                        __FILE__, __LINE__);
  Dense hidden;
  rep.expected = forward_f64(a, w, in, routes, rep, &hidden);
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
