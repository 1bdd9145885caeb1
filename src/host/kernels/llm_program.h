// Reference programs of a whole model's layer: its vector kernels on one tensor-parallel
// rank (RMSNorm, RoPE, SiLU x up, residual add, KV append), as explicit loads, vector-engine
// passes and stores per PE (docs/model.md section 13.4).
#pragma once

#include <string>

#include "../../device/models/llm_vector.h"

namespace kb {

// The kernel on the reference engine: its figures as an LlmVecResult. The passes are timed,
// not computed (the program runs without data).
LlmVecResult llm_vec_reference(const LlmVecConfig& c, const std::string* trace_path = nullptr);
// The ops it builds, at most.
std::int64_t llm_vec_reference_ops(const LlmVecConfig& c);

}  // namespace kb
