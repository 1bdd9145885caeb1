#include "llm_data_mla.h"

#include <algorithm>
#include <cmath>

#include "../../common/error.h"
#include "../decode/decode_program.h"
#include "../gemm/gemm_program.h"
#include "llm_program.h"

namespace kb {
namespace llm_data {

namespace {

std::vector<std::int64_t> range(std::int64_t from, std::int64_t n) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = from + i;
  return out;
}

// Rows of `w` [rows, cols] picked, transposed: [cols picked, rows].
Values transposed_cols(const Values& w, std::int64_t rows, std::int64_t cols, std::int64_t c0, std::int64_t n) {
  Values out(static_cast<std::size_t>(n * rows));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < n; ++j) out[static_cast<std::size_t>(j * rows + r)] = w[static_cast<std::size_t>(r * cols + c0 + j)];
  return out;
}

}  // namespace

MlaWeights draw_mla_weights(const Dims& a, std::uint64_t seed, std::uint64_t* id) {
  auto matrix = [&](std::int64_t in, std::int64_t out) {
    return draw(in * out, seed, ++*id, 0.0, 1.0 / std::sqrt(static_cast<double>(in)), a.wtype);
  };
  auto norm = [&](std::int64_t n) { return draw(n, seed, ++*id, 1.0, 0.25, a.wtype); };
  MlaWeights w;
  w.q_kv_a = matrix(a.H, (a.Q > 0 ? a.Q : a.heads * a.d) + a.lat);
  if (a.Q > 0) w.q_a_norm = norm(a.Q), w.q_b = matrix(a.Q, a.heads * a.d);
  w.kv_a_norm = norm(a.C);
  w.kv_b = matrix(a.C, a.heads * (a.dn + a.dv));
  return w;
}

MlaLayerData::MlaLayerData(const Dims& a, const MlaWeights& w, const Values& o, const Values& cache)
    : a_(a), w_(w), o_(o), cache_(cache), alpha_(a.decode ? std::sqrt(static_cast<double>(a.lat) / static_cast<double>(a.d)) : 1.0),
      rank_(static_cast<std::size_t>(a.tp)) {}

bool MlaLayerData::handles(const std::string& name) {
  return name == "q_kv_a" || name == "q_a_norm" || name == "kv_a_norm" || name == "q_b" || name == "rope" || name == "kv_append" ||
         name == "q_absorb" || name == "v_absorb" || name == "kv_b" || name == "o_proj";
}

// A rank's heads' queries: q_b's output, or (no query latent) q_kv_a's first columns.
const Values& MlaLayerData::queries(Rank& me) {
  if (a_.Q == 0 && me.q.empty()) me.q = columns(me.qkva, a_.M, qw() + a_.lat, 0, qw());
  return me.q;
}

ps_t MlaLayerData::gemm(const GemmConfig& g, const std::string& name, const Values& h) {
  ps_t took = -1;
  const std::int64_t M = a_.M, H = a_.H, hq = a_.hq, d = a_.d, dn = a_.dn, dv = a_.dv, C = a_.C, kvw = dn + dv;
  const std::int64_t qall = a_.Q > 0 ? a_.Q : a_.heads * d;  // the model's query columns of q_kv_a
  auto run = [&](std::vector<float> x, Values b) {
    KernelValues v;
    v.in = {std::move(x), std::move(b)};
    same_time(took, gemm_reference(g, nullptr, &v).latency_ps, name);
    return std::move(v.out);
  };
  for (std::int64_t r = 0; r < a_.tp; ++r) {
    Rank& me = rank_[static_cast<std::size_t>(r)];
    if (name == "q_kv_a") {  // the query latent (replicated) or the rank's heads' queries, then the KV latent and k
      std::vector<std::int64_t> cols = a_.Q > 0 ? range(0, a_.Q) : range(r * hq * d, hq * d), latent = range(qall, a_.lat);
      cols.insert(cols.end(), latent.begin(), latent.end());
      me = Rank{};
      me.qkva = run(h, take_cols(w_.q_kv_a, H, qall + a_.lat, cols));
    } else if (name == "q_b") {
      me.q = run(qa_, take_cols(w_.q_b, a_.Q, a_.heads * d, range(r * hq * d, hq * d)));
    } else if (name == "q_absorb") {  // each head's dn query values through its k half of kv_b, transposed
      me.qabs.assign(static_cast<std::size_t>(M * hq * C), 0.0f);
      for (std::int64_t j = 0; j < hq; ++j) {
        Values qn = columns(queries(me), M, hq * d, j * d, dn);
        for (float& x : qn) x = round_to(DType::f16, static_cast<float>(x * alpha_));
        const Values out = run(std::move(qn), transposed_cols(w_.kv_b, C, a_.heads * kvw, model_head(r, j) * kvw, dn));
        for (std::int64_t m = 0; m < M; ++m) std::copy_n(out.begin() + m * C, C, me.qabs.begin() + (m * hq + j) * C);
      }
    } else if (name == "v_absorb") {  // each head's attention over the latents through its v half of kv_b
      me.att.assign(static_cast<std::size_t>(M * hq * dv), 0.0f);
      for (std::int64_t j = 0; j < hq; ++j) {
        const Values out = run(columns(me.latatt, M, hq * C, j * C, C), columns(w_.kv_b, C, a_.heads * kvw, model_head(r, j) * kvw + dn, dv));
        for (std::int64_t m = 0; m < M; ++m) std::copy_n(out.begin() + m * dv, dv, me.att.begin() + (m * hq + j) * dv);
      }
    } else if (name == "kv_b") {  // prefill: each of the rank's heads' k and v from the latents
      me.kvb = run(ckv_, take_cols(w_.kv_b, C, a_.heads * kvw, range(r * hq * kvw, hq * kvw)));
    } else if (name == "o_proj") {
      me.y = run(me.att, take_rows(o_, H, range(r * hq * dv, hq * dv)));
    } else {
      throw InternalError("data mode does not know the MLA GEMM " + name, __FILE__, __LINE__);
    }
  }
  return took;
}

