// The one list of workload families. Each backend instantiates the generic evaluation and
// sweep engine once per entry: X(id, Model), Model as in src/device/models/gemm/gemm_model.h.
#pragma once

#include "collective/allreduce_model.h"
#include "decode/decode_model.h"
#include "gemm/gemm_model.h"
#include "llm/llm_model.h"

#define KB_FAMILIES(X) X(gemm, ::kb::GemmModel) X(allreduce, ::kb::AllreduceModel) X(decode, ::kb::DecodeModel) X(llm, ::kb::LlmModel)
