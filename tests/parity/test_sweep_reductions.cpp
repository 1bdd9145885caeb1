// The sweep's optional reductions (top-k, Pareto front, latency histogram) against brute
// force over every config of a space, and their independence of chunk size and threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "host/common/error.h"
#include "host/common/output.h"
#include "host/sweep/backend.h"
#include "host/sweep/merge.h"
#include "host/topology/load.h"
#include "device/sweep/keyed.h"
#include "sweep_space.h"

namespace kb {
namespace {

using GemmReductions = batched::Reductions;
using GemmSweepSummary = batched::SweepSummary;
// Pareto cost kinds of the GEMM family.
enum class ParetoCost { pes = kGemmCostPes, sram = kGemmCostSram, hbm = kGemmCostHbm };
GemmReductions reductions(int top, ParetoCost kind, bool hist) { return GemmReductions{top, static_cast<int>(kind), hist, {}}; }

struct Point {
  std::int64_t index, group, cost;
  ps_t latency;
};

// Every valid config of the space with its cost, by brute force on the host.
std::vector<Point> all_points(const batched::Space& space, ParetoCost kind) {
  std::vector<Point> pts;
  const std::int64_t stride = space.size() / space.groups();
  const batched::SpaceDecoder decode(space);
  for (std::int64_t i = 0; i < space.size(); ++i) {
    const GemmConfig c = decode_config<GemmModel>(decode, i);
    const GemmResult r = gemm_model(c);
    if (r.status != kGemmOk) continue;
    std::int64_t cost = 0;
    if (kind == ParetoCost::pes) cost = c.pes * c.cubes;
    if (kind == ParetoCost::sram) cost = gemm_sram_bytes(c);
    if (kind == ParetoCost::hbm) cost = r.hbm_read_bytes + r.hbm_write_bytes;
    pts.push_back({i, i / stride, cost, r.latency_ps});
  }
  return pts;
}

// The fronts by definition: in each group, the points that no other point of the group
// beats (no worse in both, better in one, or equal in both with a lower index).
std::vector<batched::ParetoPoint> brute_front(const std::vector<Point>& pts) {
  std::map<std::pair<std::int64_t, std::int64_t>, Point> best_of_cost;  // beaten within its cost: off
  for (const Point& p : pts) {
    auto it = best_of_cost.find({p.group, p.cost});
    if (it == best_of_cost.end() || p.latency < it->second.latency ||
        (p.latency == it->second.latency && p.index < it->second.index))
      best_of_cost[{p.group, p.cost}] = p;
  }
  std::vector<batched::ParetoPoint> front;
  for (const auto& [key, p] : best_of_cost) {
    bool beaten = false;
    for (const auto& [other, q] : best_of_cost)
      beaten |= other.first == key.first && other.second < key.second && q.latency <= p.latency;
    if (!beaten) front.push_back({p.group, p.cost, p.latency, p.index});
  }
  return front;
}

TEST(HistogramBins, EveryBinHoldsExactlyItsRange) {
  for (int b = 0; b < batched::kHistBins; ++b) {
    const ps_t lo = batched::hist_bin_lo(b), hi = batched::hist_bin_lo(b + 1);
    ASSERT_LE(lo, hi) << b;
    if (lo == hi) continue;  // below 8 ps an octave has fewer than 8 integers
    EXPECT_EQ(batched::hist_bin(lo), b) << b;
    EXPECT_EQ(batched::hist_bin(hi - 1), b) << b;
  }
  EXPECT_EQ(batched::hist_bin_lo(batched::kHistBins), kTimeLimitPs);
  EXPECT_EQ(batched::hist_bin(1000), 9 * 8 + 7);  // 1000 = 0b1111101000: octave 9, 1.111b
  EXPECT_EQ(batched::hist_bin(kTimeLimitPs - 1), batched::kHistBins - 1);
}

// The reduction space with its shapes and its tiles zipped: (m, n) and (tile_m, tile_n,
// the array's rows) tuples, so zipped axes of a family's fields and of hardware fields.
batched::Space zipped_space(const TopologySpec& topo) {
  batched::Space s = testing::reduction_space(topo);
  using testing::gemm_offset;
  s.axes[0] = {{gemm_offset("m"), gemm_offset("n")}, {32, 1024, 2048, 1024, 2048, 4096, 32, 4096}};
  s.axes[1] = {gemm_offset("k"), {2048}};
  s.axes[2] = {{gemm_offset("tile_m"), gemm_offset("tile_n"), gemm_offset("array_rows")},
               {32, 64, 16, 64, 128, 32, 128, 256, 32, 64, 256, 64, 32, 128, 8}};
  s.axes.erase(s.axes.begin() + 3, s.axes.begin() + 5);  // tile_m, tile_n: now zipped
  return s;
}

// Every index of a zipped space decodes to one tuple of each zipped axis, the last axis
// fastest, and every combination appears once.
TEST(SweepReductions, ZippedAxesDecodeToTheirTuples) {
  const TopologySpec topo = load_topology(data_dir() + "/topologies/default.yaml");
  const batched::Space space = zipped_space(topo);
  ASSERT_EQ(space.size(), 4 * 1 * 5 * 3 * 4 * 3 * 2);  // shapes, k, tiles, tile_k, pes, cubes, buffers
  const batched::SpaceDecoder decode(space);
  std::set<std::vector<std::int64_t>> seen;
  for (std::int64_t i = 0; i < space.size(); ++i) {
    const GemmConfig c = decode_config<GemmModel>(decode, i);
    const std::int64_t shape = i / (space.size() / 4), tile = (i / (3 * 4 * 3 * 2)) % 5;
    EXPECT_EQ(c.m, space.axes[0].values[static_cast<std::size_t>(2 * shape)]) << i;
    EXPECT_EQ(c.n, space.axes[0].values[static_cast<std::size_t>(2 * shape + 1)]) << i;
    EXPECT_EQ(c.tile_m, space.axes[2].values[static_cast<std::size_t>(3 * tile)]) << i;
    EXPECT_EQ(c.tile_n, space.axes[2].values[static_cast<std::size_t>(3 * tile + 1)]) << i;
    EXPECT_EQ(c.hw.matrix_rows, space.axes[2].values[static_cast<std::size_t>(3 * tile + 2)]) << i;
    EXPECT_EQ(c.hw.matrix_cols, 32);
    seen.insert({c.m, c.n, c.tile_m, c.tile_n, c.tile_k, c.hw.matrix_rows, c.pes, c.cubes, c.buffers});
  }
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), space.size());
}

