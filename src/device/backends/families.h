// The one list of workload families. Each backend instantiates the generic evaluation and
// sweep engine once per entry: X(id, Model), Model as in src/device/models/gemm.h.
#pragma once

#include "../models/allreduce.h"
#include "../models/decode.h"
#include "../models/gemm.h"

#define KB_FAMILIES(X) X(gemm, ::kb::GemmModel) X(allreduce, ::kb::AllreduceModel) X(decode, ::kb::DecodeModel)