ps_t MlaLayerData::vector(const LlmVecConfig& x, const std::string& name) {
  const std::int64_t M = a_.M, w0 = qw() + a_.lat, hq = a_.hq, dr = a_.dr, C = a_.C;
  const Rank& first = rank_[0];
  KernelValues v;
  if (name == "q_a_norm") {  // replicated: run once
    v.in = {columns(first.qkva, M, w0, 0, a_.Q), w_.q_a_norm};
    const ps_t took = llm_vec_reference(x, nullptr, &v).latency_ps;
    qa_ = std::move(v.out);
    return took;
  }
  if (name == "kv_a_norm") {
    v.in = {columns(first.qkva, M, w0, qw(), C), w_.kv_a_norm};
    const ps_t took = llm_vec_reference(x, nullptr, &v).latency_ps;
    ckv_ = std::move(v.out);
    return took;
  }
  if (name == "kv_append") {  // the normed latent and the rotated k, into the cache's type
    Values rows(static_cast<std::size_t>(M * a_.lat));
    for (std::int64_t m = 0; m < M; ++m) {
      std::copy_n(ckv_.begin() + m * C, C, rows.begin() + m * a_.lat);
      std::copy_n(first.krope.begin() + m * dr, dr, rows.begin() + m * a_.lat + C);
    }
    v.in = {std::move(rows)};
    const ps_t took = llm_vec_reference(x, nullptr, &v).latency_ps;
    kv_new_ = std::move(v.out);
    wave_done_ = 0;
    return took;
  }
  if (name != "rope") throw InternalError("data mode does not know the MLA vector kernel " + name, __FILE__, __LINE__);
  // Each rank: its heads' rotated query values (scaled, decode), then the shared k's.
  const Values table = rope_table(a_, dr);
  ps_t took = -1;
  for (Rank& me : rank_) {
    Values in(static_cast<std::size_t>(M * (hq + 1) * dr));
    const Values& q = queries(me);
    for (std::int64_t m = 0; m < M; ++m) {
      for (std::int64_t j = 0; j < hq; ++j)
        for (std::int64_t e = 0; e < dr; ++e)
          in[static_cast<std::size_t>((m * (hq + 1) + j) * dr + e)] =
              round_to(DType::f16, static_cast<float>(q[static_cast<std::size_t>(m * hq * a_.d + j * a_.d + a_.dn + e)] * alpha_));
      std::copy_n(me.qkva.begin() + m * w0 + qw() + C, dr, in.begin() + (m * (hq + 1) + hq) * dr);
    }
    KernelValues kv;
    kv.in = {std::move(in), table};
    same_time(took, llm_vec_reference(x, nullptr, &kv).latency_ps, name);
    me.qrope.assign(static_cast<std::size_t>(M * hq * dr), 0.0f), me.krope.assign(static_cast<std::size_t>(M * dr), 0.0f);
    for (std::int64_t m = 0; m < M; ++m) {
      std::copy_n(kv.out.begin() + m * (hq + 1) * dr, hq * dr, me.qrope.begin() + m * hq * dr);
      std::copy_n(kv.out.begin() + (m * (hq + 1) + hq) * dr, dr, me.krope.begin() + m * dr);
    }
  }
  return took;
}

