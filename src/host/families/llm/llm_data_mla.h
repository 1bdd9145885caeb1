// Data mode of multi-head latent attention (docs/model.md sections 13.9 and 13.12): the
// kernels of the timing run's MLA program on every tensor-parallel rank with values (decode
// absorbed over the latent cache, prefill expanded), and the float64 pass of the same block
// in its expanded form. Host only, values only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm_data_detail.h"

namespace kb {
namespace llm_data {

// An MLA layer's weights (B of each GEMM is [in, out]); its O projection is [heads dv, H].
struct MlaWeights {
  Values q_kv_a;     // [H, (Q or heads d) + C + dr]: the query latent (or the queries), the KV latent, the rotated k
  Values q_a_norm;   // [Q] (Q > 0)
  Values kv_a_norm;  // [C]
  Values q_b;        // [Q, heads d] (Q > 0): each head's dn values, then its dr rotated ones
  Values kv_b;       // [C, heads (dn + dv)]: each head's k (dn), then its v (dv)
};

MlaWeights draw_mla_weights(const Dims& a, std::uint64_t seed, std::uint64_t* id);

// An MLA layer's attention kernels on the tp ranks, with values. The decode kernel scales its
// scores by 1 / sqrt(C + dr), its head width; MLA's are 1 / sqrt(dn + dr): data mode scales
// the queries (their dn values on the way to q_absorb, their rotated dr on the way to RoPE;
// fp16 activations) by sqrt((C + dr) / (dn + dr)), as a deployment folds the scale.
class MlaLayerData {
 public:
  // `cache`: the micro-batch's earlier positions, [B, S - 1, C + dr].
  MlaLayerData(const Dims& a, const MlaWeights& w, const Values& o, const Values& cache);
  static bool handles(const std::string& name);
  // `h`: the normalized activations [M, H] (attn_norm's).
  ps_t gemm(const GemmConfig& g, const std::string& name, const Values& h);
  ps_t vector(const LlmVecConfig& x, const std::string& name);
  ps_t attention(const DecodeConfig& d);  // a wave of the batch's sequences, in turn
  ps_t attention(const LlmAttnConfig& x);
  // After o_proj: rank r's partial sum of the output, [M, H].
  const Values& y(std::int64_t r) const { return rank_[static_cast<std::size_t>(r)].y; }

 private:
  struct Rank {
    Values qkva;     // [M, qw + C + dr]
    Values q;        // [M, hq d]: its heads' queries
    Values qrope;    // [M, hq dr]: their rotated parts
    Values krope;    // [M, dr]: the rotated shared k
    Values qabs;     // [M, hq C]: decode, each head's absorbed query
    Values latatt;   // [M, hq C]: decode, each head's attention over the latents
    Values kvb;      // [M, hq (dn + dv)]: prefill, each head's k and v
    Values att, y;   // [M, hq dv]; [M, H]
  };
  std::int64_t qw() const { return a_.Q > 0 ? a_.Q : a_.hq * a_.d; }  // a rank's query columns of q_kv_a
  std::int64_t model_head(std::int64_t r, std::int64_t g) const { return r * a_.hq + g; }
  const Values& queries(Rank& me);
  const Dims& a_;
  const MlaWeights& w_;
  const Values& o_;
  const Values& cache_;
  double alpha_;  // the queries' scale (decode; 1 in prefill)
  Values qa_, ckv_, kv_new_;  // replicated: the query latent, the KV latent (normed), the appended rows
  std::int64_t wave_done_ = 0;
  std::vector<Rank> rank_;
};

// The float64 MLA block, expanded (every head's k and v from the latents), on the normalized
// activations hn [M, H] with the decode cache [B, S - 1, C + dr]: O's output, [M, H].
Dense mla_f64(const Dims& a, const MlaWeights& w, const Values& o, const Dense& hn, const Values& cache);

}  // namespace llm_data
}  // namespace kb
