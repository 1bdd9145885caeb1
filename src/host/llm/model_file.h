// Whole models from Hugging Face config.json files (the LLaMA architecture): the shipped
// ones in models/ of the data folder by name, or any file by path.
#pragma once

#include <string>
#include <vector>

#include "device/models/llm/llm_shape.h"

namespace kb {

// A mixture-of-experts model's feed-forward layers, as its config.json gives them (Mixtral,
// Qwen3-MoE, DeepSeek-V3); experts == 0: a dense model. A MoE layer's MLP is `experts` SiLU-gated experts
// of `expert_intermediate`, `top_k` a token, chosen by a router (hidden x experts); a dense
// layer's is the LLaMA MLP of the shape's intermediate size.
struct LlmMoe {
  std::string architecture;              // the config's architecture (LlamaForCausalLM for a dense model)
  std::int64_t experts = 0;              // routed experts: num_local_experts, num_experts
  std::int64_t top_k = 0;                // num_experts_per_tok
  std::int64_t expert_intermediate = 0;  // an expert's intermediate size (moe_intermediate_size)
  std::vector<char> moe_layer;           // per layer: 1 a MoE layer, 0 a dense one
  bool qk_norm = false;                  // Qwen3: an RMSNorm over each head's q and k (head_dim weights each)
  bool qk_l2 = false;                    // Llama 4: the q/k norm an L2 norm without weights, on layers with RoPE only
  std::int64_t shared_intermediate = 0;  // the shared experts' intermediate size, together (0: none)
  std::int64_t expert_groups = 1, topk_groups = 1;  // group-limited routing (n_group, topk_group)
  std::string scoring = "softmax";       // the router's scores: softmax, or sigmoid (DeepSeek-V3)
};

struct LlmModelFile {
  std::string name;  // the shipped model's name, or the file's stem
  std::string path;  // the file read
  LlmShape shape;    // the attention, the dense layers' MLP, the embedding and the LM head
  LlmMoe moe;
  std::int64_t weight_bytes = 0;  // a quantization_config's (fp8: 1); 0: the file gives none
};

// Every weight of a model (total), and those one token uses (active: of each MoE layer the
// router and top_k experts, and every other weight, the embedding and the LM head included,
// as the published active counts include them).
struct LlmModelParams {
  std::int64_t total = 0, active = 0;
  std::int64_t attention = 0;    // a layer's attention (its q and k norms with it)
  std::int64_t dense_mlp = 0;    // a dense layer's MLP
  std::int64_t router = 0;       // a MoE layer's router
  std::int64_t expert = 0;       // one expert
  std::int64_t shared = 0;       // the shared expert (or experts, together)
  std::int64_t moe_layers = 0;   // how many layers are MoE layers
};
LlmModelParams llm_model_params(const LlmModelFile& m);

// `name_or_path`: NAME of a shipped model (models/NAME.json), or a path to a config.json
// (anything holding '/' or ending in .json). A file that is not a LLaMA, Mixtral or Qwen3-MoE
// config, or that sets a field the simulator does not model (attention_bias: true, a sliding
// window, ...), is an InputError naming the field and where it is (FILE:LINE:COL: field: ...).
// `what` names the argument in an error ("--model").
LlmModelFile load_llm_model(const std::string& name_or_path, const std::string& what = "--model");

// The shipped models' names, sorted.
std::vector<std::string> shipped_llm_models();

// Throws InputError (naming `what` and the model) for a mixture-of-experts model: for what
// takes dense models only (`model place`).
void require_dense(const LlmModelFile& m, const std::string& what);

}  // namespace kb
