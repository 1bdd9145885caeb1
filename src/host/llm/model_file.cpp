#include "model_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "host/common/error.h"
#include "host/common/output.h"
#include "host/topology/fields.h"

namespace kb {
namespace {

namespace fs = std::filesystem;

// FILE:LINE:COL of a JSON node (yaml-cpp reads JSON, and keeps where each value was).
std::string at(const std::string& file, const YAML::Mark& m) {
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

[[noreturn]] void refuse(const std::string& loc, const std::string& field, const std::string& what) {
  throw InputError(loc + ": " + field + ": " + what);
}

// Fields of a LLaMA config.json that do not change what runs or how long it takes: token
// ids, training and numerical settings (RMSNorm's epsilon, RoPE's base and scaling change
// values, not work), and bookkeeping. Everything else must be read below or is refused.
const std::set<std::string>& timing_free_fields() {
  static const std::set<std::string> s = {
      "_name_or_path", "attention_dropout", "bos_token_id", "eos_token_id",          "pad_token_id",
      "initializer_range", "max_position_embeddings", "pretraining_tp", "rms_norm_eps", "rope_scaling",
      "rope_theta",  "torch_dtype",       "transformers_version", "use_cache",    "_commit_hash"};
  return s;
}

struct Reader {
  const std::string& file;
  const YAML::Node& root;
  std::map<std::string, YAML::Node> fields;

  Reader(const std::string& f, const YAML::Node& r) : file(f), root(r) {
    if (!root.IsMap()) refuse(at(file, root.Mark()), "(document)", "expected a JSON object (a Hugging Face config.json)");
    for (const auto& kv : root) {
      if (!kv.first.IsScalar()) refuse(at(file, kv.first.Mark()), "(document)", "expected a field name");
      const std::string key = kv.first.as<std::string>();
      if (!fields.emplace(key, kv.second).second) refuse(at(file, kv.first.Mark()), key, "given twice");
    }
  }
  bool has(const std::string& key) const { return fields.count(key) != 0; }
  const YAML::Node& node(const std::string& key) const { return fields.at(key); }
  std::string text(const std::string& key) const {
    const YAML::Node& n = node(key);
    if (!n.IsScalar()) refuse(at(file, n.Mark()), key, "expected a single value");
    return n.Scalar();
  }
  std::int64_t integer(const std::string& key, std::int64_t lo, std::int64_t hi) const {
    if (!has(key)) refuse(at(file, root.Mark()), key, "required field is missing");
    std::int64_t v = 0;
    std::string why;
    if (node(key).Tag() == "!") refuse(at(file, node(key).Mark()), key, "expected a number, got a string");
    if (!parse_int_in(text(key), lo, hi, &v, &why)) refuse(at(file, node(key).Mark()), key, why);
    return v;
  }
  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const std::string t = text(key);
    if (t == "true") return true;
    if (t == "false") return false;
    refuse(at(file, node(key).Mark()), key, "expected true or false, got '" + t + "'");
  }
  // A list of layer indices, each 0..layers - 1.
  std::vector<std::int64_t> layer_list(const std::string& key, std::int64_t layers) const {
    const YAML::Node& n = node(key);
    if (!n.IsSequence()) refuse(at(file, n.Mark()), key, "expected a list of layer indices");
    std::vector<std::int64_t> out;
    for (const auto& x : n) {
      std::int64_t v = 0;
      std::string why;
      if (!x.IsScalar() || !parse_int_in(x.Scalar(), 0, layers - 1, &v, &why))
        refuse(at(file, x.Mark()), key, "expected layer indices from 0 to " + std::to_string(layers - 1));
      out.push_back(v);
    }
    return out;
  }
  // A field the simulator models one value of.
  void require_text(const std::string& key, const std::string& want, const std::string& why) const {
    if (has(key) && text(key) != want) refuse(at(file, node(key).Mark()), key, "'" + text(key) + "' is not modelled: " + why);
  }
  void require_false(const std::string& key, const std::string& why) const {
    if (boolean(key, false)) refuse(at(file, node(key).Mark()), key, "true is not modelled: " + why);
  }
};

// The architectures read: a dense LLaMA, and the mixture-of-experts Mixtral and Qwen3-MoE.
struct Architecture {
  const char* name;        // in "architectures"
  const char* model_type;  // its model_type
  std::set<std::string> fields;  // what it adds to the LLaMA fields read
};
const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> a = {
      {"LlamaForCausalLM", "llama", {}},
      {"MixtralForCausalLM", "mixtral", {"num_local_experts", "num_experts_per_tok", "sliding_window",
                                         "output_router_logits", "router_aux_loss_coef"}},
      {"Qwen3MoeForCausalLM", "qwen3_moe", {"num_experts", "num_experts_per_tok", "moe_intermediate_size",
                                            "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob",
                                            "use_sliding_window", "sliding_window", "max_window_layers",
                                            "output_router_logits", "router_aux_loss_coef"}},
      // Multi-head latent attention and DeepSeekMoE. auto_map names the model's code, ep_size
      // how its own code splits experts (the mapping here is --ep's), routed_scaling_factor
      // and norm_topk_prob scale values; num_nextn_predict_layers is the multi-token
      // prediction module, which plain decoding does not run (docs/model.md section 13.12).
      {"DeepseekV3ForCausalLM", "deepseek_v3", {"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
                                                "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "n_group",
                                                "topk_group", "topk_method", "scoring_func", "norm_topk_prob",
                                                "routed_scaling_factor", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim",
                                                "qk_rope_head_dim", "v_head_dim", "num_nextn_predict_layers", "ep_size",
                                                "auto_map", "quantization_config", "aux_loss_alpha", "seq_aux"}},
      // Llama 4: the language model is the text_config inside (llama4_text, below).
      {"Llama4ForConditionalGeneration", "llama4", {}},
  };
  return a;
}

// Llama 4's language model (a config.json's text_config): MoE layers of routed experts and a
// shared one, every layer's by interleave_moe_layer_step; layers without RoPE (global
// attention, no q/k norm) among layers of chunked attention. attn_temperature_tuning scales
// the queries of the layers without RoPE by a factor of their position, which the
// attention's score scale takes at no cost; floor_scale and attn_scale are that factor's
// values; router_jitter_noise is training's.
const Architecture& llama4_text() {
  static const Architecture a{"Llama4ForConditionalGeneration", "llama4_text",
                              {"num_local_experts", "num_experts_per_tok", "interleave_moe_layer_step", "moe_layers",
                               "intermediate_size_mlp", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise",
                               "use_qk_norm", "no_rope_layers", "attention_chunk_size", "attn_temperature_tuning",
                               "floor_scale", "attn_scale"}};
  return a;
}

// Fields beside Llama 4's text_config: the vision encoder's (its config and image tokens),
// which text-only serving does not run, and bookkeeping.
const std::set<std::string>& llama4_outer_fields() {
  static const std::set<std::string> s = {"architectures", "model_type", "text_config", "torch_dtype", "transformers_version",
                                          "vision_config", "image_token_index", "boi_token_index", "eoi_token_index",
                                          "tie_word_embeddings"};
  return s;
}

const Architecture& architecture_of(const Reader& r) {
  const std::vector<Architecture>& all = architectures();
  if (!r.has("architectures")) {  // a user's LLaMA file may leave it out
    for (const Architecture& a : all)
      if (r.has("model_type") && r.text("model_type") == a.model_type) return a;
    return all.front();
  }
  const YAML::Node& n = r.node("architectures");
  if (n.IsSequence())
    for (const auto& x : n)
      for (const Architecture& a : all)
        if (x.IsScalar() && x.Scalar() == a.name) return a;
  std::string names;
  for (const Architecture& a : all) names += (names.empty() ? "\"" : ", \"") + std::string(a.name) + "\"";
  refuse(at(r.file, n.Mark()), "architectures", "expected a list holding one of " + names +
                                                    " (other architectures are not modelled; see docs/model.md section 13)");
}

// Which layers are MoE layers (Qwen3-MoE: every decoder_sparse_step-th, but mlp_only_layers).
std::vector<char> moe_layers(const Reader& r, std::int64_t layers) {
  std::vector<char> moe(static_cast<std::size_t>(layers), 1);
  const std::int64_t step = r.has("decoder_sparse_step") ? r.integer("decoder_sparse_step", 1, layers) : 1;
  for (std::int64_t i = 0; i < layers; ++i) moe[static_cast<std::size_t>(i)] = (i + 1) % step == 0;
  if (r.has("mlp_only_layers"))
    for (const std::int64_t l : r.layer_list("mlp_only_layers", layers)) moe[static_cast<std::size_t>(l)] = 0;
  return moe;
}

// DeepSeekMoE: n_routed_experts routed and n_shared_experts shared experts (one SiLU MLP of
// their summed width), the first first_k_dense_replace layers dense and then every
// moe_layer_freq-th a MoE one, routing group-limited (noaux_tc, group_limited_greedy) or not
// (greedy), scores by softmax or sigmoid.
LlmMoe read_deepseek_moe(const Reader& r, const Architecture& a, const LlmShape& m) {
  LlmMoe e;
  e.architecture = a.name;
  e.experts = r.integer("n_routed_experts", 1, 65536);
  e.top_k = r.integer("num_experts_per_tok", 1, e.experts);
  e.expert_intermediate = r.integer("moe_intermediate_size", 1, kLlmMaxIntermediate);
  const std::int64_t shared = r.has("n_shared_experts") && !r.node("n_shared_experts").IsNull()
                                  ? r.integer("n_shared_experts", 0, 64) : 0;
  e.shared_intermediate = shared * e.expert_intermediate;
  const std::int64_t first = r.has("first_k_dense_replace") ? r.integer("first_k_dense_replace", 0, m.layers) : 0;
  const std::int64_t freq = r.has("moe_layer_freq") ? r.integer("moe_layer_freq", 1, m.layers) : 1;
  e.moe_layer.assign(static_cast<std::size_t>(m.layers), 0);
  for (std::int64_t i = first; i < m.layers; ++i) e.moe_layer[static_cast<std::size_t>(i)] = i % freq == 0;
  const std::string method = r.has("topk_method") ? r.text("topk_method") : "greedy";
  if (method != "greedy" && method != "noaux_tc" && method != "group_limited_greedy")
    refuse(at(r.file, r.node("topk_method").Mark()), "topk_method",
           "'" + method + "' is not modelled: greedy, group_limited_greedy or noaux_tc (top-k within the best groups)");
  if (method != "greedy") {
    e.expert_groups = r.integer("n_group", 1, e.experts);
    e.topk_groups = r.integer("topk_group", 1, e.expert_groups);
    if (e.experts % e.expert_groups != 0)
      refuse(at(r.file, r.node("n_group").Mark()), "n_group",
             std::to_string(e.expert_groups) + " does not divide the " + std::to_string(e.experts) + " routed experts");
    if (e.top_k > e.topk_groups * (e.experts / e.expert_groups))
      refuse(at(r.file, r.node("topk_group").Mark()), "topk_group",
             std::to_string(e.topk_groups) + " groups hold fewer than the " + std::to_string(e.top_k) + " experts a token takes");
  }
  e.scoring = r.has("scoring_func") ? r.text("scoring_func") : "softmax";
  if (e.scoring != "softmax" && e.scoring != "sigmoid")
    refuse(at(r.file, r.node("scoring_func").Mark()), "scoring_func", "'" + e.scoring + "' is not modelled: softmax or sigmoid");
  return e;
}

// Llama 4's experts: num_local_experts routed ones and a shared one, each of
// intermediate_size, scored by a sigmoid; MoE layers every interleave_moe_layer_step-th (or
// the moe_layers listed); the q/k norm (use_qk_norm) an L2 norm without weights.
LlmMoe read_llama4_moe(const Reader& r, const Architecture& a, const LlmShape& m) {
  LlmMoe e;
  e.architecture = a.name;
  e.experts = r.integer("num_local_experts", 1, 65536);
  e.top_k = r.integer("num_experts_per_tok", 1, e.experts);
  e.expert_intermediate = e.shared_intermediate = r.integer("intermediate_size", 1, kLlmMaxIntermediate);
  e.scoring = "sigmoid";
  e.qk_norm = e.qk_l2 = r.boolean("use_qk_norm", true);
  e.moe_layer.assign(static_cast<std::size_t>(m.layers), 0);
  if (r.has("moe_layers") && !r.node("moe_layers").IsNull()) {
    for (const std::int64_t l : r.layer_list("moe_layers", m.layers)) e.moe_layer[static_cast<std::size_t>(l)] = 1;
  } else {
    const std::int64_t step = r.has("interleave_moe_layer_step") ? r.integer("interleave_moe_layer_step", 1, m.layers) : 1;
    for (std::int64_t i = 0; i < m.layers; ++i) e.moe_layer[static_cast<std::size_t>(i)] = (i + 1) % step == 0;
  }
  return e;
}

// Llama 4's layers without RoPE (no_rope_layers: 0 for such a layer; by default every fourth)
// and its chunked attention (attention_chunk_size; null: none).
void read_llama4_attention(const Reader& r, LlmShape& m) {
  m.nope_every = 4 <= m.layers ? 4 : 0;
  if (r.has("no_rope_layers") && !r.node("no_rope_layers").IsNull()) {
    const YAML::Node& n = r.node("no_rope_layers");
    if (!n.IsSequence() || static_cast<std::int64_t>(n.size()) != m.layers)
      refuse(at(r.file, n.Mark()), "no_rope_layers", "expected a list of num_hidden_layers (" + std::to_string(m.layers) + ") 0s and 1s");
    std::vector<std::int64_t> rope;
    for (const auto& x : n) {
      if (!x.IsScalar() || (x.Scalar() != "0" && x.Scalar() != "1"))
        refuse(at(r.file, x.Mark()), "no_rope_layers", "expected 0 (a layer without RoPE) or 1");
      rope.push_back(x.Scalar() == "1");
    }
    m.nope_every = 0;
    for (std::int64_t i = 0; i < m.layers && m.nope_every == 0; ++i)
      if (!rope[static_cast<std::size_t>(i)]) m.nope_every = i + 1;
    for (std::int64_t i = 0; i < m.layers; ++i)
      if (rope[static_cast<std::size_t>(i)] != (m.nope_every == 0 || (i + 1) % m.nope_every != 0))
        refuse(at(r.file, n.Mark()), "no_rope_layers",
               "layer " + std::to_string(i) + " breaks the pattern: the layers without RoPE must be every Nth (layer i with "
               "(i + 1) % N == 0), N " + std::to_string(m.nope_every) + " from the first");
  }
  if (r.has("attention_chunk_size") && !r.node("attention_chunk_size").IsNull())
    m.attn_chunk = r.integer("attention_chunk_size", 1, kLlmMaxContext);
}

LlmMoe read_moe(const Reader& r, const Architecture& a, const LlmShape& m) {
  LlmMoe e;
  e.architecture = a.name;
  if (std::string(a.model_type) == "llama") return e;
  if (std::string(a.model_type) == "llama4_text") return read_llama4_moe(r, a, m);
  auto null_or = [&](const char* key, const std::string& why) {
    if (r.has(key) && !r.node(key).IsNull()) refuse(at(r.file, r.node(key).Mark()), key, "not null: " + why);
  };
  if (std::string(a.model_type) == "deepseek_v3") return read_deepseek_moe(r, a, m);
  e.experts = r.integer(r.has("num_local_experts") ? "num_local_experts" : "num_experts", 1, 65536);
  e.top_k = r.integer("num_experts_per_tok", 1, e.experts);
  if (std::string(a.model_type) == "mixtral") {
    null_or("sliding_window", "sliding-window attention is not modelled");
    e.expert_intermediate = m.intermediate;
  } else {  // qwen3_moe
    r.require_false("use_sliding_window", "sliding-window attention is not modelled");
    e.expert_intermediate = r.integer("moe_intermediate_size", 1, kLlmMaxIntermediate);
    e.qk_norm = true;
  }
  e.moe_layer = moe_layers(r, m.layers);
  return e;
}

struct ModelRead {
  LlmShape shape;
  LlmMoe moe;
  std::int64_t weight_bytes;
};

// Multi-head latent attention (DeepSeek-V3): a head's q and k are qk_nope_head_dim +
// qk_rope_head_dim values, its v v_head_dim; the latents kv_lora_rank and q_lora_rank (null
// or absent: none, queries from the hidden state).
void read_mla(const Reader& r, LlmShape& m) {
  m.kv_lora = r.integer("kv_lora_rank", 1, kLlmMaxHeadDim);
  m.q_lora = r.has("q_lora_rank") && !r.node("q_lora_rank").IsNull() ? r.integer("q_lora_rank", 1, kLlmMaxHidden) : 0;
  const std::int64_t nope = r.integer("qk_nope_head_dim", 1, kLlmMaxHeadDim);
  m.rope_dim = r.integer("qk_rope_head_dim", 2, kLlmMaxHeadDim);
  if (m.rope_dim % 2 != 0)
    refuse(at(r.file, r.node("qk_rope_head_dim").Mark()), "qk_rope_head_dim",
           std::to_string(m.rope_dim) + " values: RoPE rotates a head's values in pairs, so it must be even");
  m.head_dim = nope + m.rope_dim;
  if (m.head_dim > kLlmMaxHeadDim)
    refuse(at(r.file, r.node("qk_nope_head_dim").Mark()), "qk_nope_head_dim",
           "a head of " + std::to_string(m.head_dim) + " values (with qk_rope_head_dim): at most " + std::to_string(kLlmMaxHeadDim));
  m.v_head = r.integer("v_head_dim", 1, kLlmMaxHeadDim);
  if (m.kv_lora + m.rope_dim > kLlmMaxHeadDim)  // the absorbed decode's one KV head
    refuse(at(r.file, r.node("kv_lora_rank").Mark()), "kv_lora_rank",
           std::to_string(m.kv_lora) + " with qk_rope_head_dim " + std::to_string(m.rope_dim) + ": a cached latent of " +
               std::to_string(m.kv_lora + m.rope_dim) + " values, at most " + std::to_string(kLlmMaxHeadDim));
  if (m.kv_heads != m.heads)
    refuse(at(r.file, r.node("num_key_value_heads").Mark()), "num_key_value_heads",
           std::to_string(m.kv_heads) + ": latent attention gives every head its own k and v (num_attention_heads, " +
               std::to_string(m.heads) + ")");
}

// The weights' bytes a quantization_config gives (fp8: 1); 0 where the file says none.
std::int64_t weight_bytes_of(const Reader& r) {
  if (!r.has("quantization_config")) return 0;
  const YAML::Node& q = r.node("quantization_config");
  const YAML::Node method = q.IsMap() ? q["quant_method"] : YAML::Node();
  if (!method.IsDefined() || !method.IsScalar() || method.Scalar() != "fp8")
    refuse(at(r.file, q.Mark()), "quantization_config", "only fp8 weights (quant_method \"fp8\") are modelled");
  const YAML::Node fmt = q["fmt"];
  if (fmt.IsDefined() && (!fmt.IsScalar() || fmt.Scalar() != "e4m3"))
    refuse(at(r.file, fmt.Mark()), "quantization_config.fmt", "only e4m3 fp8 weights are modelled");
  return 1;
}

ModelRead read_text_model(const std::string& file, const YAML::Node& root, const Architecture& arch);

// Llama 4: its fields beside text_config, then the language model in it.
ModelRead read_llama4(const std::string& file, const Reader& r) {
  for (const auto& kv : r.root) {
    const std::string key = kv.first.as<std::string>();
    if (llama4_outer_fields().count(key) == 0)
      refuse(at(file, kv.first.Mark()), key, "not modelled beside Llama 4's text_config (the language model is read from it)");
  }
  r.require_text("model_type", "llama4", "the Llama4ForConditionalGeneration architecture is llama4");
  if (!r.has("text_config") || !r.node("text_config").IsMap())
    refuse(at(file, r.has("text_config") ? r.node("text_config").Mark() : r.root.Mark()), "text_config",
           "expected the language model's config (a JSON object)");
  return read_text_model(file, r.node("text_config"), llama4_text());
}

ModelRead read_model(const std::string& file, const YAML::Node& root) {
  const Reader r(file, root);
  const Architecture& arch = architecture_of(r);
  if (std::string(arch.model_type) == "llama4") return read_llama4(file, r);
  return read_text_model(file, root, arch);
}

ModelRead read_text_model(const std::string& file, const YAML::Node& root, const Architecture& arch) {
  const Reader r(file, root);
  static const std::set<std::string> read = {
      "architectures", "model_type", "hidden_act", "attention_bias", "mlp_bias", "hidden_size",
      "intermediate_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "vocab_size",
      "head_dim", "tie_word_embeddings"};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (read.count(key) == 0 && timing_free_fields().count(key) == 0 && arch.fields.count(key) == 0)
      refuse(at(file, kv.first.Mark()), key,
           std::string("not modelled for ") + arch.name +
               " (the simulator models LLaMA's architecture, the Mixtral, Qwen3-MoE, DeepSeek-V3 and Llama 4 experts, and "
               "grouped-query, Llama 4's or DeepSeek-V3's latent attention: SiLU-gated MLPs, no biases; see docs/model.md "
               "section 13)");
  }
  r.require_text("model_type", arch.model_type, std::string("the ") + arch.name + " architecture is " + arch.model_type);
  r.require_text("hidden_act", "silu", "the MLP is SiLU(gate) x up");
  r.require_false("attention_bias", "the projections have no biases");
  r.require_false("mlp_bias", "the projections have no biases");