// With four groups (a front each, found by sorting) and with one (the running front
// filters each chunk on the device), on plain and on zipped axes.
TEST(SweepReductions, MatchBruteForceForEveryCost) {
  const TopologySpec topo = load_topology(data_dir() + "/topologies/default.yaml");
  for (int zipped : {0, 1})
  // -1: by every axis, a group per config; -2: by all but the last axis, groups
  // shorter than an OpenMP block (several per block)
  for (int grouping : {zipped ? 1 : 3, 0, -1, -2})
    for (ParetoCost kind : {ParetoCost::pes, ParetoCost::sram, ParetoCost::hbm}) {
      const int naxes = static_cast<int>((zipped ? zipped_space(topo) : testing::reduction_space(topo)).axes.size());
      const int group_axes = grouping >= 0 ? grouping : naxes + 1 + grouping;
      SCOPED_TRACE("zipped " + std::to_string(zipped) + ", group_axes " + std::to_string(group_axes) + ", cost " +
                   std::to_string(static_cast<int>(kind)));
      batched::Space space = zipped ? zipped_space(topo) : testing::reduction_space(topo);
      space.group_axes = group_axes;
      GemmReductions red;
      red.top_k = 25;
      red.pareto = static_cast<int>(kind);
      red.histogram = true;
      const GemmSweepSummary s = sweep(BackendKind::omp, space, 997, 2, red);
      const std::vector<Point> pts = all_points(space, kind);
      ASSERT_EQ(s.valid, static_cast<std::int64_t>(pts.size()));
      std::vector<std::int64_t> by_status(kGemmStatusCount, 0);
      const batched::SpaceDecoder decode(space);
      for (std::int64_t i = 0; i < space.size(); ++i) ++by_status[static_cast<std::size_t>(gemm_model(decode_config<GemmModel>(decode, i)).status)];
      EXPECT_EQ(s.by_status, by_status);
      EXPECT_GT(by_status[kGemmBadTile], 0);
      ASSERT_GT(pts.size(), 1000u);

      std::vector<batched::GroupBest> best(static_cast<std::size_t>(space.groups()));
      for (const Point& p : pts) {
        batched::GroupBest& b = best[static_cast<std::size_t>(p.group)];
        if (b.index < 0 || p.latency < b.latency_ps) b = {p.latency, p.index};  // pts in index order
      }
      ASSERT_EQ(s.best.size(), best.size());
      for (std::size_t g = 0; g < best.size(); ++g) {
        EXPECT_EQ(s.best[g].index, best[g].index) << g;
        EXPECT_EQ(s.best[g].latency_ps, best[g].latency_ps) << g;
      }

      std::vector<Point> ranked = pts;
      std::sort(ranked.begin(), ranked.end(), [](const Point& a, const Point& b) {
        return a.latency != b.latency ? a.latency < b.latency : a.index < b.index;
      });
      ASSERT_EQ(s.top.size(), 25u);
      for (std::size_t i = 0; i < 25; ++i) {
        EXPECT_EQ(s.top[i].index, ranked[i].index) << i;
        EXPECT_EQ(s.top[i].latency_ps, ranked[i].latency) << i;
      }
      // A top k no larger than the chunk's OpenMP blocks (their fastest configs bound it);
      // with one block per chunk and k = 1 that bound is the chunk's own fastest.
      for (const auto& [k, chunk] : {std::pair<int, std::int64_t>{3, 4096}, {1, 256}}) {
        GemmReductions few;
        few.top_k = k;
        const GemmSweepSummary f = sweep(BackendKind::omp, space, chunk, 2, few);
        ASSERT_EQ(f.top.size(), static_cast<std::size_t>(k));
        for (std::size_t i = 0; i < f.top.size(); ++i) EXPECT_EQ(f.top[i].index, ranked[i].index) << i;
      }

      const auto front = brute_front(pts);
      ASSERT_EQ(s.pareto.size(), front.size());
      ASSERT_GE(front.size(), group_axes > 0 ? 8u : 2u);
      for (std::size_t i = 0; i < front.size(); ++i) {
        EXPECT_EQ(s.pareto[i].index, front[i].index) << i;
        EXPECT_EQ(s.pareto[i].group, front[i].group) << i;
        EXPECT_EQ(s.pareto[i].cost, front[i].cost) << i;
        EXPECT_EQ(s.pareto[i].latency_ps, front[i].latency_ps) << i;
      }

      std::vector<std::int64_t> hist(batched::kHistBins, 0);
      for (const Point& p : pts) ++hist[static_cast<std::size_t>(batched::hist_bin(p.latency))];
      EXPECT_EQ(s.histogram, hist);
    }
}

