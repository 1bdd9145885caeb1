// Choosing and calling a batched-model backend.
#pragma once

#include <string>
#include <vector>

#include "../../device/backends/backends.h"

namespace kb {

enum class BackendKind { omp, cuda };
const char* to_string(BackendKind b);

// "auto" picks cuda when the build has it and a device is present, else omp. Asking for
// cuda where it cannot run is an InputError that says why.
BackendKind resolve_backend(const std::string& requested);

std::vector<GemmResult> eval_gemm(BackendKind b, const std::vector<GemmConfig>& configs, int threads = 0);
// Throws InputError when sweep_gemm could not run these arguments.
void validate_sweep(const batched::GemmSpace& space, std::int64_t chunk, const batched::GemmReductions& red);
batched::GemmSweepSummary sweep_gemm(BackendKind b, const batched::GemmSpace& space, std::int64_t chunk = 1 << 20,
                                     int threads = 0, const batched::GemmReductions& red = {});

}  // namespace kb