  LlmShape m{};
  m.hidden = r.integer("hidden_size", 1, kLlmMaxHidden);
  m.intermediate = r.integer("intermediate_size", 1, kLlmMaxIntermediate);
  m.heads = r.integer("num_attention_heads", 1, kLlmMaxHeads);
  m.kv_heads = r.has("num_key_value_heads") ? r.integer("num_key_value_heads", 1, kLlmMaxHeads) : m.heads;
  if (m.heads % m.kv_heads != 0)
    refuse(at(file, r.node("num_key_value_heads").Mark()), "num_key_value_heads",
         std::to_string(m.kv_heads) + " does not divide num_attention_heads (" + std::to_string(m.heads) + ")");
  if (r.has("kv_lora_rank") || std::string(arch.model_type) == "deepseek_v3") {
    m.head_dim = 2;  // read_mla sets it
  } else if (r.has("head_dim")) {
    m.head_dim = r.integer("head_dim", 1, kLlmMaxHeadDim);
  } else {
    if (m.hidden % m.heads != 0 || m.hidden / m.heads > kLlmMaxHeadDim)
      refuse(at(file, r.node("hidden_size").Mark()), "hidden_size",
           std::to_string(m.hidden) + " is not num_attention_heads (" + std::to_string(m.heads) +
               ") times a head size of 1.." + std::to_string(kLlmMaxHeadDim) + " (give head_dim)");
    m.head_dim = m.hidden / m.heads;
  }
  if (m.head_dim % 2 != 0)  // RoPE rotates a head's values in pairs
    refuse(at(file, r.has("head_dim") ? r.node("head_dim").Mark() : r.node("hidden_size").Mark()),
           r.has("head_dim") ? "head_dim" : "hidden_size",
           "a head of " + std::to_string(m.head_dim) + " values: RoPE rotates a head's values in pairs, so it must be even");
  m.layers = r.integer("num_hidden_layers", 1, kLlmMaxLayers);
  m.vocab = r.integer("vocab_size", 1, kLlmMaxVocab);
  m.tied = r.boolean("tie_word_embeddings", false) ? 1 : 0;
  if (r.has("kv_lora_rank") || std::string(arch.model_type) == "deepseek_v3") read_mla(r, m);  // required there
  LlmMoe moe = read_moe(r, arch, m);
  if (std::string(arch.model_type) == "llama4_text") {
    read_llama4_attention(r, m);
    // The dense layers' MLP (intermediate_size is the experts')
    if (r.has("intermediate_size_mlp")) m.intermediate = r.integer("intermediate_size_mlp", 1, kLlmMaxIntermediate);
  }
  return {m, std::move(moe), weight_bytes_of(r)};
}