// The filter an OpenMP block applies before the chunk's Pareto step marks only configs off
// their group's front; and while its running front has room (fewer than 32 costs), exactly
// the configs an earlier config of their group beats. Random blocks with many ties,
// several groups, invalid configs, and fronts longer than the filter keeps.
TEST(SweepReductions, BlockFilterMarksOnlyConfigsOffTheFront) {
  std::mt19937_64 rng(20261130);
  std::int64_t marked_total = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 256);
    const bool long_fronts = trial % 2 == 1;  // latency falls with cost: fronts of up to 40 points
    std::vector<batched::detail::Keyed> k(static_cast<std::size_t>(n));
    std::int64_t group = static_cast<std::int64_t>(rng() % 5);
    for (std::int64_t i = 0; i < n; ++i) {
      if (rng() % 40 == 0) ++group;
      const bool valid = rng() % 6 != 0;
      const std::int64_t cost = static_cast<std::int64_t>(rng() % (long_fronts ? 40 : 6));
      const std::int64_t latency = long_fronts ? 1000 - 20 * cost + static_cast<std::int64_t>(rng() % 30)
                                               : static_cast<std::int64_t>(rng() % 12);
      k[static_cast<std::size_t>(i)] = {group, valid ? latency : INT64_MAX, 500 + i, valid ? cost : 3};
    }
    std::vector<batched::detail::Keyed> m = k;
    batched::detail::mark_beaten(m.data(), n);
    std::vector<Point> pts;
    for (const auto& x : k)
      if (x.latency != INT64_MAX) pts.push_back({x.index, x.group, x.cost, x.latency});
    std::set<std::int64_t> front;
    for (const auto& p : brute_front(pts)) front.insert(p.index);
    for (std::size_t i = 0; i < k.size(); ++i) {
      const bool marked = m[i].cost == batched::detail::kBeaten;
      if (!marked) {
        EXPECT_TRUE(m[i].group == k[i].group && m[i].latency == k[i].latency && m[i].index == k[i].index &&
                    m[i].cost == k[i].cost);
      }
      if (k[i].latency == INT64_MAX) {
        EXPECT_FALSE(marked) << "trial " << trial << ": an invalid config marked";
        continue;
      }
      if (marked) {
        EXPECT_EQ(front.count(k[i].index), 0u) << "trial " << trial << ": a front point marked";
      }
      marked_total += marked;
      if (long_fronts) continue;
      bool beaten_earlier = false;
      for (std::size_t j = 0; j < i; ++j)
        beaten_earlier |= k[j].latency != INT64_MAX && k[j].group == k[i].group && k[j].cost <= k[i].cost &&
                          k[j].latency <= k[i].latency;
      EXPECT_EQ(marked, beaten_earlier) << "trial " << trial << ", config " << i;
    }
  }
  EXPECT_GT(marked_total, 100000);
}

