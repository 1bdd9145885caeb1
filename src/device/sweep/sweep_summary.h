// What a sweep asks for and what it returns, for every family: the best config per group,
// counts by status, and the optional reductions (top k, Pareto fronts, a latency
// histogram). Plain C++: no Thrust or CUDA types, so host code uses it without them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "../common/kb_hd.h"
#include "../common/units.h"

namespace kb::batched {

constexpr int kMaxAxes = 16;
constexpr int kMaxStatuses = 16;  // per family, ok (0) included
constexpr int kMaxTopK = 1024;
// Latency histogram: 8 bins per octave of picoseconds, up to 2^61 ps (every valid latency
// is below it); bin b covers [hist_bin_lo(b), hist_bin_lo(b + 1)).
constexpr int kHistBinsPerOctave = 8;
constexpr int kHistBins = 61 * kHistBinsPerOctave;

// Optional reductions of a sweep, beside the best config per group. Each is exact and
// independent of chunk size, backend and thread count (ties go to the lowest index).
struct Reductions {
  int top_k = 0;    // 0..kMaxTopK: the top_k fastest configs of the whole space
  int pareto = 0;   // 0: none; else the family's cost kind: per group, the front of (cost, latency)
  bool histogram = false;
  // Called on the host after each chunk with the number of configs evaluated so far.
  std::function<void(std::int64_t)> progress;
  // When set, each evaluated config's latency_ps (-1: invalid) at latencies[index - begin]
  // (host memory, end - begin entries).
  std::int64_t* latencies = nullptr;
  // The flat indices evaluated, [begin, end) (end < 0: to the end of the space): a shard.
  // Every reduction is exact and associative, so shards' summaries merge into the
  // summary of their union (src/host/sweep/merge.h).
  std::int64_t begin = 0, end = -1;
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

// floor(log2(x)) for x >= 1.
KB_HD inline std::int32_t floor_log2(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return 63 - __clzll(static_cast<long long>(x));
#elif defined(__GNUC__) || defined(__clang__)
  return 63 - __builtin_clzll(x);
#else
  std::int32_t e = 0;
  while (x >>= 1) ++e;
  return e;
#endif
}

KB_HD inline std::int32_t hist_bin(ps_t latency) {
  if (latency < 1) return 0;
  const std::int32_t e = static_cast<std::int32_t>(imin(60, floor_log2(static_cast<std::uint64_t>(latency))));
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

struct SweepSummary {
  std::int64_t evaluated = 0;
  std::int64_t valid = 0;
  std::vector<GroupBest> best;  // per group
  std::int64_t latency_checksum = 0;  // sum of valid latencies mod 2^64, for bit-identity checks
  std::vector<std::int64_t> by_status;  // configs per status of the family (0: the valid ones)
  std::vector<Ranked> top;            // the reductions asked for; empty otherwise
  std::vector<ParetoPoint> pareto;    // by group, then cost ascending and latency strictly descending
  std::vector<std::int64_t> histogram;  // kHistBins counts of valid configs
  // Configs the small state deferred, evaluated again in the full state (two_stage.h's second
  // stage: a system with one config per work item, the CUDA backend's), and of them those the
  // full state deferred too, evaluated on the host (the third). 0 where every config took one
  // stage (the OpenMP backend's blocks) or the family has one state.
  std::int64_t deferred = 0, on_host = 0;
};

}  // namespace kb::batched
