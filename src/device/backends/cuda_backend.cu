// CUDA backend: device discovery and the dispatch to each family's unit (cuda_family.cuh,
// instantiated per family in generated units, so nvcc compiles the families side by side).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "../common/network.h"
#include "family_units.h"

namespace kb::batched {

// The network model is for both engines: compiled for the device here so that it stays so.
__global__ void kb_network_compiles(HwConfig h, std::int64_t* hops) {
  *hops = net::hop_count(h, net::Node{0, 0, 0}, net::Node{h.sips - 1, h.cubes_per_sip() - 1, 0});
}

bool cuda_built() { return true; }

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device is present";
  return n;
}

void cuda_use_device(int which) {
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) cudaSetDevice(which % n);
  cudaGetLastError();
}

namespace {
// The CUDA backend compiles the families of the list only; an extension family runs on the
// OpenMP system.
[[noreturn]] void not_listed(Family f) {
  throw DeviceUnavailable(std::string("family ") + family_ops(f).name +
                          " is an extension family, built for the OpenMP system only: use --backend omp");
}
}  // namespace

#define KB_DISPATCH(id, Model) \
  case Family::id: return CALL(Model);

void eval_cuda(Family f, const void* configs, std::size_t n, void* results) {
#define CALL(Model) eval_cuda_family<Model>(configs, n, results)
  switch (f) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  not_listed(f);
}

SweepSummary sweep_cuda(const Space& space, const Reductions& red, std::int64_t chunk) {
#define CALL(Model) sweep_cuda_family<Model>(space, red, chunk)
  switch (space.family) { KB_FAMILIES(KB_DISPATCH) }
#undef CALL
  not_listed(space.family);
}

}  // namespace kb::batched