// Ties: an axis listing a value twice makes pairs of identical configs, and the lower index
// must win everywhere, whatever the chunking.
TEST(SweepReductions, TiesGoToTheLowestIndex) {
  const TopologySpec topo = load_topology(data_dir() + "/topologies/default.yaml");
  batched::Space space = testing::reduction_space(topo);
  space.axes.back().values = {1, 1};  // buffers 1 twice
  space.group_axes = 0;
  const GemmReductions red = reductions(10, ParetoCost::pes, true);
  const GemmSweepSummary s = sweep(BackendKind::omp, space, 1 << 20, 1, red);
  // Twins rank side by side, the lower index first; on the front the twin is beaten.
  ASSERT_EQ(s.top.size(), 10u);
  for (std::size_t i = 0; i < s.top.size(); i += 2) {
    EXPECT_EQ(s.top[i].index % 2, 0) << s.top[i].index;
    EXPECT_EQ(s.top[i + 1].index, s.top[i].index + 1);
    EXPECT_EQ(s.top[i + 1].latency_ps, s.top[i].latency_ps);
  }
  ASSERT_FALSE(s.pareto.empty());
  for (const auto& p : s.pareto) EXPECT_EQ(p.index % 2, 0) << p.index;
  testing::expect_same_summary(s, sweep(BackendKind::omp, space, 61, 2, red));
}

TEST(SweepReductions, IndependentOfChunkAndThreads) {
  const TopologySpec topo = load_topology(data_dir() + "/topologies/default.yaml");
  batched::Space space = testing::reduction_space(topo);
  const GemmReductions red = reductions(100, ParetoCost::hbm, true);
  for (int group_axes : {3, 0}) {
    space.group_axes = group_axes;
    const GemmSweepSummary whole = sweep(BackendKind::omp, space, 1 << 20, 2, red);
    for (std::int64_t chunk : {61, 997, 4099})
      for (int threads : {1, 2}) testing::expect_same_summary(whole, sweep(BackendKind::omp, space, chunk, threads, red));
  }
}

