// The llm family's mixture-of-experts parts (docs/model.md section 13.11): the axes of a MoE
// model and of its expert-parallel serving, the presets that set them (--ep, --ep-level, a
// MoE --model), the routing of a step's tokens before either engine runs (--routing,
// --routing-seed), and the MoE columns, written only for MoE configs.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../../llm/model_file.h"
#include "../family.h"

namespace kb {

std::vector<AxisDesc> llm_moe_axes();
std::vector<PresetDesc> llm_moe_presets();
std::vector<ColumnDesc> llm_moe_columns();
// --model's values for a MoE model's own axes (none for a dense model). InputError for a
// model whose dense and MoE layers interleave: the layer program is one layer repeated.
std::vector<std::pair<std::string, std::string>> llm_moe_model_values(const LlmModelFile& m);
// Multi-head latent attention's axes (docs/model.md section 13.12), and --model's values for
// them (none for a model without it).
std::vector<AxisDesc> llm_mla_axes();
std::vector<std::pair<std::string, std::string>> llm_mla_model_values(const LlmModelFile& m);
// Llama 4's layers without RoPE and chunked attention (docs/model.md section 13.14): their
// axes, and --model's values for them (none for a model without them).
std::vector<AxisDesc> llm_nope_axes();
std::vector<std::pair<std::string, std::string>> llm_nope_model_values(const LlmModelFile& m);
// Family::prepare: routes one micro-batch's tokens (--routing, --routing-seed) into the
// config's expert_tokens.
void llm_moe_prepare(const std::map<std::string, std::string>& presets, const std::vector<std::string>& swept, void* config);
// Sets the family's prepare step (llm_moe_prepare), the axes it reads and the fields it writes.
void llm_moe_set_prepare(Family& f);

}  // namespace kb
