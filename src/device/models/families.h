// The one list of workload families. Each backend instantiates the generic evaluation and
// sweep engine once per entry: X(id, Model), Model as in src/device/models/gemm_model.h.
#pragma once

#include "allreduce_model.h"
#include "decode_model.h"
#include "gemm_model.h"
#include "llm_model.h"

#define KB_FAMILIES(X) X(gemm, ::kb::GemmModel) X(allreduce, ::kb::AllreduceModel) X(decode, ::kb::DecodeModel) X(llm, ::kb::LlmModel)