std::string models_dir() { return data_dir() + "/models"; }

}  // namespace

std::vector<std::string> shipped_llm_models() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(models_dir(), ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

LlmModelFile load_llm_model(const std::string& name_or_path, const std::string& what) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  LlmModelFile model;
  if (is_path) {
    model.path = name_or_path;
    model.name = fs::path(name_or_path).stem().string();
  } else {
    const std::vector<std::string> names = shipped_llm_models();
    if (std::find(names.begin(), names.end(), name_or_path) == names.end()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      throw InputError(what + " " + (name_or_path.empty() ? std::string("''") : name_or_path) +
                       ": no such model (shipped: " + list + "; or give the path of a config.json)");
    }
    model.path = models_dir() + "/" + name_or_path + ".json";
    model.name = name_or_path;
  }
  const std::string text = read_file(model.path);
  check_utf8(model.path, text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(at(model.path, e.mark) + ": (document): not valid JSON: " + e.msg);
  }
  if (!root.IsDefined() || root.IsNull()) throw InputError(model.path + ":1:1: (document): empty file, expected a JSON object");
  try {
    ModelRead read = read_model(model.path, root);
    model.shape = read.shape;
    model.moe = std::move(read.moe);
    model.weight_bytes = read.weight_bytes;
  } catch (const YAML::Exception& e) {
    throw InputError(at(model.path, e.mark) + ": (document): " + e.msg);
  }
  return model;
}

