// Whole models from Hugging Face config.json files (the LLaMA architecture): the shipped
// ones in models/ of the data folder by name, or any file by path.
#pragma once

#include <string>
#include <vector>

#include "device/models/llm/llm_shape.h"

namespace kb {

struct LlmModelFile {
  std::string name;  // the shipped model's name, or the file's stem
  std::string path;  // the file read
  LlmShape shape;
};

// `name_or_path`: NAME of a shipped model (models/NAME.json), or a path to a config.json
// (anything holding '/' or ending in .json). A file that is not a LLaMA config, or that
// sets a field the simulator does not model (num_local_experts, attention_bias: true, ...),
// is an InputError naming the field and where it is (FILE:LINE:COL: field: ...).
// `what` names the argument in an error ("--model").
LlmModelFile load_llm_model(const std::string& name_or_path, const std::string& what = "--model");

// The shipped models' names, sorted.
std::vector<std::string> shipped_llm_models();

}  // namespace kb
