#include "backend.h"

#include <set>

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

BackendKind resolve_backend(const std::string& requested, batched::Family f) {
  if (requested == "auto" && batched::is_extension(f)) return BackendKind::omp;
  return resolve_backend(requested);
}

void eval_batch(BackendKind b, batched::Family f, const void* configs, std::size_t n, void* results, int threads) {
  if (n == 0) return;
  try {
    if (b == BackendKind::cuda) batched::eval_cuda(f, configs, n, results);
    else batched::eval_omp(f, configs, n, results, threads);
  } catch (const batched::DeviceUnavailable& e) {
    throw EnvironmentError(e.what());
  }
}

void validate_sweep(const batched::Space& space, std::int64_t chunk, const batched::Reductions& red) {
  std::int64_t several = 0;  // axes of one value only fix a field; they do not count
  for (const auto& a : space.axes) several += a.length() > 1;
  if (several > batched::kMaxAxes || space.axes.size() > 64)
    throw InputError("sweep space: at most " + std::to_string(batched::kMaxAxes) + " axes with several values");
  if (space.base.size() != batched::config_size(space.family))
    throw InputError("sweep space: the base config does not belong to its family");
  for (const auto& a : space.axes) {
    if (a.offsets.empty() || a.values.empty() || a.values.size() % a.offsets.size() != 0)
      throw InputError("sweep space: an axis has no values, or a tuple of the wrong size");
    for (std::int64_t o : a.offsets)
      if (o < 0 || o + 8 > static_cast<std::int64_t>(space.base.size()) || o % 8 != 0)
        throw InputError("sweep space: an axis sets no field of the config");
  }
  // Each field set by one axis only: decoding an index and counting on from the previous
  // one (the OpenMP blocks) must give the same config.
  std::set<std::int64_t> fields;
  for (const auto& a : space.axes)
    for (std::int64_t o : a.offsets)
      if (!fields.insert(o).second) throw InputError("sweep space: two axes set the same field");
  if (space.group_axes < 0 || space.group_axes > static_cast<int>(space.axes.size()))
    throw InputError("sweep space: group_axes out of range");
  if (chunk < 1 || chunk > (INT64_C(1) << 30)) throw InputError("sweep chunk must be in 1..2^30");
  if (red.begin < 0 || red.begin > space.size() || (red.end >= 0 && (red.end < red.begin || red.end > space.size())))
    throw InputError("sweep: the index range is not part of the space");
  if (red.top_k < 0 || red.top_k > batched::kMaxTopK)
    throw InputError("--top " + std::to_string(red.top_k) + ": must be in 0.." + std::to_string(batched::kMaxTopK));
}

batched::SweepSummary sweep(BackendKind b, const batched::Space& space, std::int64_t chunk, int threads,
                            const batched::Reductions& red) {
  validate_sweep(space, chunk, red);
  try {
    return b == BackendKind::cuda ? batched::sweep_cuda(space, red, chunk) : batched::sweep_omp(space, red, chunk, threads);
  } catch (const batched::DeviceUnavailable& e) {
    throw EnvironmentError(e.what());
  }
}

}  // namespace kb
