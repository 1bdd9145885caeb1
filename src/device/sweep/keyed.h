// A config of a sweep chunk as the reductions see it (Keyed), and the filter an OpenMP
// block applies before the chunk's Pareto step. Plain C++, no Thrust, so tests use it alone.
#pragma once

#include <cstdint>

#include "../common/kb_hd.h"
#include "../common/units.h"

namespace kb::batched::detail {

// Per config of a chunk: its group and a sortable key (latency, index), invalid last.
struct Keyed {
  std::int64_t group;
  std::int64_t latency;  // INT64_MAX when invalid
  std::int64_t index;
  // The Pareto cost when one is asked for (kBeaten: a valid config already known to be off
  // its group's front); for an invalid config, its status.
  std::int64_t cost;
};
constexpr std::int64_t kBeaten = INT64_MIN;

// Marks with kBeaten the valid configs of k[0, n) (index order) that an earlier config of
// the same group there keeps off the Pareto front: one of the same cost that is as fast, or
// one of a lower cost that is as fast or faster (the front's definition, docs/model.md 9.6:
// any witness will do, so a block's own configs suffice). The witnesses are a small
// running front, cost rising and latency falling; a config it does not beat joins it.
// Exact whatever it misses: unmarked configs go on to the chunk's own front. Host code
// (the OpenMP blocks).
inline void mark_beaten(Keyed* k, std::int64_t n) {
  constexpr int kFront = 32;
  std::int64_t cost[kFront], lat[kFront];
  int size = 0;
  std::int64_t group = -1;
  for (std::int64_t i = 0; i < n; ++i) {
    Keyed& x = k[i];
    if (x.latency == INT64_MAX) continue;
    if (x.group != group) group = x.group, size = 0;
    int at = 0;  // points with cost <= x.cost: [0, at)
    while (at < size && cost[at] <= x.cost) ++at;
    if (at > 0 && lat[at - 1] <= x.latency) {  // the fastest of them, as fast or faster
      x.cost = kBeaten;
      continue;
    }
    // x joins: it beats the points from `at` on that are no faster (and one of its cost).
    int end = at;
    while (end < size && lat[end] >= x.latency) ++end;
    if (at > 0 && cost[at - 1] == x.cost) --at;  // same cost, slower: replaced
    const int keep = size - end;
    if (at + 1 + keep > kFront) continue;
    if (at + 1 > end)  // one place right: copy from the back
      for (int j = keep - 1; j >= 0; --j) cost[at + 1 + j] = cost[end + j], lat[at + 1 + j] = lat[end + j];
    else
      for (int j = 0; j < keep; ++j) cost[at + 1 + j] = cost[end + j], lat[at + 1 + j] = lat[end + j];
    cost[at] = x.cost, lat[at] = x.latency;
    size = at + 1 + keep;
  }
}

}  // namespace kb::batched::detail
