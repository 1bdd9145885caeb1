// Entry points of the batched-model backends. Plain C++: no Thrust or CUDA types leak out,
// so host code links either backend without their headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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
// A tile value of 0 in a space means min(kAutoTile, the matrix dimension).
constexpr std::int64_t kAutoTile = 128;

struct GemmSpace {
  GemmConfig base{};
  std::vector<GemmAxis> axes;
  std::vector<std::vector<std::int64_t>> values;  // one list per axis
  int group_axes = 0;
  std::int64_t size() const;
  std::int64_t groups() const;
};

// Optional reductions of a sweep, beside the best config per group. Each is exact and
// independent of chunk size, backend and thread count (ties go to the lowest index).
enum class ParetoCost : std::int32_t {
  none = 0,
  pes,   // PEs used: pes x cubes
  sram,  // SRAM bytes one PE needs (gemm_sram_bytes)
  hbm,   // HBM bytes read and written
};
constexpr int kMaxTopK = 1024;
// Latency histogram: 8 bins per octave of picoseconds, up to 2^61 ps (every valid latency
// is below it); bin b covers [hist_bin_lo(b), hist_bin_lo(b + 1)).
constexpr int kHistBinsPerOctave = 8;
constexpr int kHistBins = 61 * kHistBinsPerOctave;

struct GemmReductions {
  int top_k = 0;  // 0..kMaxTopK: the top_k fastest configs of the whole space
  ParetoCost pareto = ParetoCost::none;  // per group, the front of (cost, latency), both minimised
  bool histogram = false;
  // Called on the host after each chunk with the number of configs evaluated so far.
  std::function<void(std::int64_t)> progress;
};

struct Ranked {
  ps_t latency_ps;
  std::int64_t index;
};

struct ParetoPoint {
  std::int64_t group;
  std::int64_t cost;
  ps_t latency_ps;
  std::int64_t index;
};

KB_HD inline std::int32_t hist_bin(ps_t latency) {
  if (latency < 1) return 0;
  std::int32_t e = 0;
  while (e < 60 && (latency >> (e + 1)) != 0) ++e;
  const std::int64_t sub = e >= 3 ? (latency >> (e - 3)) & 7 : (latency << (3 - e)) & 7;
  return e * kHistBinsPerOctave + static_cast<std::int32_t>(sub);
}
// Smallest latency in bin b (b = kHistBins gives the end of the last bin).
inline ps_t hist_bin_lo(int b) {
  const int e = b / kHistBinsPerOctave, sub = b % kHistBinsPerOctave;
  if (e >= 3) return static_cast<ps_t>(8 + sub) << (e - 3);
  return ((static_cast<ps_t>(8 + sub) << e) + 7) / 8;
}

struct GroupBest {
  ps_t latency_ps = -1;    // -1: no valid config in the group
  std::int64_t index = -1;  // flat index of the best config (lowest index among ties)
};

struct GemmSweepSummary {
  std::int64_t evaluated = 0;
  std::int64_t valid = 0;
  std::vector<GroupBest> best;  // per group
  std::int64_t latency_checksum = 0;  // sum of valid latencies mod 2^64, for bit-identity checks
  std::int64_t by_status[kGemmStatusCount] = {};  // configs per GemmStatus (kGemmOk: the valid ones)
  std::vector<Ranked> top;            // the reductions asked for; empty otherwise
  std::vector<ParetoPoint> pareto;    // by group, then cost ascending and latency strictly descending
  std::vector<std::int64_t> histogram;  // kHistBins counts of valid configs
};

// Decodes flat indices of a space (host side, for reporting). Holds a reference to `space`.
class GemmSpaceDecoder {
 public:
  explicit GemmSpaceDecoder(const GemmSpace& space);
  GemmConfig operator()(std::int64_t i) const;

 private:
  const GemmSpace& space_;
  std::vector<std::int64_t> flat_;
};
// Sets the field that axis `a` sweeps.
void gemm_space_set(GemmConfig& c, GemmAxis a, std::int64_t v);

// OpenMP (Thrust's OpenMP system). threads <= 0: the OpenMP default.
void eval_gemm_omp(const GemmConfig* configs, std::size_t n, GemmResult* out, int threads);
GemmSweepSummary sweep_gemm_omp(const GemmSpace& space, const GemmReductions& red, std::int64_t chunk, int threads);

// CUDA. cuda_built() is false when the build has no CUDA backend; cuda_device_count()
// returns 0 (and says why) when no usable device is present.
bool cuda_built();
int cuda_device_count(std::string* why);
void eval_gemm_cuda(const GemmConfig* configs, std::size_t n, GemmResult* out);
GemmSweepSummary sweep_gemm_cuda(const GemmSpace& space, const GemmReductions& red, std::int64_t chunk);

}  // namespace kb::batched
