// Batched model of whole-model inference (docs/model.md section 13.5): one step of a LLaMA
// model under a tensor-parallel mapping, composed from the families' models. The layer
// program (llm_layer.h) is run kernel by kernel on one rank, each kernel from the end of the
// one before on every rank (a barrier between kernels, in both engines: ADR 0019); the ranks
// of a tensor-parallel group run alike, so one rank's kernels are the step's. A kernel is
// timed by its family's model on the rank's machine (gemm, decode attention, allreduce over
// the group) or by the vector-kernel model (llm_vector.h). The layers are identical, so a
// layer is timed once and counted `layers` times.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/kernel_memo.h"
#include "../../common/units.h"
#include "../collective/allreduce_model.h"
#include "../decode/decode_model.h"
#include "../gemm/gemm_model.h"
#include "../gemm/gemm_tune.h"
#include "llm_attention.h"
#include "llm_attn_tune.h"
#include "llm_layer.h"
#include "llm_mapping.h"
#include "llm_pipeline.h"
#include "llm_vector.h"

namespace kb {

// How a step's kernels are tuned: best, each GEMM on the tiling of least latency of the gemm
// family's space on the rank's machine (gemm_tune.h) and each attention on its chunk or tile
// of least latency (llm_attn_tune.h), as a tuned software stack would run them; auto, the gemm
// family's automatic tiling (gemm_auto.h: least estimated latency) and the attention kernels'
// automatic chunks and tiles.
enum class LlmKernelTuning : std::int64_t { best = 0, automatic = 1 };
constexpr const char* kLlmKernelTuningNames[] = {"best", "auto"};

// Every field an int64 (sweep axes set fields by offset).
struct LlmConfig {
  HwConfig hw;
  std::int64_t hidden, intermediate, heads, kv_heads, head_dim, layers, vocab, tied;  // LlmShape
  std::int64_t weight_bytes, kv_bytes;
  std::int64_t phase, batch, context, prompt;
  std::int64_t tp, tp_level, pp;
  std::int64_t tp_algo;         // CollAlgo of the tensor-parallel allreduce
  std::int64_t attention_case;  // 1..4: the decode family's KV sharding on a rank
  std::int64_t layers_run;      // layers a stage runs on both engines (0: every layer)
  std::int64_t microbatches;    // the batch in this many equal micro-batches, through the stages in turn
  std::int64_t kernel_tuning;   // LlmKernelTuning: each kernel's tiling, chunk or tile tuned (best) or automatic
  // Channels of the tensor-parallel allreduce (cube and sip levels; 0: the count of least
  // latency, as the collective's auto: docs/model.md section 11.14).
  std::int64_t tp_channels = 1;
  // A mixture-of-experts model (docs/model.md section 13.11; experts 0: a dense one): its
  // LlmShape fields, how the tp group serves it (attention data-parallel or not, redundant
  // copies of the hottest experts, bytes a dispatched value), and how the host routed the
  // tokens (LlmRouting; the alpha of zipf in thousandths; the seed).
  std::int64_t experts = 0, top_k = 0, moe_intermediate = 0, shared_intermediate = 0, qk_norm = 0, dense_layers = 0;
  std::int64_t attention_dp = 0, redundant_experts = 0, dispatch_bytes = 2;
  std::int64_t routing = 0, routing_alpha_milli = 0, routing_seed = 0;
  // The router's scores, for values only (data mode; the timing takes the routed tokens):
  // 0 softmax over the experts, 1 sigmoid with a correction bias to choose by (DeepSeek-V3's);
  // the chosen experts' scores renormalized either way (--router; a --model's scoring_func).
  std::int64_t router_scores = 0;
  // Group-limited routing (DeepSeek-V3's n_group, topk_group): the experts in `expert_groups`
  // equal groups, a token's experts from its best `topk_groups` groups (1, 1: no limit).
  std::int64_t expert_groups = 1, topk_groups = 1;
  // Multi-head latent attention (LlmShape; kv_lora 0: none).
  std::int64_t q_lora = 0, kv_lora = 0, rope_dim = 0, v_head = 0;
  // Llama 4's layers without RoPE and chunked attention (LlmShape; 0: neither).
  std::int64_t nope_every = 0, attn_chunk = 0;
  // Prefill: positions of each sequence cached before the prompt (chunked prefill's later
  // chunks; 0 otherwise; not with latent attention or chunked attention).
  std::int64_t prior = 0;
  // Layers of each pipeline stage (--pp-layers; not an axis), or all 0: an even split.
  std::int16_t stage_layers[kLlmMaxStages];
  // The tokens of one micro-batch routed to each expert (the host's router: not an axis).
  std::int32_t expert_tokens[kMoeMaxExperts];
};

// How the host routed a MoE config's tokens (src/host/llm/moe_routing.h).
enum class LlmRouting : std::int64_t { balanced = 0, uniform = 1, zipf = 2, file = 3 };
constexpr const char* kLlmRoutingNames[] = {"balanced", "uniform", "zipf", "file"};

struct LlmResult {
  std::int32_t status;
  std::int32_t reserved;  // explicit, zeroed padding: results compare bytewise
  ps_t latency_ps;        // the step as run: layers_run layers a stage, the head, the schedule
  ps_t model_latency_ps;  // the step of the whole model: every layer and the head
  ps_t layer_ps, head_ps;
  // The whole model's step by kind of kernel (with barriers, each kind's share of the
  // critical path): GEMMs, attention, vector kernels, tensor-parallel allreduces.
  ps_t gemm_ps, attention_ps, vector_ps, allreduce_ps, transfer_ps;
  std::int64_t macs;                              // the whole model's step, every rank
  std::int64_t hbm_read_bytes, hbm_write_bytes;   // the same
  std::int64_t link_bytes;                        // bytes over links, every level: allreduces and stage transfers
  // Counted actions of the whole model's step, every rank (docs/model.md section 14): vector
  // element-ops, SRAM bytes, and link bytes per level as the engine counts them (a hop into a
  // PE's in-port, over a mesh link, over a SIP link).
  std::int64_t vector_ops, sram_read_bytes, sram_write_bytes;
  std::int64_t link_bytes_pe, link_bytes_cube, link_bytes_sip;
  // A MoE step's routed experts' GEMMs (and their SiLU x up), its tokens' dispatch and its
  // outputs' combine (the step's critical path, as the kinds above), and the dispatch's and
  // the combine's bytes over links of each level, every rank. gemm_ps and vector_ps leave
  // the routed experts out, allreduce_ps the combine.
  ps_t expert_ps, dispatch_ps, combine_ps;
  std::int64_t dispatch_link_bytes[3], combine_link_bytes[3];
  ps_t dense_layer_ps;  // a MoE model's dense layer, one micro-batch (layer_ps: its MoE layer)
};

// The counted actions of each kind of kernel's result (the rank's, or the group's for an
// allreduce), as both engines' tallies take them.
KB_HD inline Actions llm_attn_actions(const LlmAttnResult& r) {
  return Actions{r.macs, r.vector_ops, r.sram_read_bytes, r.sram_write_bytes, r.hbm_read_bytes, r.hbm_write_bytes, 0, 0, 0};
}
KB_HD inline Actions llm_vec_actions(const LlmVecResult& r) {
  return Actions{0, r.vector_ops, r.sram_read_bytes, r.sram_write_bytes, r.hbm_read_bytes, r.hbm_write_bytes, 0, 0, 0};
}
KB_HD inline Actions llm_send_actions(const LlmSendResult& r) {
  return Actions{0, 0, 0, 0, r.hbm_read_bytes, r.hbm_write_bytes, r.link_bytes_pe, r.link_bytes_cube, r.link_bytes_sip};
}

KB_HD inline LlmShape llm_shape_of(const LlmConfig& c) {
  return LlmShape{c.hidden,  c.intermediate, c.heads,        c.kv_heads,         c.head_dim,           c.layers,
                  c.vocab,   c.tied,         c.experts,      c.top_k,            c.moe_intermediate,   c.shared_intermediate,
                  c.qk_norm, c.dense_layers, c.q_lora,      c.kv_lora,          c.rope_dim,           c.v_head,
                  c.nope_every, c.attn_chunk};
}
KB_HD inline LlmRun llm_run_of(const LlmConfig& c) {
  LlmRun r{c.phase, c.batch,      c.context,      c.prompt,            c.weight_bytes,   c.kv_bytes,
           c.tp,    c.tp_level,   c.pp,           c.stage_layers,      c.attention_dp,   c.redundant_experts,
           c.dispatch_bytes,      c.expert_tokens};
  r.prior = c.prior;
  return r;
}

// The machine of one rank: SIP 0 alone (a SIP rank), one cube of it (a cube rank), or one PE
// of one cube (a PE rank, of level pe or hier), whose cube's HBM the other ranks of that
// cube share, running the same kernels at the same time (HwConfig::hbm_tenants).
KB_HD inline HwConfig llm_rank_hw(const LlmConfig& c) {
  HwConfig h = c.hw;
  h.sips = 1;
  h.hbm_tenants = 0;  // alone, unless its cube holds other ranks (below)
  if (c.tp_level != static_cast<std::int64_t>(CollLevel::sip)) h.cube_rows = h.cube_cols = 1;
  if (c.tp_level == static_cast<std::int64_t>(CollLevel::pe) || c.tp_level == static_cast<std::int64_t>(CollLevel::hier)) {
    h.pe_rows = h.pe_cols = 1;
    h.hbm_tenants = llm_ranks(c.hw, llm_run_of(c)).ranks_per_cube;
  }
  return h;
}

namespace llm_detail {
// Whether a visitor is told which kind of layer the layer kernels it is given are of.
template <class V, class = void>
struct SeesLayerKinds : std::false_type {};
template <class V>
struct SeesLayerKinds<V, std::void_t<decltype(std::declval<V&>().layer_kind(true))>> : std::true_type {};

// Kernel k (of a layer, or of the head) as its family's config, to the visitor.
template <class Visitor>
KB_HD void visit_kernel(const LlmConfig& c, const LlmRun& r, const HwConfig& rank, bool tuned, const LlmKernel& k, bool layer,
                        Visitor& v) {
  switch (k.kind) {
    case LlmKernelKind::gemm: {
      GemmConfig g{};
      g.hw = rank;
      g.m = k.m, g.n = k.n, g.k = k.k;
      g.pes = rank.pes_per_cube(), g.cubes = rank.cubes_per_sip(), g.buffers = 2, g.split = kGemmSplitAuto;
      g.b_bytes = c.weight_bytes;  // B is the weights
      g = tuned ? gemm_tuned(g) : gemm_automatic(g);
      v.gemm(g, k, layer);
      break;
    }
    case LlmKernelKind::attention: {
      if (c.phase == static_cast<std::int64_t>(LlmPhase::prefill)) {
        LlmAttnConfig x{};
        x.hw = rank;
        x.batch = r.batch, x.q_heads = k.rows, x.kv_heads = k.cols, x.head_dim = c.head_dim, x.prompt = c.prompt;
        x.v_dim = c.kv_lora > 0 ? c.v_head : 0;  // latent attention, expanded
        x.prior = c.prior;
        // Chunked attention (k.k positions a chunk): the whole chunks of every prompt as
        // sequences of their own, then the rest of each prompt.
        const std::int64_t W = k.k, P = c.prompt;
        if (W > 0 && P > W) x.batch = r.batch * (P / W), x.prompt = W;
        for (int part = 0; part < 2; ++part) {
          if (tuned) v.attention(llm_attn_tuned(x), k, layer);
          else {
            llm_attn_complete(x);
            v.attention(x, k, layer);
          }
          if (!(W > 0 && P > W) || P % W == 0) break;
          x.batch = r.batch, x.prompt = P % W, x.tile = x.heads = 0;
        }
        break;
      }
      // The sequences in waves: as many as the case's buffers hold in a PE's SRAM (halving
      // from the whole batch), each wave a launch of its own.
      DecodeConfig d{};
      d.hw = rank;
      d.decode_case = c.attention_case;
      d.s_kv = llm_window_positions(c.context, k.k), d.h_q = k.rows, d.h_kv = k.cols, d.d_head = c.head_dim;
      if (c.kv_lora > 0) d.d_head = c.kv_lora + c.rope_dim, d.d_v = -c.kv_lora;  // latent attention, absorbed: V in K
      d.allreduce = 0;
      d.kv_bytes = c.kv_bytes;
      std::int64_t wave = r.batch;
      for (;;) {
        d.batch = wave, d.chunk = 0;
        decode_complete(d);
        if (wave == 1 || decode_check(d) != kDecSramOverflow) break;
        wave = ceil_div(wave, 2);
      }
      for (std::int64_t done = 0; done < r.batch; done += wave) {
        if (r.batch - done < wave) {
          d.batch = r.batch - done, d.chunk = 0;
          decode_complete(d);
        }
        v.attention(tuned ? decode_chunk_tuned(d) : d, k, layer);
      }
      break;
    }
    case LlmKernelKind::allreduce: {
      AllreduceConfig a{};
      a.hw = c.hw;
      a.bytes = k.bytes, a.level = c.tp_level, a.algo = c.tp_algo, a.ranks = c.tp;
      a.buffer = static_cast<std::int64_t>(CollBuffer::hbm), a.op = static_cast<std::int64_t>(CollOp::allreduce);
      a.chunks = 1, a.channels = c.tp_channels;
      if (k.role == kLlmRoleDispatch || k.role == kLlmRoleCombine) {
        if (c.attention_dp) {
          // An all-to-all (pairwise, one channel): every rank moves what the busiest rank
          // receives, in equal pieces (the values rounded up to a whole piece a rank).
          a.op = static_cast<std::int64_t>(CollOp::alltoall), a.algo = static_cast<std::int64_t>(CollAlgo::pairwise);
          a.channels = 1;
          const std::int64_t v = coll_vranks(a), values = ceil_div(k.bytes, 2);
          a.bytes = 2 * (values > v ? ceil_div(values, v) * v : v);
        }
      }
      v.allreduce(a, k, layer);
      break;
    }
    default: {
      LlmVecConfig x{};
      x.hw = rank;
      x.kind = static_cast<std::int64_t>(k.kind), x.rows = k.rows, x.cols = k.cols;
      x.out_bytes = k.kind == LlmKernelKind::kv_append ? c.kv_bytes : 2;
      x.head_dim = c.kv_lora > 0 ? c.rope_dim : c.head_dim, x.weight_bytes = c.weight_bytes;  // RoPE's rotated values a head
      v.vector(x, k, layer);
      break;
    }
  }
}
}  // namespace llm_detail

// Calls the visitor with each kernel of the layer program (layer = true) and of the head,
// as its family's config: v.gemm(GemmConfig, k), v.attention(DecodeConfig, k) (decode) or
// v.attention(LlmAttnConfig, k) (prefill's causal attention),
// v.allreduce(AllreduceConfig, k), v.vector(LlmVecConfig, k), k the LlmKernel. Shared by
// both engines, as routes are: it says what runs, not how long it takes.
// The layer program is a MoE model's MoE layer; after the head and the stage transfer come
// the kernels of one of its first dense layers (section 13.11), between v.layer_kind(true)
// and v.layer_kind(false) for a visitor that has layer_kind.
// `load`: the config's MoE load (llm_moe_load), when the caller has placed it.
template <class Visitor>
KB_HD void llm_for_each_kernel(const LlmConfig& c, Visitor& v, const MoeLoad* load = nullptr) {
  const LlmShape m = llm_shape_of(c);
  LlmRun r = llm_run_of(c);
  r.load = load;
  r.batch = c.batch / c.microbatches;  // the kernels run one micro-batch
  if (c.attention_dp) r.batch /= c.tp;  // on one rank: its own sequences
  const HwConfig rank = llm_rank_hw(c);
  const bool tuned = c.kernel_tuning == static_cast<std::int64_t>(LlmKernelTuning::best);
  LlmKernel ks[kLlmLayerKernels + kLlmHeadKernels];
  const int nl = llm_layer_program(c.hw, m, r, ks);
  const int n = nl + llm_head_program(c.hw, m, r, ks + nl);
  for (int i = 0; i < n; ++i) llm_detail::visit_kernel(c, r, rank, tuned, ks[i], i < nl, v);
  if (c.pp > 1) {  // the activation of a micro-batch, from one stage to the next
    LlmSendConfig x{};
    x.hw = c.hw;
    x.stage_sips = llm_ranks(c.hw, r).sips_per_stage, x.level = c.tp_level, x.ranks = c.tp;
    x.bytes = llm_tokens(r) * c.hidden * 2;
    v.transfer(x);
  }
  if (llm_alt_layers(m) > 0) {  // one layer of the second kind (llm_alt_layers)
    if constexpr (llm_detail::SeesLayerKinds<Visitor>::value) v.layer_kind(true);
    const int nd = llm_layer_program(c.hw, m, r, ks, true);
    for (int i = 0; i < nd; ++i) llm_detail::visit_kernel(c, r, rank, tuned, ks[i], true, v);
    if constexpr (llm_detail::SeesLayerKinds<Visitor>::value) v.layer_kind(false);
  }
}

// Group-limited routing's groups: equal, and a token's top_k within its topk_groups.
KB_HD inline bool llm_moe_groups_fit(const LlmConfig& c) {
  return c.expert_groups >= 1 && c.expert_groups <= c.experts && c.experts % c.expert_groups == 0 && c.topk_groups >= 1 &&
         c.topk_groups <= c.expert_groups && c.top_k <= c.topk_groups * (c.experts / c.expert_groups);
}
// A MoE config's own fields in range (all 0 but dispatch_bytes for a dense model; data-
// parallel attention with experts only), its routed tokens a whole number of top_k choices.
KB_HD inline bool llm_moe_fields_fit(const LlmConfig& c) {
  if (c.dispatch_bytes < 1 || c.dispatch_bytes > 2 || c.qk_norm < 0 || c.qk_norm > 2 || c.routing < 0 || c.routing > 3 ||
      c.routing_alpha_milli < 0 || c.routing_seed < 0 || c.router_scores < 0 || c.router_scores > 1 || c.redundant_experts < 0 || c.redundant_experts > kMoeMaxRedundant ||
      c.attention_dp < 0 || c.attention_dp > 1 || c.shared_intermediate < 0 || c.shared_intermediate > kLlmMaxIntermediate)
    return false;
  if (c.experts == 0)
    return c.top_k == 0 && c.moe_intermediate == 0 && c.shared_intermediate == 0 && c.attention_dp == 0 &&
           c.redundant_experts == 0 && c.dense_layers == 0 && c.expert_groups == 1 && c.topk_groups == 1 && c.router_scores == 0;
  if (!llm_moe_groups_fit(c)) return false;
  if (c.experts < 1 || c.experts > kMoeMaxExperts || c.top_k < 1 || c.top_k > c.experts || c.moe_intermediate < 1 ||
      c.moe_intermediate > kLlmMaxIntermediate || c.dense_layers < 0 || c.dense_layers >= c.layers)
    return false;
  std::int64_t pairs = 0;
  for (std::int64_t e = 0; e < c.experts; ++e) {
    if (c.expert_tokens[e] < 0) return false;
    pairs += c.expert_tokens[e];
  }
  const std::int64_t tokens = (c.batch / (c.microbatches > 0 ? c.microbatches : 1)) *
                              (c.phase == static_cast<std::int64_t>(LlmPhase::prefill) ? c.prompt : 1);
  return pairs == tokens * c.top_k;
}

// Latent attention's fields in range (all 0 without it): every head its own KV head, the
// rotated part even (RoPE's pairs) and shorter than a head, the cached latent and rotated k
// one decode head (at most kLlmMaxHeadDim values), and no per-head q/k norm.
KB_HD inline bool llm_mla_fields_fit(const LlmConfig& c) {
  if (c.kv_lora == 0) return c.q_lora == 0 && c.rope_dim == 0 && c.v_head == 0;
  return c.kv_lora >= 1 && c.q_lora >= 0 && c.q_lora <= kLlmMaxHidden && c.rope_dim >= 2 && c.rope_dim % 2 == 0 &&
         c.rope_dim < c.head_dim && c.kv_lora + c.rope_dim <= kLlmMaxHeadDim && c.v_head >= 1 && c.v_head <= kLlmMaxHeadDim &&
         c.kv_heads == c.heads && c.qk_norm == 0;
}

// Llama 4's layers without RoPE and chunked attention in range (both 0 without them): not
// with latent attention or a MoE model's dense layers (one second kind of layer), and the q/k
// norm of the layers with RoPE weightless (NoPE layers have none).
KB_HD inline bool llm_nope_fields_fit(const LlmConfig& c) {
  if (c.nope_every < 0 || c.nope_every > c.layers || c.attn_chunk < 0 || c.attn_chunk > kLlmMaxContext) return false;
  if (c.nope_every == 0 && c.attn_chunk == 0) return true;
  return c.kv_lora == 0 && !(c.experts > 0 && c.dense_layers > 0) && !(c.nope_every > 0 && c.qk_norm == 1);
}

// Positions cached before a prompt: a prefill's only, not with latent or chunked attention.
KB_HD inline bool llm_prior_fits(const LlmConfig& c) {
  return c.prior == 0 ||
         (c.prior > 0 && c.phase == static_cast<std::int64_t>(LlmPhase::prefill) && c.kv_lora == 0 && c.attn_chunk == 0);
}

// The dense model's and the mapping's own fields in range.
KB_HD inline bool llm_fields_fit(const LlmConfig& c) {
  return !(c.hidden < 1 || c.hidden > kLlmMaxHidden || c.intermediate < 1 || c.intermediate > kLlmMaxIntermediate ||
      c.heads < 1 || c.heads > kLlmMaxHeads || c.kv_heads < 1 || c.kv_heads > c.heads || c.heads % c.kv_heads != 0 ||
      c.head_dim < 2 || (c.head_dim % 2 != 0 && c.kv_lora == 0) || c.head_dim > kLlmMaxHeadDim || c.layers < 1 || c.layers > kLlmMaxLayers || c.vocab < 1 ||
      c.vocab > kLlmMaxVocab || c.tied < 0 || c.tied > 1 || c.layers_run < 0 || c.layers_run > c.layers ||
      c.tp_algo < 0 || c.tp_algo >= kCollAlgos || !coll_algo_runs(c.tp_algo, static_cast<std::int64_t>(CollOp::allreduce)) ||
      c.attention_case < 1 || c.attention_case > 4 || !hw_fits(c.hw) ||
      c.microbatches < 1 || c.microbatches > c.batch || c.batch % c.microbatches != 0 || c.pp > kLlmMaxStages ||
      c.kernel_tuning < 0 || c.kernel_tuning > 1 || c.tp_channels < 0 || c.tp_channels > kCollMaxChannels ||
      (c.tp > 1 && c.tp_channels > 1 && !coll_channels_fit(c.hw, c.tp_level, c.tp_channels)));
}

// The config's own fields and mapping (llm_place_check; no kernel's check); `load` as
// llm_for_each_kernel's.
KB_HD inline std::int32_t llm_check_config(const LlmConfig& c, const MoeLoad* load = nullptr) {
  const LlmShape m = llm_shape_of(c);
  if (!llm_fields_fit(c) || !llm_moe_fields_fit(c) || !llm_mla_fields_fit(c) || !llm_nope_fields_fit(c) || !llm_prior_fits(c))
    return kLlmBadField;
  if (c.attention_dp && c.tp >= 1 && (c.batch / c.microbatches) % c.tp != 0) return kLlmBadExperts;  // a micro-batch's sequences over the ranks
  LlmRun r = llm_run_of(c);
  r.load = load;
  const std::int32_t s = llm_place_check(c.hw, m, r);
  if (s != kLlmOk) return s;
  return kLlmOk;
}

// The one part of llm_check_config that depends on the placement of a MoE config's experts,
// once the rest passed: the fullest cube's bytes under `load`.
KB_HD inline std::int32_t llm_hbm_check(const LlmConfig& c, const MoeLoad& load) {
  LlmRun r = llm_run_of(c);
  r.load = &load;
  return llm_fullest_cube(c.hw, llm_shape_of(c), r).total > c.hw.hbm_capacity_bytes() ? kLlmHbmOverflow : kLlmOk;
}

// The status of the config: llm_check_config, then every kernel's config as its family
// checks it. `bad` gets the index of the first kernel its family refuses (its status in
// `*kernel_status`).
KB_HD inline std::int32_t llm_check(const LlmConfig& c, std::int32_t* bad = nullptr, std::int32_t* kernel_status = nullptr) {
  const std::int32_t s = llm_check_config(c);
  if (s != kLlmOk) return s;
  struct Check {
    std::int32_t index = 0, bad = -1, status = 0;
    KB_HD void note(std::int32_t st) {
      if (st != 0 && bad < 0) bad = index, status = st;
      ++index;
    }
    KB_HD void gemm(const GemmConfig& g, const LlmKernel&, bool) { note(gemm_check(g)); }
    KB_HD void attention(const DecodeConfig& d, const LlmKernel&, bool) { note(decode_check(d)); }
    KB_HD void attention(const LlmAttnConfig& x, const LlmKernel&, bool) { note(llm_attn_check(x)); }
    // Channels auto: valid as one channel is (more channels only add limits, and auto keeps 1).
    KB_HD void allreduce(const AllreduceConfig& a, const LlmKernel&, bool) {
      AllreduceConfig x = a;
      if (x.channels == 0) x.channels = 1;
      note(allreduce_check(x));
    }
    KB_HD void vector(const LlmVecConfig& x, const LlmKernel&, bool) { note(llm_vec_check(x)); }
    KB_HD void transfer(const LlmSendConfig& x) { note(llm_send_check(x)); }
  } check;
  llm_for_each_kernel(c, check);
  if (bad) *bad = check.bad;
  if (kernel_status) *kernel_status = check.status;
  return check.bad >= 0 ? kLlmBadKernel : kLlmOk;
}

// The figures of the kernels of one layer, of the head, and of a transfer between stages,
// each for one micro-batch, added up; then the step's, through the schedule (llm_pipeline.h).
struct LlmTally {
  enum Kind { kGemm = 0, kAttention, kVector, kAllreduce, kTransfer, kExpert, kDispatch, kCombine };
  struct Part {
    ps_t latency, kind[kLlmKinds];
    Actions a;          // counted actions, every rank
    std::int64_t link;  // link bytes, every hop (out-ports included for transfers)
    std::int64_t moe_link[2][3];  // the dispatch's and the combine's link bytes by level
  } part[4] = {};  // 0: the head, 1: a layer (a MoE model's MoE layer), 2: a transfer, 3: a MoE model's dense layer
  int layer_part = 1;  // where a layer kernel goes: 1, or 3 for a dense layer of a MoE model
  KB_HD void layer_kind(bool dense) { layer_part = dense ? 3 : 1; }
  // A kernel's latency, its actions (`times` over: tp for a rank's kernel) and link bytes;
  // kernel `k` runs k.repeat times, and its role (a MoE kernel's) sets its kind.
  KB_HD void add(bool layer, Kind kind, ps_t latency, const Actions& a, std::int64_t times, std::int64_t link, const LlmKernel& k) {
    const Kind by_role = k.role == kLlmRoleExpert ? kExpert : k.role == kLlmRoleDispatch ? kDispatch : k.role == kLlmRoleCombine ? kCombine : kind;
    Part& p = part[layer ? layer_part : 0];
    add_to(p, by_role, sat_mul(k.repeat, latency), a, sat_mul(times, k.repeat), sat_mul(k.repeat, link));
    if (k.role == kLlmRoleDispatch || k.role == kLlmRoleCombine) {
      std::int64_t* m = p.moe_link[k.role == kLlmRoleDispatch ? 0 : 1];
      m[0] += a.link_bytes_pe, m[1] += a.link_bytes_cube, m[2] += a.link_bytes_sip;
    }
  }
  KB_HD void add_transfer(ps_t latency, const Actions& a, std::int64_t link) { add_to(part[2], kTransfer, latency, a, 1, link); }
  // The step through the schedule, each stage running `layers` of its layers at most
  // (0: all of them); the last stage runs the head.
  // A stage's layers of the second kind (llm_stage_alt_layers) are timed as its own.
  KB_HD LlmPath schedule(const LlmConfig& c, std::int64_t layers) const {
    const LlmShape m = llm_shape_of(c);
    const LlmRun r = llm_run_of(c);
    return llm_schedule_kinds(c.pp, c.microbatches, part[1].kind, part[3].kind, part[0].kind, part[2].kind, [&](std::int64_t s) {
      const std::int64_t L = llm_stage_layers(m, r, s), run = layers && layers < L ? layers : L;
      const std::int64_t alt = llm_stage_alt_layers(m, r, s, run);
      return LlmStageLayers{run - alt, alt};
    });
  }
  // The step as run (layers_run layers a stage) and the whole model's. Out of line on the
  // device: the schedule's per-stage state (3 KiB) is then not in the frame the kernels'
  // models are called from.
  KB_HD KB_NOINLINE LlmResult finish(const LlmConfig& c) const {
    const Part &l = part[1], &h = part[0], &x = part[2], &d = part[3];
    // Layers of each kind: the first kind (l: a MoE model's MoE layers, Llama 4's with RoPE)
    // and the second (d: llm_alt_layers).
    const std::int64_t D = llm_alt_layers(llm_shape_of(c)), L = c.layers - D, M = c.microbatches, X = (c.pp - 1) * M;
    const LlmPath all = schedule(c, 0);
    LlmResult o{};
    o.status = all.at >= kTimeLimitPs ? kLlmTooLarge : kLlmOk;  // the step's time beyond int64's guard
    if (o.status != kLlmOk) return o;
    o.layer_ps = l.latency, o.head_ps = h.latency, o.dense_layer_ps = d.latency;
    o.latency_ps = schedule(c, c.layers_run).at;
    o.model_latency_ps = all.at;
    o.gemm_ps = all.kind[kGemm], o.attention_ps = all.kind[kAttention], o.vector_ps = all.kind[kVector];
    o.allreduce_ps = all.kind[kAllreduce], o.transfer_ps = all.kind[kTransfer];
    o.expert_ps = all.kind[kExpert], o.dispatch_ps = all.kind[kDispatch], o.combine_ps = all.kind[kCombine];
    for (int i = 0; i < 3; ++i) {
      o.dispatch_link_bytes[i] = sat_add(sat_mul(sat_mul(M, L), l.moe_link[0][i]), sat_mul(sat_mul(M, D), d.moe_link[0][i]));
      o.combine_link_bytes[i] = sat_add(sat_mul(sat_mul(M, L), l.moe_link[1][i]), sat_mul(sat_mul(M, D), d.moe_link[1][i]));
    }
    // M micro-batches of L (and D) layers and the head, and X transfers.
    const Actions a = actions_add(actions_add(actions_add(actions_add(Actions{}, l.a, sat_mul(M, L)), h.a, M), x.a, X), d.a, sat_mul(M, D));
    o.macs = a.macs;
    o.hbm_read_bytes = a.hbm_read_bytes, o.hbm_write_bytes = a.hbm_write_bytes;
    o.link_bytes = M * (L * l.link + D * d.link + h.link) + X * x.link;
    o.vector_ops = a.vector_ops, o.sram_read_bytes = a.sram_read_bytes, o.sram_write_bytes = a.sram_write_bytes;
    o.link_bytes_pe = a.link_bytes_pe, o.link_bytes_cube = a.link_bytes_cube, o.link_bytes_sip = a.link_bytes_sip;
    return o;
  }

