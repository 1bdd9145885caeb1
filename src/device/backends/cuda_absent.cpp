// Stand-in for the CUDA backend in builds without nvcc: reports that it is absent.
#include <stdexcept>

#include "backends.h"

namespace kb::batched {

bool cuda_built() { return false; }

int cuda_device_count(std::string* why) {
  if (why) *why = "this build has no CUDA backend (nvcc was not found, or KERNBENCH_ENABLE_CUDA=OFF)";
  return 0;
}

void cuda_use_device(int) {}

void eval_cuda(Family, const void*, std::size_t, void*) {
  throw std::logic_error("eval_cuda called in a build without the CUDA backend");
}

SweepSummary sweep_cuda(const Space&, const Reductions&, std::int64_t) {
  throw std::logic_error("sweep_cuda called in a build without the CUDA backend");
}

}  // namespace kb::batched