ps_t MlaLayerData::attention(const DecodeConfig& dc) {
  const std::int64_t n = dc.batch, b0 = wave_done_, S = a_.S, L = a_.lat, hq = a_.hq, C = a_.C, dr = a_.dr;
  ps_t took = -1;
  for (Rank& me : rank_) {
    if (me.latatt.empty()) me.latatt.assign(static_cast<std::size_t>(a_.M * hq * C), 0.0f);
    Values q(static_cast<std::size_t>(n * hq * L)), K(static_cast<std::size_t>(n * L * S));
    for (std::int64_t b = 0; b < n; ++b) {
      const std::int64_t row = b0 + b;
      for (std::int64_t j = 0; j < hq; ++j) {
        std::copy_n(me.qabs.begin() + (row * hq + j) * C, C, q.begin() + (b * hq + j) * L);
        std::copy_n(me.qrope.begin() + (row * hq + j) * dr, dr, q.begin() + (b * hq + j) * L + C);
      }
      for (std::int64_t s = 0; s < S; ++s)  // K transposed, [latent value, position]
        for (std::int64_t e = 0; e < L; ++e)
          K[static_cast<std::size_t>((b * L + e) * S + s)] =
              s + 1 < S ? cache_[static_cast<std::size_t>((row * (S - 1) + s) * L + e)] : kv_new_[static_cast<std::size_t>(row * L + e)];
    }
    KernelValues v;
    v.in = {std::move(q), std::move(K)};
    same_time(took, decode_reference(dc, nullptr, &v).latency_ps, "attention");
    for (std::int64_t b = 0; b < n; ++b)
      std::copy_n(v.out.begin() + b * hq * C, hq * C, me.latatt.begin() + (b0 + b) * hq * C);
  }
  wave_done_ += n;
  return took;
}

ps_t MlaLayerData::attention(const LlmAttnConfig& x) {
  const std::int64_t T = a_.T, d = a_.d, dn = a_.dn, dv = a_.dv, dr = a_.dr, hq = a_.hq, KV = a_.B * hq, kvw = dn + dv;
  ps_t took = -1;
  for (Rank& me : rank_) {
    const Values& qs = queries(me);
    Values q(static_cast<std::size_t>(KV * T * d)), K(q.size()), V(static_cast<std::size_t>(KV * T * dv));
    for (std::int64_t b = 0; b < a_.B; ++b)
      for (std::int64_t j = 0; j < hq; ++j) {
        const std::int64_t u = b * hq + j;
        for (std::int64_t t = 0; t < T; ++t) {
          const std::int64_t row = b * T + t;
          for (std::int64_t e = 0; e < d; ++e) {
            const bool nope = e < dn;
            q[static_cast<std::size_t>((u * T + t) * d + e)] =
                nope ? qs[static_cast<std::size_t>(row * hq * d + j * d + e)] : me.qrope[static_cast<std::size_t>((row * hq + j) * dr + e - dn)];
            K[static_cast<std::size_t>((u * d + e) * T + t)] =
                nope ? me.kvb[static_cast<std::size_t>(row * hq * kvw + j * kvw + e)] : me.krope[static_cast<std::size_t>(row * dr + e - dn)];
          }
          std::copy_n(me.kvb.begin() + row * hq * kvw + j * kvw + dn, dv, V.begin() + (u * T + t) * dv);
        }
      }
    KernelValues v;
    v.in = {std::move(q), std::move(K), std::move(V)};
    same_time(took, llm_attn_reference(x, nullptr, &v).latency_ps, "attention");
    me.att.assign(static_cast<std::size_t>(a_.M * hq * dv), 0.0f);
    for (std::int64_t b = 0; b < a_.B; ++b)
      for (std::int64_t j = 0; j < hq; ++j)
        for (std::int64_t t = 0; t < T; ++t)
          std::copy_n(v.out.begin() + ((b * hq + j) * T + t) * dv, dv, me.att.begin() + ((b * T + t) * hq + j) * dv);
  }
  return took;
}

