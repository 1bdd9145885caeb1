#include "llm_moe_desc.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "../../../device/models/llm/llm_model.h"
#include "../../common/error.h"
#include "../../llm/moe_routing.h"
#include "../../sweep/axis_values.h"
#include "../../topology/fields.h"

namespace kb {

namespace {

using C = LlmConfig;
using R = LlmResult;

bool moe(const C& c) { return c.experts > 0; }
double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// The routing's text: balanced, uniform, zipf:ALPHA or file (a histogram's).
std::string routing_text(const C& c) {
  if (c.routing == static_cast<std::int64_t>(LlmRouting::zipf)) {
    char b[32];
    std::snprintf(b, sizeof b, "zipf:%g", static_cast<double>(c.routing_alpha_milli) / 1000.0);
    return b;
  }
  return c.routing >= 0 && c.routing <= 3 ? kLlmRoutingNames[c.routing] : "?";
}

// --router's value: 0 softmax, 1 sigmoid.
std::int64_t router_of(const std::string& text) {
  if (text == "softmax" || text == "sigmoid") return text == "sigmoid";
  throw InputError("--router " + (text.empty() ? std::string("''") : text) + ": softmax or sigmoid");
}

std::int64_t seed_of(const std::string& text) {
  std::int64_t v = 0;
  std::string why;
  if (!parse_int_in(text, 0, std::numeric_limits<std::int64_t>::max(), &v, &why))
    throw InputError("--routing-seed " + (text.empty() ? std::string("''") : text) + ": " + why);
  return v;
}

}  // namespace

std::vector<AxisDesc> llm_moe_axes() {
  return {
      axis("experts", "--experts", "routed experts of a MoE layer (0: a dense model)", offsetof(C, experts))
          .range(0, kMoeMaxExperts).default_to("0").defines_problem().only_with("experts"),
      axis("top_k", "--top-k", "routed experts a token goes to (num_experts_per_tok)", offsetof(C, top_k))
          .range(0, kMoeMaxExperts).default_to("0").defines_problem().only_with("experts"),
      axis("moe_intermediate", "--moe-intermediate", "an expert's intermediate size (moe_intermediate_size)",
           offsetof(C, moe_intermediate)).range(0, kLlmMaxIntermediate).default_to("0").defines_problem().only_with("experts"),
      axis("shared_intermediate", "--shared-intermediate", "the shared expert's intermediate size (0: none)",
           offsetof(C, shared_intermediate)).range(0, kLlmMaxIntermediate).default_to("0").defines_problem().only_with("experts"),
      axis("dense_layers", "--dense-layers", "the model's first layers that are dense (DeepSeek-V3's first_k_dense_replace)",
           offsetof(C, dense_layers)).range(0, kLlmMaxLayers).default_to("0").defines_problem().only_with("experts"),
      axis("qk_norm", "--qk-norm", "a norm over each head's q and k: yes an RMSNorm (Qwen3), l2 one without weights (Llama 4's)",
           offsetof(C, qk_norm))
          .choices({"no", "yes", "l2"}).default_to("no").defines_problem().only_with("experts"),
      axis("expert_groups", "--expert-groups",
           "group-limited routing: the routed experts in this many equal groups (DeepSeek-V3's n_group; 1: no groups)",
           offsetof(C, expert_groups)).range(1, kMoeMaxExperts).default_to("1").defines_problem().only_with("experts"),
      axis("topk_groups", "--topk-groups", "the groups a token's experts come from, its best ones (topk_group)",
           offsetof(C, topk_groups)).range(1, kMoeMaxExperts).default_to("1").defines_problem().only_with("experts"),
      axis("attention", "--attention",
           "a MoE model's attention over the tp group: tp (tensor-parallel; the experts' outputs combined by an "
           "allreduce) or dp (data-parallel: each rank batch / tp sequences; tokens dispatched to their experts and "
           "combined by all-to-alls, as DeepSeek serves it)",
           offsetof(C, attention_dp)).choices({"tp", "dp"}).default_to("tp").only_with("experts"),
      axis("redundant_experts", "--redundant-experts",
           "extra copies of the hottest experts, placed by load as EPLB does (0: expert e on rank e mod tp)",
           offsetof(C, redundant_experts)).range(0, kMoeMaxRedundant).default_to("0").only_with("experts"),
      axis("dispatch_bytes", "--dispatch-bytes",
           "bytes a dispatched value (1: fp8 with a scale a block, as DeepEP; 2: fp16); the combine moves fp16",
           offsetof(C, dispatch_bytes)).range(1, 2).default_to("2").only_with("experts"),
  };
}

std::vector<AxisDesc> llm_mla_axes() {
  return {
      axis("kv_lora", "--kv-lora", "latent attention: the KV latent's width (kv_lora_rank; 0: grouped-query attention)",
           offsetof(C, kv_lora)).range(0, kLlmMaxHeadDim).default_to("0").defines_problem().only_with("kv_lora"),
      axis("q_lora", "--q-lora", "latent attention: the query latent's width (q_lora_rank; 0: queries from the hidden state)",
           offsetof(C, q_lora)).range(0, kLlmMaxHidden).default_to("0").defines_problem().only_with("kv_lora"),
      axis("rope_dim", "--rope-dim", "latent attention: a head's rotated q and k values (qk_rope_head_dim; head_dim is "
                                     "qk_nope_head_dim + this)",
           offsetof(C, rope_dim)).range(0, kLlmMaxHeadDim).default_to("0").defines_problem().only_with("kv_lora"),
      axis("v_head", "--v-head", "latent attention: a head's value width (v_head_dim)", offsetof(C, v_head))
          .range(0, kLlmMaxHeadDim).default_to("0").defines_problem().only_with("kv_lora"),
  };
}

std::vector<AxisDesc> llm_nope_axes() {
  return {
      axis("nope_every", "--nope-every",
           "every Nth layer has no RoPE and no q/k norm and attends to every position (Llama 4's no_rope_layers; 0: none)",
           offsetof(C, nope_every)).range(0, kLlmMaxLayers).default_to("0").defines_problem().only_with("nope_every"),
      axis("attn_chunk", "--attn-chunk",
           "chunked attention: the layers with RoPE attend within chunks of this many positions (Llama 4's "
           "attention_chunk_size; 0: every position)",
           offsetof(C, attn_chunk)).range(0, kLlmMaxContext).default_to("0").defines_problem().only_with("attn_chunk"),
  };
}

std::vector<std::pair<std::string, std::string>> llm_nope_model_values(const LlmModelFile& m) {
  std::vector<std::pair<std::string, std::string>> v;
  if (m.shape.nope_every > 0) v.emplace_back("nope_every", std::to_string(m.shape.nope_every));
  if (m.shape.attn_chunk > 0) v.emplace_back("attn_chunk", std::to_string(m.shape.attn_chunk));
  return v;
}

std::vector<std::pair<std::string, std::string>> llm_mla_model_values(const LlmModelFile& m) {
  if (m.shape.kv_lora == 0) return {};
  return {{"kv_lora", std::to_string(m.shape.kv_lora)},
          {"q_lora", std::to_string(m.shape.q_lora)},
          {"rope_dim", std::to_string(m.shape.rope_dim)},
          {"v_head", std::to_string(m.shape.v_head)}};
}

std::vector<PresetDesc> llm_moe_presets() {
  return {
      {"--ep", "expert-parallel ranks N: --tp N with --attention dp (the experts over N ranks of --ep-level, each rank "
               "its own sequences' attention)",
       [](const std::string& v) {
         return std::vector<std::pair<std::string, std::string>>{{"tp", v}, {"attention", "dp"}};
       },
       nullptr, false, nullptr, true},
      {"--ep-level", "what an expert-parallel rank is: pe, cube, sip or hier (--tp-level)",
       [](const std::string& v) { return std::vector<std::pair<std::string, std::string>>{{"tp_level", v}}; }, nullptr, false,
       nullptr, true},
      {"--routing", "how a MoE step's tokens pick their experts, seeded: balanced, uniform, zipf:ALPHA (popularity "
                    "1 / rank^ALPHA) or a FILE histogram of expert loads (docs/model.md section 13.11)",
       [](const std::string& v) {
         parse_routing(v, 0);
         return std::vector<std::pair<std::string, std::string>>{};
       },
       nullptr, true,
       [](const std::string& list) {
         std::vector<std::string> items = list_items(list, ',');
         for (const std::string& item : items) parse_routing(item, 0);
         return items;
       }},
      {"--router", "the router's scores, for data mode's values: softmax (Mixtral, Qwen3) or sigmoid with a correction "
                   "bias (DeepSeek-V3); a MoE --model's scoring_func when not given, else softmax",
       [](const std::string& v) {
         router_of(v);
         return std::vector<std::pair<std::string, std::string>>{};
       },
       nullptr, true},
      {"--routing-seed", "the routing's seed (0 when not given; a sweep takes a list or range, e.g. 1:8)",
       [](const std::string& v) {
         seed_of(v);
         return std::vector<std::pair<std::string, std::string>>{};
       },
       nullptr, true,
       [](const std::string& list) {
         std::vector<std::string> items;
         for (const std::int64_t v : parse_axis_values("--routing-seed", list, 0, std::numeric_limits<std::int64_t>::max()))
           items.push_back(std::to_string(v));
         return items;
       }},
  };
}

std::vector<std::pair<std::string, std::string>> llm_moe_model_values(const LlmModelFile& m) {
  if (m.moe.experts == 0) return {};
  // Dense layers first, then MoE layers (the layer program's two kinds, section 13.11).
  std::size_t dense = 0;
  while (dense < m.moe.moe_layer.size() && !m.moe.moe_layer[dense]) ++dense;
  for (std::size_t l = dense; l < m.moe.moe_layer.size(); ++l)
    if (!m.moe.moe_layer[l])
      throw InputError("--model " + m.name + ": layer " + std::to_string(l) +
                       " is dense after MoE layers; the engines run a model's dense layers first, then its MoE layers");
  if (dense == m.moe.moe_layer.size())
    throw InputError("--model " + m.name + ": no layer is a MoE layer; give it as a dense model");
  return {{"experts", std::to_string(m.moe.experts)},
          {"dense_layers", std::to_string(dense)},
          {"top_k", std::to_string(m.moe.top_k)},
          {"moe_intermediate", std::to_string(m.moe.expert_intermediate)},
          {"shared_intermediate", std::to_string(m.moe.shared_intermediate)},
          {"expert_groups", std::to_string(m.moe.expert_groups)},
          {"topk_groups", std::to_string(m.moe.topk_groups)},
          {"qk_norm", m.moe.qk_norm ? (m.moe.qk_l2 ? "l2" : "yes") : "no"}};
}

namespace {
// The axes the routing of a step's tokens reads.
const char* const kRoutingReads[] = {"batch", "phase", "prompt", "microbatches", "experts", "top_k", "expert_groups", "topk_groups"};
}  // namespace

void llm_moe_prepare(const std::map<std::string, std::string>& presets, const std::vector<std::string>& swept, void* config) {
  C& c = *static_cast<C*>(config);
  std::fill(std::begin(c.expert_tokens), std::end(c.expert_tokens), 0);
  c.routing = c.routing_alpha_milli = c.routing_seed = c.router_scores = 0;
  const auto routing = presets.find("--routing"), seed = presets.find("--routing-seed"), router = presets.find("--router");
  if (c.experts == 0) {
    for (const auto& given : {routing, seed, router})
      if (given != presets.end())
        throw InputError(given->first + " " + given->second + ": the model is dense (no --experts): nothing to route");
    return;
  }
  for (const std::string& name : swept)
    if (std::find(std::begin(kRoutingReads), std::end(kRoutingReads), name) != std::end(kRoutingReads))
      throw InputError("--" + name + ": a mixture-of-experts run routes one step's tokens before it is evaluated; give one "
                       "value of --batch, --phase, --prompt, --microbatches, --experts and --top-k (one run each)");
  const auto model = presets.find("--model");
  if (router != presets.end()) c.router_scores = router_of(router->second);
  else if (model != presets.end()) c.router_scores = load_llm_model(model->second).moe.scoring == "sigmoid";
  // Out of range: left unrouted, for the config's check to name.
  if (c.top_k < 1 || c.top_k > c.experts || c.microbatches < 1 || c.batch % c.microbatches != 0) return;
  if (c.expert_groups < 1 || c.experts % c.expert_groups != 0)
    throw InputError("--expert-groups " + std::to_string(c.expert_groups) + ": does not divide the " + std::to_string(c.experts) +
                     " routed experts into equal groups");
  if (c.topk_groups < 1 || c.topk_groups > c.expert_groups || c.top_k > c.topk_groups * (c.experts / c.expert_groups))
    throw InputError("--topk-groups " + std::to_string(c.topk_groups) + ": " + std::to_string(c.topk_groups) + " of " +
                     std::to_string(c.expert_groups) + " groups of " + std::to_string(c.experts / c.expert_groups) +
                     " experts do not hold the " + std::to_string(c.top_k) + " experts a token takes (--top-k)");
  const std::int64_t tokens = c.batch / c.microbatches * (c.phase == static_cast<std::int64_t>(LlmPhase::prefill) ? c.prompt : 1);
  if (tokens * c.top_k > std::numeric_limits<std::int32_t>::max())
    throw InputError("--routing: " + std::to_string(tokens) + " tokens x top_k " + std::to_string(c.top_k) +
                     " routed pairs a micro-batch; at most 2^31 - 1 (fewer sequences, a shorter prompt or more micro-batches)");
  const std::int64_t s = seed != presets.end() ? seed_of(seed->second) : 0;
  const RoutingSpec spec = parse_routing(routing != presets.end() ? routing->second : "balanced", static_cast<std::uint64_t>(s));
  const Routed r = route_tokens(spec, MoeRouter{c.experts, c.top_k, c.expert_groups, c.topk_groups}, tokens, 0);
  for (std::int64_t e = 0; e < c.experts; ++e) c.expert_tokens[e] = static_cast<std::int32_t>(r.tokens[static_cast<std::size_t>(e)]);
  c.routing = static_cast<std::int64_t>(spec.kind == RoutingKind::balanced  ? LlmRouting::balanced
                                        : spec.kind == RoutingKind::uniform ? LlmRouting::uniform
                                        : spec.kind == RoutingKind::zipf    ? LlmRouting::zipf
                                                                            : LlmRouting::file);
  c.routing_alpha_milli = std::llround(spec.alpha * 1000.0);
  c.routing_seed = s;
}

std::vector<ColumnDesc> llm_moe_columns() {
  // A MoE figure: null for a dense model (the column then left out of its tables).
  auto figure = [](const char* name, const char* unit, const char* help, auto get, bool parity) {
    return ColumnDesc{name, unit, help, ColType::integer, typed_getter<C, R>([get](const C& c, const R& r) {
                        return moe(c) ? nlohmann::json(get(c, r)) : nlohmann::json();
                      }), parity, false, true};
  };
  auto share = [](const char* name, const char* help, std::int64_t R::*m) {
    return ColumnDesc{name, "", help, ColType::real, typed_getter<C, R>([m](const C& c, const R& r) {
                        return moe(c) ? nlohmann::json(ratio(static_cast<double>(r.*m), static_cast<double>(r.model_latency_ps)))
                                      : nlohmann::json();
                      }), false, false, true};
  };
  auto load = [](const C& c) { return moe_load(c.expert_tokens, c.experts, c.tp, c.redundant_experts); };
  std::vector<ColumnDesc> cols = {
      figure("expert_ps", "ps", "the routed experts' GEMMs and SiLU x up on the step's critical path (the busiest rank's)",
             [](const C&, const R& r) { return r.expert_ps; }, true),
      figure("dispatch_ps", "ps", "the tokens' dispatch to their experts (all-to-alls)", [](const C&, const R& r) { return r.dispatch_ps; }, true),
      figure("combine_ps", "ps", "the experts' outputs' combine (all-to-alls, or allreduces under tensor-parallel attention)",
             [](const C&, const R& r) { return r.combine_ps; }, true),
      share("expert_share", "the routed experts' share of the step", &R::expert_ps),
      share("dispatch_share", "the dispatch's share of the step", &R::dispatch_ps),
      share("combine_share", "the combine's share of the step", &R::combine_ps),
      figure("experts_touched", "", "routed experts with a token in a micro-batch: the experts whose weights a layer reads",
             [load](const C& c, const R&) { return load(c).touched; }, false),
      figure("rank_tokens", "", "(token, expert) pairs the busiest expert-parallel rank handles a layer",
             [load](const C& c, const R&) { return load(c).rank_tokens; }, false),
      {"load_imbalance", "", "the most (token, expert) pairs a rank handles over the mean (1: even)", ColType::real,
       typed_getter<C, R>([load](const C& c, const R&) {
         if (!moe(c)) return nlohmann::json();
         const MoeLoad l = load(c);
         return nlohmann::json(ratio(static_cast<double>(l.rank_tokens) * static_cast<double>(c.tp), static_cast<double>(l.pairs)));
       }), false, false, true},
  };
  static const std::string names[2][3] = {{"dispatch_link_bytes_pe", "dispatch_link_bytes_cube", "dispatch_link_bytes_sip"},
                                          {"combine_link_bytes_pe", "combine_link_bytes_cube", "combine_link_bytes_sip"}};
  for (int part = 0; part < 2; ++part)
    for (int i = 0; i < 3; ++i) {
      static const std::string helps[2] = {"the dispatch's bytes over links of this level, every rank",
                                           "the combine's bytes over links of this level, every rank"};
      cols.push_back(figure(names[part][i].c_str(), "bytes", helps[part].c_str(),
                            [part, i](const C&, const R& r) { return part == 0 ? r.dispatch_link_bytes[i] : r.combine_link_bytes[i]; },
                            true));
    }
  cols.push_back(ColumnDesc{"dense_layer_ps", "ps", "one of a MoE model's dense layers, one micro-batch (layer_ps: a MoE layer)",
                            ColType::integer, typed_getter<C, R>([](const C& c, const R& r) {
                              return moe(c) && c.dense_layers > 0 ? nlohmann::json(r.dense_layer_ps) : nlohmann::json();
                            }), true, false, true});
  cols.push_back(ColumnDesc{"nope_layer_ps", "ps", "one of the layers without RoPE, one micro-batch (layer_ps: a layer with it)",
                            ColType::integer, typed_getter<C, R>([](const C& c, const R& r) {
                              return c.nope_every > 0 ? nlohmann::json(r.dense_layer_ps) : nlohmann::json();
                            }), true, false, true});
  cols.push_back({"routing", "", "how the tokens picked their experts (--routing)", ColType::text,
                  typed_getter<C, R>([](const C& c, const R&) { return moe(c) ? nlohmann::json(routing_text(c)) : nlohmann::json(); }),
                  false, false, true});
  cols.push_back({"routing_seed", "", "the routing's seed (--routing-seed)", ColType::integer,
                  typed_getter<C, R>([](const C& c, const R&) { return moe(c) ? nlohmann::json(c.routing_seed) : nlohmann::json(); }),
                  false, false, true});
  return cols;
}

void llm_moe_set_prepare(Family& f) {
  f.prepare = llm_moe_prepare;
  f.prepare_reads.assign(std::begin(kRoutingReads), std::end(kRoutingReads));
  static_assert(offsetof(C, routing_alpha_milli) == offsetof(C, routing) + 8 && offsetof(C, routing_seed) == offsetof(C, routing) + 16 &&
                    offsetof(C, expert_tokens) % 8 == 0 && sizeof(C::expert_tokens) % 8 == 0,
                "the fields routing writes are whole int64 words");
  f.prepare_writes = {{offsetof(C, routing), 24}, {offsetof(C, router_scores), 8}, {offsetof(C, expert_tokens), sizeof(C::expert_tokens)}};
}

}  // namespace kb