TEST(SweepReductions, NoneAskedNoneReturned) {
  const TopologySpec topo = load_topology(data_dir() + "/topologies/default.yaml");
  const GemmSweepSummary s = sweep(BackendKind::omp, testing::reduction_space(topo), 4096, 2);
  EXPECT_TRUE(s.top.empty());
  EXPECT_TRUE(s.pareto.empty());
  EXPECT_TRUE(s.histogram.empty());
}

TEST(SweepReductions, TopKOutOfRangeIsAnInputError) {
  const TopologySpec topo = load_topology(data_dir() + "/topologies/default.yaml");
  GemmReductions red;
  red.top_k = batched::kMaxTopK + 1;
  EXPECT_THROW(sweep(BackendKind::omp, testing::reduction_space(topo), 4096, 2, red), InputError);
}

// A field set by two axes would decode differently from the OpenMP blocks' counting on
// (only the axes that change are rewritten): refused, whatever builds the space.
TEST(SweepReductions, TwoAxesOnOneFieldAreAnInputError) {
  const TopologySpec topo = load_topology(data_dir() + "/topologies/default.yaml");
  batched::Space space = testing::reduction_space(topo);
  batched::Space::Axis again = space.axes[3];  // tile_m, swept a second time
  space.axes.push_back(again);
  EXPECT_THROW(sweep(BackendKind::omp, space, 4096, 2, GemmReductions{}), InputError);
}

}  // namespace
// Shards: interleaved blocks cover the space once, and the summaries of any split, folded
// in any order (through their JSON, as `merge` reads them), equal the summary of the whole.
TEST(SweepShards, BlocksCoverTheSpaceOnce) {
  for (std::int64_t size : {INT64_C(1), INT64_C(7), INT64_C(100), INT64_C(7776), INT64_C(1) << 24, (INT64_C(1) << 40) + 3})
    for (std::int64_t n : {1, 2, 3, 8, 1000}) {
      std::int64_t total = 0;
      for (std::int64_t i = 0; i < std::min<std::int64_t>(n, 1000); ++i) total += shard_configs(size, i, n);
      EXPECT_EQ(total, size) << size << " " << n;
      EXPECT_LE(shard_block(size, n), INT64_C(1) << 20);
    }
}

TEST(SweepShards, FoldedShardsEqualTheWholeSweep) {
  const batched::Space s = testing::reduction_space(load_topology(data_dir() + "/topologies/default.yaml"));
  const batched::Reductions red{7, kGemmCostHbm, true, {}};
  const batched::SweepSummary whole = sweep(BackendKind::omp, s, 100, 2, red);
  for (std::int64_t n : {2, 3, 5}) {
    SCOPED_TRACE(n);
    std::vector<batched::SweepSummary> parts;
    for (std::int64_t i = 0; i < n; ++i) {
      batched::SweepSummary part = empty_summary(s.groups(), kGemmStatusCount, true);
      const std::int64_t block = shard_block(s.size(), n);
      for (std::int64_t b = i; b * block < s.size(); b += n) {
        batched::Reductions r = red;
        r.begin = b * block, r.end = std::min(s.size(), (b + 1) * block);
        merge_summary(part, sweep(BackendKind::omp, s, 64, 1, r), red.top_k);
      }
      EXPECT_EQ(part.evaluated, shard_configs(s.size(), i, n));
      parts.push_back(summary_from_json(nlohmann::json::parse(summary_json(part).dump()), s.groups(), kGemmStatusCount, "t"));
    }
    batched::SweepSummary folded = empty_summary(s.groups(), kGemmStatusCount, true);
    for (std::size_t k = parts.size(); k-- > 0;) merge_summary(folded, parts[k], red.top_k);  // backwards
    testing::expect_same_summary(whole, folded);
  }
}

}  // namespace kb
