// A whole model on the machine: how tensor and pipeline parallelism place it (which ranks
// hold which shard of the weights and KV cache, and how many bytes each cube's HBM holds),
// and the bounds no mapping can beat (docs/model.md section 13.2). Pure integer arithmetic,
// for both engines and the batched model.
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "../collective/collective.h"
#include "llm_moe.h"
#include "llm_shape.h"

namespace kb {

enum class LlmPhase : std::int64_t { decode = 0, prefill = 1 };

// A mapping and the work of one step. Tensor parallelism over `tp` ranks of level `tp_level`
// (CollLevel: PEs of a cube, cubes of a SIP, SIPs, or every PE of some cubes or SIPs, as a
// collective's ranks are); pipeline parallelism over `pp` stages, each its own SIPs.
struct LlmRun {
  std::int64_t phase;         // LlmPhase
  std::int64_t batch;         // sequences
  std::int64_t context;       // decode: KV positions each sequence's new token attends to, its own included
  std::int64_t prompt;        // prefill: tokens of each prompt
  std::int64_t weight_bytes;  // 1 or 2 bytes a weight
  std::int64_t kv_bytes;      // 1 or 2 bytes a KV cache value
  std::int64_t tp, tp_level, pp;
  // Layers of each stage (--pp-layers), or null (or a first entry of 0): an even split.
  const std::int16_t* stage_layers = nullptr;
  // A mixture-of-experts model (docs/model.md section 13.11): the experts expert-parallel over
  // the tp group, its attention tensor-parallel (attention_dp 0) or data-parallel (1: each
  // rank batch / tp sequences, every attention weight); `redundant` extra copies of the
  // hottest experts; `dispatch_bytes` a value dispatched; the tokens routed to each expert
  // in a micro-batch (the host's router fixes them).
  std::int64_t attention_dp = 0, redundant = 0, dispatch_bytes = 2;
  const std::int32_t* expert_tokens = nullptr;
  // The placement's load of those tokens (moe_load), when the caller has it: placed once a
  // config, not once for each stage and each kind of layer.
  const MoeLoad* load = nullptr;
  // Prefill: positions of each sequence cached before its prompt's tokens (chunked prefill:
  // the step takes a chunk of a prompt an earlier step began), attended to and held.
  std::int64_t prior = 0;
};

// The load of a MoE run's tokens over its tp ranks: the caller's, or placed now.
KB_HD inline MoeLoad llm_moe_load(const LlmShape& m, const LlmRun& r) {
  return r.load ? *r.load : moe_load(r.expert_tokens, m.experts, r.tp, r.redundant);
}

constexpr std::int64_t kLlmMaxStages = 64;

constexpr std::int64_t kLlmMaxBatch = 4096;
constexpr std::int64_t kLlmMaxPrompt = INT64_C(1) << 20;

#define KB_LLM_PLACE_STATUSES(X)                                                                        \
  X(kLlmOk, "valid")                                                                                    \
  X(kLlmBadField, "bad_field")        /* phase, level, batch, context, prompt or bytes out of range */  \
  X(kLlmBadTp, "bad_tp")              /* tp outside 1..the level's ranks, or not dividing the heads */  \
  X(kLlmBadPp, "bad_pp")              /* pp outside 1..min(layers, 64), too few SIPs, or a split that does not fit */ \
  X(kLlmHbmOverflow, "hbm_overflow")  /* a cube's weights, KV cache and activations exceed its HBM */ \
  X(kLlmTooLarge, "too_large")        /* the step's FLOPs, bytes or time beyond int64 */               \
  X(kLlmUnsupported, "unsupported")   /* reserved: every mapping placed is timed */                   \
  X(kLlmBadKernel, "bad_kernel")      /* a kernel of the layer program its family refuses */          \
  X(kLlmBadExperts, "bad_experts")    /* experts that do not place on the ranks, or a batch data-parallel attention does not split */

enum LlmPlaceStatus : std::int32_t {
#define KB_LLM_ENUM(e, name) e,
  KB_LLM_PLACE_STATUSES(KB_LLM_ENUM)
#undef KB_LLM_ENUM
  kLlmPlaceStatusCount
};
#define KB_LLM_NAME(e, name) name,
constexpr const char* kLlmPlaceStatusNames[] = {KB_LLM_PLACE_STATUSES(KB_LLM_NAME)};
#undef KB_LLM_NAME

// Tokens of one step: a new token per sequence (decode), or every prompt token (prefill).
KB_HD inline std::int64_t llm_tokens(const LlmRun& r) {
  return r.phase == static_cast<std::int64_t>(LlmPhase::decode) ? r.batch : r.batch * r.prompt;
}
// KV positions each sequence holds after the step.
KB_HD inline std::int64_t llm_positions(const LlmRun& r) {
  return r.phase == static_cast<std::int64_t>(LlmPhase::decode) ? r.context : r.prior + r.prompt;
}

// How a stage's SIPs, cubes and PEs form its tp ranks: the PEs of one rank, the ranks
// sharing one cube, and the cubes one rank spreads over.
struct LlmRanks {
  std::int64_t sips_per_stage;  // SIPs a pipeline stage occupies
  std::int64_t ranks_per_cube;  // ranks whose shards share one cube's HBM (pe, hier)
  std::int64_t cubes_per_rank;  // cubes one rank's shard is spread over (sip)
  std::int64_t pes_per_rank;    // PEs that compute for one rank
  std::int64_t cubes_used;      // cubes of the stage's ranks, every stage
};
KB_HD inline LlmRanks llm_ranks(const HwConfig& h, const LlmRun& r) {
  const std::int64_t C = h.cubes_per_sip(), P = h.pes_per_cube(), t = r.tp;
  LlmRanks k{1, 1, 1, 1, 1};
  switch (static_cast<CollLevel>(r.tp_level)) {
    case CollLevel::pe: k = LlmRanks{1, t, 1, 1, 1}; break;
    case CollLevel::cube: k = LlmRanks{1, 1, 1, P, t}; break;
    case CollLevel::sip: k = LlmRanks{t, 1, C, C * P, t * C}; break;
    case CollLevel::hier: {
      // The first t PEs of the stage: a part of one cube, whole cubes of a SIP, or whole SIPs.
      const std::int64_t cubes = ceil_div(t, P);
      k = LlmRanks{ceil_div(cubes, C), t < P ? t : P, 1, 1, cubes};
      break;
    }
  }
  k.cubes_used *= r.pp;
  return k;
}

// Layers of stage s: as --pp-layers gives them, or an even split, the first stages taking
// one more when it is uneven.
KB_HD inline bool llm_split_given(const LlmRun& r) { return r.stage_layers != nullptr && r.stage_layers[0] != 0; }
KB_HD inline std::int64_t llm_stage_layers(const LlmShape& m, const LlmRun& r, std::int64_t s) {
  if (llm_split_given(r)) return r.stage_layers[s];
  return m.layers / r.pp + (s < m.layers % r.pp ? 1 : 0);
}
// The first layer of stage s.
KB_HD inline std::int64_t llm_stage_first_layer(const LlmShape& m, const LlmRun& r, std::int64_t s) {
  std::int64_t first = 0;
  for (std::int64_t i = 0; i < s; ++i) first += llm_stage_layers(m, r, i);
  return first;
}
// Dense layers of stage s: of a dense model every one; of a MoE model those of the model's
// first dense_layers that fall in the stage.
KB_HD inline std::int64_t llm_stage_dense_layers(const LlmShape& m, const LlmRun& r, std::int64_t s) {
  const std::int64_t L = llm_stage_layers(m, r, s);
  if (m.experts == 0) return L;
  const std::int64_t d = m.dense_layers - llm_stage_first_layer(m, r, s);
  return d < 0 ? 0 : d > L ? L : d;
}
// Layers without RoPE (Llama 4's) among the first `run` layers of stage s.
KB_HD inline std::int64_t llm_stage_nope_layers(const LlmShape& m, const LlmRun& r, std::int64_t s, std::int64_t run) {
  if (m.nope_every <= 0) return 0;
  const std::int64_t first = llm_stage_first_layer(m, r, s);
  return (first + run) / m.nope_every - first / m.nope_every;
}
// Layers of the second kind (llm_alt_layers) among the first `run` layers of stage s: a MoE
// model's dense layers (the model's first, run before its MoE layers), or those without RoPE.
KB_HD inline std::int64_t llm_stage_alt_layers(const LlmShape& m, const LlmRun& r, std::int64_t s, std::int64_t run) {
  if (m.experts > 0 && m.dense_layers > 0) {
    const std::int64_t d = llm_stage_dense_layers(m, r, s);
    return d < run ? d : run;
  }
  return llm_stage_nope_layers(m, r, s, run);
}
// Whether a given split has pp stages (the rest of the list 0), each of at least one layer,
// adding up to the model's layers; true for an even split.
KB_HD inline bool llm_split_fits(const LlmShape& m, const LlmRun& r) {
  if (!llm_split_given(r)) return true;
  std::int64_t sum = 0;
  for (std::int64_t s = 0; s < kLlmMaxStages; ++s) {
    const std::int64_t l = r.stage_layers[s];
    if (s < r.pp ? l < 1 : l != 0) return false;
    sum += l;
  }
  return sum == m.layers;
}

// KV heads one tp rank holds: its share, or one head when there are more ranks than KV
// heads (each KV head is then replicated on tp / kv_heads ranks, as its query heads split).
KB_HD inline std::int64_t llm_rank_kv_heads(const LlmShape& m, std::int64_t tp) {
  return tp <= m.kv_heads ? m.kv_heads / tp : 1;
}

// What one tp rank of stage s holds in HBM, in bytes (docs/model.md section 13.2).
struct LlmRankBytes {
  std::int64_t weights, kv, activations;
};
KB_HD inline LlmRankBytes llm_rank_bytes(const LlmShape& m, const LlmRun& r, std::int64_t s) {
  const std::int64_t t = r.tp, layers = llm_stage_layers(m, r, s), ta = r.attention_dp ? 1 : t;
  const std::int64_t q = llm_q_width(m) / ta, kv = llm_rank_kv_heads(m, ta) * m.head_dim;
  // A dense MLP: tensor-parallel, or whole on each rank under data-parallel attention.
  const std::int64_t inter = r.attention_dp ? m.intermediate : ceil_div(m.intermediate, t);
  // Column splits (Q, K, V, gate, up), row splits (O, down), the norms on every rank; a MoE
  // layer's router on every rank, the copies of routed experts the rank holds, and its part
  // of the shared expert.
  // Latent attention: the down-projections on every rank, the rest split by heads.
  const std::int64_t norms = llm_params(m).norms;
  const std::int64_t attention = llm_mla(m) ? llm_mla_replicated(m) + llm_mla_split(m) / ta : m.hidden * (q + 2 * kv) + q * m.hidden;
  const std::int64_t dense_mlp = 3 * m.hidden * inter;
  std::int64_t mlp = dense_mlp, moe_rows = 0;
  if (m.experts > 0) {
    const MoeLoad load = llm_moe_load(m, r);
    const std::int64_t shared = r.attention_dp ? m.shared_intermediate : ceil_div(m.shared_intermediate, t);
    mlp = llm_router_params(m) + load.slots * llm_expert_params(m) + 3 * m.hidden * shared;
    moe_rows = load.rank_tokens;
  }
  const std::int64_t dense = llm_stage_dense_layers(m, r, s);
  std::int64_t params = dense * (attention + dense_mlp + norms) + (layers - dense) * (attention + mlp + norms);
  const std::int64_t vocab = ceil_div(m.vocab, t) * m.hidden;  // vocab-parallel embedding and LM head
  if (s == 0) params += vocab;
  if (s == r.pp - 1) params += m.hidden + (m.tied && r.pp == 1 ? 0 : vocab);
  LlmRankBytes b;
  b.weights = params * r.weight_bytes;
  // Data-parallel attention: the rank's own sequences.
  const std::int64_t seqs = r.attention_dp ? r.batch / t : r.batch;
  // Latent attention caches the latent and the rotated k of every head on every rank; a
  // layer of chunked attention at most a chunk of positions.
  const std::int64_t chunked = m.attn_chunk > 0 ? layers - llm_stage_nope_layers(m, r, s, layers) : 0;
  const std::int64_t held = llm_layers_held(layers, chunked, llm_positions(r), m.attn_chunk);
  b.kv = (llm_mla(m) ? llm_latent_width(m) : 2 * kv) * seqs * held * r.kv_bytes;
  // A layer's tensors on the rank, all live at once (an upper bound): its input, Q, K and V,
  // the attention's output, gate and up (fp16); a MoE layer's routed tokens, each with its
  // expert's gate and up; the logits of the last stage. Latent attention's K and V: the
  // latent, and each head's expanded k and v (prefill).
  const std::int64_t tokens = r.attention_dp ? llm_tokens(r) / t : llm_tokens(r);
  const std::int64_t qkv = llm_mla(m) ? 2 * q + m.q_lora + llm_latent_width(m) + m.heads / ta * (m.head_dim + m.v_head)
                                      : 2 * q + 2 * kv;
  b.activations = tokens * (m.hidden + qkv + 2 * inter) * 2;
  if (m.experts > 0) {
    const std::int64_t moe = (tokens * (m.hidden + qkv + 2 * ceil_div(m.shared_intermediate, ta)) +
                              moe_rows * (m.hidden + 2 * m.moe_intermediate)) * 2;
    if (dense == 0 || moe > b.activations) b.activations = moe;
  }
  if (s == r.pp - 1) b.activations += r.batch * ceil_div(m.vocab, t) * 2;
  return b;
}

// The fullest cube: its bytes by kind, and which stage it is in.
struct LlmCubeBytes {
  std::int64_t weights, kv, activations, total, stage;
};
KB_HD inline LlmCubeBytes llm_fullest_cube(const HwConfig& h, const LlmShape& m, const LlmRun& r) {
  const LlmRanks k = llm_ranks(h, r);
  LlmCubeBytes most{0, 0, 0, -1, 0};
  for (std::int64_t s = 0; s < r.pp; ++s) {
    const LlmRankBytes b = llm_rank_bytes(m, r, s);
    // A rank spread over several cubes puts an even share (rounded up) on each.
    const std::int64_t n = k.ranks_per_cube, d = k.cubes_per_rank;
    LlmCubeBytes c{n * ceil_div(b.weights, d), n * ceil_div(b.kv, d), n * ceil_div(b.activations, d), 0, s};
    c.total = c.weights + c.kv + c.activations;
    if (c.total > most.total) most = c;
  }
  return most;
}

// a * b + c, or -1 when it would pass int64 (every operand >= 0).
KB_HD inline std::int64_t llm_mul_add(std::int64_t a, std::int64_t b, std::int64_t c) {
  if (a < 0 || c < 0 || (a != 0 && b > (INT64_MAX - c) / a)) return -1;
  return a * b + c;
}

// The bounds of one step (docs/model.md section 13.2): the multiply-accumulates that must be
// done (the layer program's, section 13.3) at the peak of every PE the mapping uses, and the bytes that must be read (every
// weight a token multiplies by once, the embedding rows of the step's tokens, and the KV
// cache a decode step attends to) at the HBM bandwidth of every cube it uses. Negative
// figures: beyond int64 (llm_place_check: too_large).
struct LlmBounds {
  std::int64_t macs, read_bytes;
  ps_t compute_ps, memory_ps;
};
KB_HD inline LlmBounds llm_bounds(const HwConfig& h, const LlmShape& m, const LlmRun& r) {
  const LlmRanks k = llm_ranks(h, r);
  const LlmParams p = llm_params(m);
  const std::int64_t tokens = llm_tokens(r), pes = r.tp * k.pes_per_rank * r.pp;
  LlmBounds b{-1, -1, -1, -1};
  // Q.K^T and P.V of one layer: a decoded token attends to `context` positions, prompt token
  // i (from 1) to i of its prompt; under chunked attention, to those of its own chunk.
  const bool decode = r.phase == static_cast<std::int64_t>(LlmPhase::decode);
  const std::int64_t chunked = llm_chunked_layers(m), W = m.attn_chunk;
  // A prompt's chunk after `prior` cached positions (chunked attention has none) attends to them too.
  const std::int64_t pairs = decode ? r.context : r.prompt * (r.prompt + 1) / 2 + r.prompt * r.prior;
  const std::int64_t chunk_pairs = decode ? llm_window_positions(r.context, W) : llm_window_pairs(r.prompt, W);
  const std::int64_t attention = llm_mul_add(r.batch * llm_pair_macs(m, decode), pairs, 0);
  const std::int64_t chunk_attention = llm_mul_add(r.batch * llm_pair_macs(m, decode), chunk_pairs, 0);
  const std::int64_t all_attention = llm_mul_add(attention, m.layers - chunked, llm_mul_add(chunk_attention, chunked, 0));
  if (attention < 0 || all_attention < 0) return b;
  // Every token through every layer's projections; the LM head for each sequence's last token.
  const std::int64_t head = m.vocab * m.hidden;
  b.macs = llm_mul_add(tokens, p.matmul - head, llm_mul_add(r.batch, head, all_attention));
  // A MoE step reads the experts its tokens touch, not top_k of them.
  std::int64_t matmul = p.matmul;
  if (m.experts > 0) {
    std::int64_t touched = 0;
    for (std::int64_t e = 0; e < m.experts; ++e) touched += r.expert_tokens[e] > 0;
    matmul += llm_moe_layers(m) * (touched - m.top_k) * llm_expert_params(m);
  }
  const std::int64_t weights = (matmul + m.layers * p.norms + p.final_norm) * r.weight_bytes;
  b.read_bytes = llm_mul_add(tokens, m.hidden * r.weight_bytes, weights);
  if (decode && b.read_bytes >= 0) {  // the positions before the new one, of each layer
    const std::int64_t seen = llm_layers_seen(m.layers, chunked, r.context, W) - m.layers;
    b.read_bytes = llm_mul_add(r.batch * seen, llm_kv_bytes_per_token(m, r.kv_bytes) / m.layers, b.read_bytes);
  }
  if (!decode && r.prior > 0 && b.read_bytes >= 0)  // the positions cached before the prompt, of each layer
    b.read_bytes = llm_mul_add(r.batch * r.prior, llm_kv_bytes_per_token(m, r.kv_bytes), b.read_bytes);
  if (b.macs < 0 || b.read_bytes < 0) return LlmBounds{-1, -1, -1, -1};
  const std::int64_t cycles = ceil_div(b.macs, pes * h.matrix_rows * h.matrix_cols);
  b.compute_ps = cycles > kTimeLimitPs / 1000000 ? -1 : cycles_ps(cycles, h.clock_mhz);
  b.memory_ps = b.read_bytes > kTimeLimitPs / 1000 ? -1 : transfer_ps(b.read_bytes, k.cubes_used * h.hbm_bandwidth_gbps);
  if (b.compute_ps < 0 || b.memory_ps < 0) return LlmBounds{-1, -1, -1, -1};
  return b;
}

// Ranks of level hier are a collective's hier ranks (coll_hier_dims): part of one cube's
// PEs, whole cubes of one SIP, or whole SIPs.
KB_HD inline bool llm_hier_fits(const HwConfig& h, std::int64_t tp) {
  const std::int64_t ppc = h.pes_per_cube(), pps = ppc * h.cubes_per_sip();
  return tp <= ppc || (tp % ppc == 0 && tp <= pps) || (tp % pps == 0 && tp / pps <= h.sips);
}

KB_HD inline std::int32_t llm_place_check(const HwConfig& h, const LlmShape& m, const LlmRun& r) {
  if (r.phase < 0 || r.phase > 1 || r.tp_level < 0 || r.tp_level >= kCollLevels || r.batch < 1 ||
      r.batch > kLlmMaxBatch || r.weight_bytes < 1 || r.weight_bytes > 2 || r.kv_bytes < 1 || r.kv_bytes > 2)
    return kLlmBadField;
  if (r.phase == static_cast<std::int64_t>(LlmPhase::decode) ? (r.context < 1 || r.context > kLlmMaxContext)
                                                             : (r.prompt < 1 || r.prompt > kLlmMaxPrompt))
    return kLlmBadField;
  // Data-parallel attention splits sequences, not heads.
  const std::int64_t ta = r.attention_dp ? 1 : r.tp;
  if (r.tp < 1 || r.tp > coll_level_size(h, r.tp_level) || m.heads % ta != 0 ||
      (ta <= m.kv_heads ? m.kv_heads % ta : ta % m.kv_heads) != 0 ||
      (r.tp_level == static_cast<std::int64_t>(CollLevel::hier) && !llm_hier_fits(h, r.tp)))
    return kLlmBadTp;
  if (r.pp < 1 || r.pp > m.layers || r.pp > kLlmMaxStages || r.pp * llm_ranks(h, r).sips_per_stage > h.sips ||
      !llm_split_fits(m, r))
    return kLlmBadPp;
  if (m.experts > 0 && (r.expert_tokens == nullptr || moe_place_check(m.experts, r.tp, r.redundant) != kMoePlaceOk ||
                        (r.attention_dp && r.batch % r.tp != 0)))
    return kLlmBadExperts;
  if (llm_bounds(h, m, r).macs < 0 || llm_mul_add(llm_kv_bytes_per_token(m, r.kv_bytes), r.batch * llm_positions(r), 0) < 0)
    return kLlmTooLarge;
  if (llm_fullest_cube(h, m, r).total > h.hbm_capacity_bytes()) return kLlmHbmOverflow;
  return kLlmOk;
}

}  // namespace kb
