#include "backend.h"

#include "../common/error.h"

namespace kb {

const char* to_string(BackendKind b) { return b == BackendKind::cuda ? "cuda" : "omp"; }

BackendKind resolve_backend(const std::string& requested) {
  std::string why;
  if (requested == "omp") return BackendKind::omp;
  if (requested == "auto") return batched::cuda_device_count(&why) > 0 ? BackendKind::cuda : BackendKind::omp;
  if (requested == "cuda") {
    if (batched::cuda_device_count(&why) > 0) return BackendKind::cuda;
    throw InputError("--backend cuda: " + why);
  }
  throw InputError("--backend " + requested + ": expected auto, cuda or omp");
}

std::vector<GemmResult> eval_gemm(BackendKind b, const std::vector<GemmConfig>& configs, int threads) {
  std::vector<GemmResult> out(configs.size());
  if (configs.empty()) return out;
  if (b == BackendKind::cuda) batched::eval_gemm_cuda(configs.data(), configs.size(), out.data());
  else batched::eval_gemm_omp(configs.data(), configs.size(), out.data(), threads);
  return out;
}

void validate_sweep(const batched::GemmSpace& space, std::int64_t chunk, const batched::GemmReductions& red) {
  if (space.axes.size() != space.values.size() || space.axes.size() > static_cast<std::size_t>(batched::kMaxAxes))
    throw InputError("sweep space: at most 12 axes, each with a list of values");
  for (const auto& v : space.values)
    if (v.empty()) throw InputError("sweep space: an axis has no values");
  if (space.group_axes < 0 || space.group_axes > static_cast<int>(space.axes.size()))
    throw InputError("sweep space: group_axes out of range");
  if (chunk < 1 || chunk > (INT64_C(1) << 30)) throw InputError("sweep chunk must be in 1..2^30");
  if (red.top_k < 0 || red.top_k > batched::kMaxTopK)
    throw InputError("--top " + std::to_string(red.top_k) + ": must be in 0.." + std::to_string(batched::kMaxTopK));
}

batched::GemmSweepSummary sweep_gemm(BackendKind b, const batched::GemmSpace& space, std::int64_t chunk, int threads,
                                     const batched::GemmReductions& red) {
  validate_sweep(space, chunk, red);
  return b == BackendKind::cuda ? batched::sweep_gemm_cuda(space, red, chunk)
                                : batched::sweep_gemm_omp(space, red, chunk, threads);
}

namespace batched {

std::int64_t GemmSpace::size() const {
  std::int64_t n = 1;
  for (const auto& v : values) n *= static_cast<std::int64_t>(v.size());
  return n;
}

std::int64_t GemmSpace::groups() const {
  std::int64_t n = 1;
  for (int a = 0; a < group_axes; ++a) n *= static_cast<std::int64_t>(values[static_cast<std::size_t>(a)].size());
  return n;
}

}  // namespace batched
}  // namespace kb