 private:
  KB_HD static void add_to(Part& p, Kind k, ps_t latency, const Actions& a, std::int64_t times, std::int64_t link) {
    p.latency = sat_add(p.latency, latency), p.kind[k] = sat_add(p.kind[k], latency);
    p.a = actions_add(p.a, a, times);
    p.link += link;
  }
};

// The model. A kernel's model checks its config first, so a kernel its family refuses makes
// the step bad_kernel as llm_check says, with each kernel checked once. GEMMs, attention and
// allreduces go through the kernel memo (kernel_memo.h): a sweep repeats them across
// configs, and a repeat is the same result. `Small`: the allreduces and decode's attention in
// their nested states (ar_detail::ArNestedCaps, decode_model_small: small enough that the step's
// own state and theirs fit 16 KiB together, ADR 0023), and the step kStatusDeferred where one
// of them is; that is the device's first stage, which has no memo, so it calls the models
// directly.
template <bool Small>
KB_HD KB_NOINLINE LlmResult llm_model_in(const LlmConfig& c) {
  LlmResult out{};
  // A MoE config's placement, once (its fields in range first: moe_load's buffers hold them).
  // A MoE config is checked at the least load any placement gives (moe_load_least) before it
  // is placed: only the fullest cube's bytes depend on the placement, and they grow with the
  // load, so a config refused there (most of a MoE space's invalid configs) has the status the
  // placed load gives, and one accepted needs only its HBM checked again.
  MoeLoad load{};
  const bool placed = c.experts > 0 && llm_fields_fit(c) && llm_moe_fields_fit(c);
  if (placed) {
    load = moe_load_least(c.expert_tokens, c.experts, c.tp, c.redundant_experts);
    out.status = llm_check_config(c, &load);
    if (out.status != kLlmOk) return out;
    load = moe_load_memo(c.expert_tokens, c.experts, c.tp, c.redundant_experts);
    out.status = llm_hbm_check(c, load);
  } else {
    out.status = llm_check_config(c, nullptr);
  }
  if (out.status != kLlmOk) return out;
  // One rank's kernels stand for every rank's: figures of a rank's kernels count tp times
  // (an allreduce's are the whole group's already).
  struct Time {
    LlmTally t;
    std::int64_t tp;
    bool bad = false;
    bool deferred = false;
    bool have_allreduce = false;  // the last collective's figures, for one alike
    AllreduceConfig allreduce_config{};
    AllreduceResult allreduce_figures{};
    KB_HD void gemm(const GemmConfig& g, const LlmKernel& k, bool layer) {
      const GemmResult r = memo_eval<GemmConfig, GemmResult>(g, [](const GemmConfig& x) { return gemm_model(x); });
      bad = bad || r.status != 0;
      t.add(layer, LlmTally::kGemm, r.latency_ps, GemmModel::actions(g, r), tp, 0, k);
    }
    KB_HD void attention(const DecodeConfig& d, const LlmKernel& k, bool layer) {
      DecodeResult r;
      if constexpr (Small) {
        r = decode_model_small(d);
        if (r.status == kStatusDeferred) {
          deferred = true;
          return;
        }
      } else {
        r = memo_eval<DecodeConfig, DecodeResult>(d, [](const DecodeConfig& x) { return DecodeModel::evaluate(x); });
      }
      bad = bad || r.status != 0;
      t.add(layer, LlmTally::kAttention, r.latency_ps, DecodeModel::actions(d, r), tp, 0, k);
    }
    KB_HD void attention(const LlmAttnConfig& x, const LlmKernel& k, bool layer) {
      const LlmAttnResult r = memo_eval<LlmAttnConfig, LlmAttnResult>(x, [](const LlmAttnConfig& y) { return llm_attn_model(y); });
      bad = bad || r.status != 0;
      t.add(layer, LlmTally::kAttention, r.latency_ps, llm_attn_actions(r), tp, 0, k);
    }
    KB_HD void allreduce(const AllreduceConfig& a, const LlmKernel& k, bool layer) {
      // Collectives alike (the allreduces of a dense layer) are timed once.
      if (have_allreduce && (a.op != allreduce_config.op || a.bytes != allreduce_config.bytes)) have_allreduce = false;
      if (!have_allreduce) {
        allreduce_config = a;
        if constexpr (Small) {
          allreduce_figures = AllreduceModel::evaluate_nested(a);
        } else {
          allreduce_figures = shared_memo_eval<AllreduceConfig, AllreduceResult>(
              a, [](const AllreduceConfig& x) { return AllreduceModel::evaluate(x); });
        }
        // The device's full state defers channels beyond it (the host's third stage takes the step).
        deferred = deferred || allreduce_figures.status == kStatusDeferred;
        have_allreduce = true;
      }
      const AllreduceResult& r = allreduce_figures;
      if (r.status == kStatusDeferred) return;
      bad = bad || r.status != 0;
      t.add(layer, LlmTally::kAllreduce, r.latency_ps, AllreduceModel::actions(a, r), 1,
            r.link_bytes_pe + r.link_bytes_cube + r.link_bytes_sip, k);
    }
    KB_HD void vector(const LlmVecConfig& x, const LlmKernel& k, bool layer) {
      const LlmVecResult r = memo_eval<LlmVecConfig, LlmVecResult>(x, [](const LlmVecConfig& y) { return llm_vec_model(y); });
      bad = bad || r.status != 0;
      t.add(layer, LlmTally::kVector, r.latency_ps, llm_vec_actions(r), tp, 0, k);
    }
    KB_HD void transfer(const LlmSendConfig& x) {
      const LlmSendResult r = llm_send_model(x);
      bad = bad || r.status != 0;
      t.add_transfer(r.latency_ps, llm_send_actions(r), r.link_bytes);
    }
    KB_HD void layer_kind(bool dense) { t.layer_kind(dense); }
  } time{LlmTally{}, c.tp};
  llm_for_each_kernel(c, time, placed ? &load : nullptr);
  if (time.deferred) {
    out.status = kStatusDeferred;
    return out;
  }
  if (time.bad) {
    out.status = kLlmBadKernel;
    return out;
  }
  return time.t.finish(c);
}
KB_HD inline LlmResult llm_model(const LlmConfig& c) { return llm_model_in<false>(c); }

// The family as the generic sweep engine sees it (src/device/sweep/).
struct LlmModel {
  using Config = LlmConfig;
  using Result = LlmResult;
  static constexpr int kStatuses = kLlmPlaceStatusCount;
  static constexpr bool kCounts = true;
  KB_HD static void complete(Config&) {}
  KB_HD KB_NOINLINE static Result evaluate(const Config& c) { return llm_model(c); }
  // The same with the kernels' nested states (llm_model_in), or kStatusDeferred
  // (src/device/sweep/two_stage.h).
  KB_HD KB_NOINLINE static Result evaluate_small(const Config& c) { return llm_model_in<true>(c); }
#if !defined(__CUDA_ARCH__)
  // The host's evaluation of what a device defers (a tensor-parallel allreduce's channels
  // beyond the collective's full state: two_stage.h's third stage).
  static Result evaluate_host(const Config& c) { return evaluate(c); }
#endif
  // Pareto cost `kind`: 1 the PEs the mapping uses, 2 its HBM bytes moved.
  KB_HD static std::int64_t cost(std::int32_t kind, const Config& c, const Result& r) {
    switch (kind) {
      case 1: return c.tp * llm_ranks(c.hw, llm_run_of(c)).pes_per_rank * c.pp;
      case 2: return r.hbm_read_bytes + r.hbm_write_bytes;
      default: return 0;
    }
  }
  // The whole model's step: its counts, and the machine's static power over its latency.
  KB_HD static Actions actions(const Config&, const Result& r) {
    return Actions{r.macs,           r.vector_ops,     r.sram_read_bytes, r.sram_write_bytes, r.hbm_read_bytes,
                   r.hbm_write_bytes, r.link_bytes_pe, r.link_bytes_cube, r.link_bytes_sip};
  }
  KB_HD static Energy energy(const Config& c, const Result& r) { return energy_of(c.hw, actions(c, r), r.model_latency_ps); }
};

}  // namespace kb
