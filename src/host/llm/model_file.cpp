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
  };
  return a;
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
  if (r.has("mlp_only_layers")) {
    const YAML::Node& n = r.node("mlp_only_layers");
    if (!n.IsSequence()) refuse(at(r.file, n.Mark()), "mlp_only_layers", "expected a list of layer indices");
    for (const auto& x : n) {
      std::int64_t v = 0;
      std::string why;
      if (!x.IsScalar() || !parse_int_in(x.Scalar(), 0, layers - 1, &v, &why))
        refuse(at(r.file, x.Mark()), "mlp_only_layers", "expected layer indices from 0 to " + std::to_string(layers - 1));
      moe[static_cast<std::size_t>(v)] = 0;
    }
  }
  return moe;
}

LlmMoe read_moe(const Reader& r, const Architecture& a, const LlmShape& m) {
  LlmMoe e;
  e.architecture = a.name;
  if (std::string(a.model_type) == "llama") return e;
  auto null_or = [&](const char* key, const std::string& why) {
    if (r.has(key) && !r.node(key).IsNull()) refuse(at(r.file, r.node(key).Mark()), key, "not null: " + why);
  };
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
};

ModelRead read_model(const std::string& file, const YAML::Node& root) {
  const Reader r(file, root);
  static const std::set<std::string> read = {
      "architectures", "model_type", "hidden_act", "attention_bias", "mlp_bias", "hidden_size",
      "intermediate_size", "num_attention_heads", "num_key_value_heads", "num_hidden_layers", "vocab_size",
      "head_dim", "tie_word_embeddings"};
  const Architecture& arch = architecture_of(r);
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (read.count(key) == 0 && timing_free_fields().count(key) == 0 && arch.fields.count(key) == 0)
      refuse(at(file, kv.first.Mark()), key,
           std::string("not modelled for ") + arch.name +
               " (the simulator models LLaMA's architecture and the Mixtral and Qwen3-MoE experts: grouped-query "
               "attention, SiLU-gated MLPs, no biases; see docs/model.md section 13)");
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
  if (r.has("head_dim")) {
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
  return {m, read_moe(r, arch, m)};
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
  } catch (const YAML::Exception& e) {
    throw InputError(at(model.path, e.mark) + ": (document): " + e.msg);
  }
  return model;
}

LlmModelParams llm_model_params(const LlmModelFile& f) {
  const LlmShape& m = f.shape;
  const LlmParams dense = llm_params(m);
  LlmModelParams p;
  p.attention = dense.attention + (f.moe.qk_norm ? 2 * m.head_dim : 0);
  p.dense_mlp = dense.mlp;
  p.router = m.hidden * f.moe.experts;
  p.expert = 3 * m.hidden * f.moe.expert_intermediate;
  const std::int64_t outside = dense.embedding + dense.final_norm + dense.lm_head;
  p.total = p.active = outside;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    const bool moe = f.moe.experts > 0 && f.moe.moe_layer[static_cast<std::size_t>(l)];
    p.moe_layers += moe;
    const std::int64_t common = p.attention + dense.norms;
    p.total += common + (moe ? p.router + f.moe.experts * p.expert : p.dense_mlp);
    p.active += common + (moe ? p.router + f.moe.top_k * p.expert : p.dense_mlp);
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
