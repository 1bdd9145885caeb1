// Entry points of the batched-model backends. Plain C++: no Thrust or CUDA types leak out,
// so host code links either backend without their headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../models/gemm_model.h"

namespace kb::batched {

// A space of GEMM configs: `base` with some fields swept. Axes are mixed-radix digits of
// a flat index, the last axis fastest; the first `group_axes` axes name a group (e.g. the
// shape), and the sweep returns the best config of each group.
enum class GemmAxis : std::int32_t {
  m = 0, n, k, tile_m, tile_n, tile_k, pes, cubes, buffers, dataflow, array_rows, array_cols, count
};
constexpr int kMaxAxes = 12;

struct GemmSpace {
  GemmConfig base{};
  std::vector<GemmAxis> axes;
  std::vector<std::vector<std::int64_t>> values;  // one list per axis
  int group_axes = 0;
  std::int64_t size() const;
  std::int64_t groups() const;
};

struct GroupBest {
  ps_t latency_ps = -1;    // -1: no valid config in the group
  std::int64_t index = -1;  // flat index of the best config (lowest index among ties)
};

struct GemmSweepSummary {
  std::int64_t evaluated = 0;
  std::int64_t valid = 0;
  std::vector<GroupBest> best;  // per group
  std::int64_t latency_checksum = 0;  // sum of valid latencies mod 2^64, for bit-identity checks
};

// Decodes flat index `i` of `space` (host side, for reporting).
GemmConfig gemm_space_config(const GemmSpace& space, std::int64_t i);

// OpenMP (Thrust's OpenMP system). threads <= 0: the OpenMP default.
void eval_gemm_omp(const GemmConfig* configs, std::size_t n, GemmResult* out, int threads);
GemmSweepSummary sweep_gemm_omp(const GemmSpace& space, std::int64_t chunk, int threads);

// CUDA. cuda_built() is false when the build has no CUDA backend; cuda_device_count()
// returns 0 (and says why) when no usable device is present.
bool cuda_built();
int cuda_device_count(std::string* why);
void eval_gemm_cuda(const GemmConfig* configs, std::size_t n, GemmResult* out);
GemmSweepSummary sweep_gemm_cuda(const GemmSpace& space, std::int64_t chunk);

}  // namespace kb::batched