LlmModelParams llm_model_params(const LlmModelFile& f) {
  const LlmShape& m = f.shape;
  const LlmParams dense = llm_params(m);
  LlmModelParams p;
  p.attention = dense.attention + (f.moe.qk_norm && !f.moe.qk_l2 ? 2 * m.head_dim : 0);  // latent attention's norms: in dense.norms
  p.dense_mlp = dense.mlp;
  p.router = m.hidden * f.moe.experts;
  p.expert = 3 * m.hidden * f.moe.expert_intermediate;
  p.shared = 3 * m.hidden * f.moe.shared_intermediate;
  const std::int64_t outside = dense.embedding + dense.final_norm + dense.lm_head;
  p.total = p.active = outside;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const bool moe = f.moe.experts > 0 && f.moe.moe_layer[static_cast<std::size_t>(l)];
    p.moe_layers += moe;
    const std::int64_t common = p.attention + dense.norms;
    p.total += common + (moe ? p.router + f.moe.experts * p.expert + p.shared : p.dense_mlp);
    p.active += common + (moe ? p.router + f.moe.top_k * p.expert + p.shared : p.dense_mlp);
  }
  return p;
}

void require_dense(const LlmModelFile& m, const std::string& what) {
  if (m.moe.experts == 0) return;
  throw InputError(what + " " + m.name + ": a mixture-of-experts model (" + m.moe.architecture + ", " +
                   std::to_string(m.moe.experts) + " experts, " + std::to_string(m.moe.top_k) +
                   " a token): it places dense models only; `eval llm --model " + m.name + "` times it");
}

}  // namespace kb
