// Entry points of the batched-model backends, one generic eval and sweep per system,
// instantiated for every family of families.h. Plain C++: no Thrust or CUDA types leak
// out, so host code links either backend without their headers. Configs and results
// cross as the family's own PODs (typed wrappers: src/host/sweep/backend.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "../sweep/batched_space.h"
#include "../sweep/sweep_summary.h"

namespace kb::batched {

// The machine cannot run what was asked on the device (out of memory, no usable driver or
// device); the host reports it as an environment error.
class DeviceUnavailable : public std::runtime_error {
 public:
  explicit DeviceUnavailable(const std::string& what) : std::runtime_error(what) {}
};

std::size_t config_size(Family f);
std::size_t result_size(Family f);
int status_count(Family f);            // Model::kStatuses
std::size_t hw_offset(Family f);       // offsetof(Model::Config, hw)
// The family's `complete` (e.g. automatic tiles) and `evaluate`, on the host.
void complete_config(Family f, void* config);
void evaluate_host(Family f, const void* config, void* result);
// What a sweep's reductions see of a (completed) config: its status, its latency, and its
// cost of kind `pareto` (0: none), as the generic sweep engine computes them (keyed_of).
struct HostFigures {
  std::int32_t status;
  std::int64_t latency_ps;  // INT64_MAX when status != 0
  std::int64_t cost;        // 0 without a cost kind, the status when invalid
};
HostFigures figures_host(Family f, const void* config, int pareto);

// A family's batched part on the host, as one table of functions serves every family: those
// of the one list (families.h, from the generated units) and those registered at run time
// (a test tree's family, or a plug-in's: extension_family.h builds one from a Model). An
// extension runs on the OpenMP system (the CUDA backend compiles the families of the list
// only).
struct FamilyOps {
  const char* name = "";
  std::size_t config_size = 0, result_size = 0, hw_offset = 0;
  int statuses = 0;
  void (*complete)(void* config) = nullptr;
  void (*evaluate)(const void* config, void* result) = nullptr;
  HostFigures (*figures)(const void* config, int pareto) = nullptr;
  void (*decode)(const Space& space, const std::int64_t* flat, std::int64_t i, void* config) = nullptr;
  void (*eval_omp)(const void* configs, std::size_t n, void* results) = nullptr;
  SweepSummary (*sweep_omp)(const Space& space, const Reductions& red, std::int64_t chunk) = nullptr;
};
// Records an extension family and returns its id (after those of the list).
Family register_extension(const FamilyOps& e);
// A family's functions; std::logic_error for an id that is neither listed nor registered.
const FamilyOps& family_ops(Family f);
bool is_extension(Family f);

// OpenMP (Thrust's OpenMP system). threads <= 0: the OpenMP default.
void eval_omp(Family f, const void* configs, std::size_t n, void* results, int threads);
SweepSummary sweep_omp(const Space& space, const Reductions& red, std::int64_t chunk, int threads);

// CUDA. cuda_built() is false when the build has no CUDA backend; cuda_device_count()
// returns 0 (and says why) when no usable device is present.
bool cuda_built();
int cuda_device_count(std::string* why);
// Makes device `which` mod the device count this process's current device (MPI: one GPU per
// rank of a node, by its local rank).
void cuda_use_device(int which);
void eval_cuda(Family f, const void* configs, std::size_t n, void* results);
SweepSummary sweep_cuda(const Space& space, const Reductions& red, std::int64_t chunk);

}  // namespace kb::batched