Dense mla_f64(const Dims& a, const MlaWeights& w, const Values& o, const Dense& hn, const Values& cache) {
  const std::int64_t M = a.M, H = a.H, d = a.d, dn = a.dn, dv = a.dv, dr = a.dr, C = a.C, L = a.lat;
  const std::int64_t qall = a.Q > 0 ? a.Q : a.heads * d, kvw = dn + dv;
  const Dense qkva = matmul(hn, M, H, w.q_kv_a, qall + L);
  auto cols = [&](std::int64_t c0, std::int64_t n) {
    Dense out(static_cast<std::size_t>(M * n));
    for (std::int64_t m = 0; m < M; ++m) std::copy_n(qkva.begin() + m * (qall + L) + c0, n, out.begin() + m * n);
    return out;
  };
  Dense q = a.Q > 0 ? matmul(rms_norm(cols(0, a.Q), M, a.Q, w.q_a_norm), M, a.Q, w.q_b, a.heads * d) : cols(0, a.heads * d);
  const Dense ckv = rms_norm(cols(qall, C), M, C, w.kv_a_norm);
  Dense kr = cols(qall + C, dr);
  // RoPE over a head's last dr values and the shared k, at the row's position.
  auto pos_of = [&](std::int64_t m) { return a.decode ? a.S - 1 : m % a.T; };
  for (std::int64_t m = 0; m < M; ++m) {
    for (std::int64_t j = 0; j < a.heads; ++j) rope_f64(q.data() + m * a.heads * d + j * d + dn, dr, pos_of(m));
    rope_f64(kr.data() + m * dr, dr, pos_of(m));
  }
  // Position s of row m's sequence: its latent and rotated k (the cache's, or a row's own).
  auto latent = [&](std::int64_t m, std::int64_t s, std::int64_t e) -> double {
    const std::int64_t b = m / a.T;
    if (a.decode && s + 1 < a.S) return cache[static_cast<std::size_t>((b * (a.S - 1) + s) * L + e)];
    const std::int64_t row = a.decode ? m : b * a.T + s;
    return e < C ? ckv[static_cast<std::size_t>(row * C + e)] : kr[static_cast<std::size_t>(row * dr + e - C)];
  };
  Dense att(static_cast<std::size_t>(M * a.heads * dv), 0.0);
  std::vector<double> score, k(static_cast<std::size_t>(dn)), lat(static_cast<std::size_t>(L));
  std::vector<std::vector<double>> vals;
  for (std::int64_t m = 0; m < M; ++m) {
    const std::int64_t last = pos_of(m);
    for (std::int64_t j = 0; j < a.heads; ++j) {
      score.assign(static_cast<std::size_t>(last + 1), 0.0);
      vals.assign(static_cast<std::size_t>(last + 1), std::vector<double>(static_cast<std::size_t>(dv), 0.0));
      double top = -1e300;
      for (std::int64_t s = 0; s <= last; ++s) {
        for (std::int64_t e = 0; e < L; ++e) lat[static_cast<std::size_t>(e)] = latent(m, s, e);
        std::fill(k.begin(), k.end(), 0.0);
        for (std::int64_t c = 0; c < C; ++c)  // the head's k and v from the latent (expanded)
          for (std::int64_t e = 0; e < kvw; ++e) {
            const double x = lat[static_cast<std::size_t>(c)] * w.kv_b[static_cast<std::size_t>(c * a.heads * kvw + j * kvw + e)];
            if (e < dn) k[static_cast<std::size_t>(e)] += x;
            else vals[static_cast<std::size_t>(s)][static_cast<std::size_t>(e - dn)] += x;
          }
        double dot = 0;
        const double* qr = q.data() + m * a.heads * d + j * d;
        for (std::int64_t e = 0; e < dn; ++e) dot += qr[e] * k[static_cast<std::size_t>(e)];
        for (std::int64_t e = 0; e < dr; ++e) dot += qr[dn + e] * lat[static_cast<std::size_t>(C + e)];
        score[static_cast<std::size_t>(s)] = dot / std::sqrt(static_cast<double>(d));
        top = std::max(top, score[static_cast<std::size_t>(s)]);
      }
      double sum = 0;
      for (double& x : score) sum += (x = std::exp(x - top));
      for (std::int64_t s = 0; s <= last; ++s)
        for (std::int64_t e = 0; e < dv; ++e)
          att[static_cast<std::size_t>((m * a.heads + j) * dv + e)] += score[static_cast<std::size_t>(s)] / sum * vals[static_cast<std::size_t>(s)][static_cast<std::size_t>(e)];
    }
  }
  return matmul(att, M, a.heads * dv, o, H);
}

}  // namespace llm_data
}  // namespace kb
