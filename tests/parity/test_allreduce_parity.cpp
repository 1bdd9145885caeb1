// Parity of the allreduce family: for every backend, the batched model (exec) and the
// reference engine (ref) agree exactly on every parity figure of the family's table, on
// random configs that cover every level, algorithm, buffer kind, op, chunking and machine
// shape (SIP topologies, grids, link figures including zero latencies, HBM and DMA rates).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "benches/milestone_1h_ccl.h"
#include "host/common/output.h"
#include "host/families/family.h"
#include "host/kernels/allreduce_program.h"
#include "host/parity/figures.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"

namespace kb {

inline void PrintTo(BackendKind b, std::ostream* os) { *os << to_string(b); }

namespace {

std::string describe(const AllreduceConfig& c) {
  std::ostringstream o;
  o << to_string(static_cast<CollLevel>(c.level)) << "/" << to_string(static_cast<CollAlgo>(c.algo)) << " ranks=" << c.ranks
    << " bytes=" << c.bytes << " buffer=" << (c.buffer ? "hbm" : "sram") << " op=" << (c.op ? "reduce" : "allreduce")
    << " chunks=" << c.chunks << " sips=" << c.hw.sips << "(" << static_cast<int>(c.hw.sip_topology) << ") cubes="
    << c.hw.cube_rows << "x" << c.hw.cube_cols << " pes=" << c.hw.pe_rows << "x" << c.hw.pe_cols;
  return o.str();
}

// Random valid configs; `counts` tallies them per (level, algo, buffer).
std::vector<AllreduceConfig> random_configs(int count, std::uint64_t seed, std::vector<int>* counts) {
  const TopologySpec base = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<AllreduceConfig> out;
  counts->assign(kCollLevels * kCollAlgos * kCollBuffers, 0);
  while (static_cast<int>(out.size()) < count) {
    AllreduceConfig c{};
    c.hw = base.hw();
    HwConfig& h = c.hw;
    h.sips = pick(1, 8);
    h.sip_topology = static_cast<SipTopology>(pick(0, 2));
    h.cube_rows = pick(1, 3), h.cube_cols = pick(1, 4);
    h.pe_rows = pick(1, 3), h.pe_cols = pick(1, 4);
    auto link = [&](LinkSpec& l) {
      l.bandwidth_gbps = pick(1, 400);
      l.latency_ns = pick(0, 3) ? pick(0, 1500) : 0;
    };
    link(h.sip_link), link(h.cube_link), link(h.ipcq);
    h.hbm_bandwidth_gbps = pick(1, 1500);
    h.hbm_latency_ns = pick(0, 300);
    h.dma_engines = pick(1, 4);
    h.dma_bandwidth_gbps = pick(1, 400);
    h.clock_mhz = pick(100, 3000);
    h.vector_lanes = pick(1, 128);
    h.sram_kib = pick(1, 64);
    h.hbm_capacity_mib = pick(1, 4);
    c.level = pick(0, 3);
    c.algo = pick(0, 4);
    if (c.level == static_cast<std::int64_t>(CollLevel::hier)) {
      // Part of a cube, whole cubes of SIP 0, or whole SIPs (as many as keep it under 100 PEs).
      const std::int64_t ppc = h.pes_per_cube(), pps = ppc * h.cubes_per_sip();
      const int kind = static_cast<int>(pick(0, 2));
      c.ranks = kind == 0 ? pick(2, std::max<std::int64_t>(2, ppc))
                : kind == 1 ? ppc * pick(2, std::max<std::int64_t>(2, h.cubes_per_sip()))
                            : pps * pick(2, std::max<std::int64_t>(2, std::min<std::int64_t>(h.sips, 100 / pps)));
    } else {
      if (coll_level_size(h, c.level) < 2) continue;  // a level of one rank (and pick(lo, hi) needs lo <= hi)
      c.ranks = pick(2, std::min<std::int64_t>(12, coll_level_size(h, c.level)));
    }
    c.buffer = pick(0, 1);
    c.op = pick(0, 1);
    c.chunks = pick(0, 2) ? 1 : pick(2, 4);
    const std::int64_t least = c.chunks * c.ranks, most = pick(0, 1) ? 4096 : 64;
    if (least > most) continue;  // no size fits (and pick(lo, hi) needs lo <= hi)
    c.bytes = 2 * pick(least, most);
    if (allreduce_check(c) != kArOk) continue;
    ++(*counts)[static_cast<std::size_t>((c.level * kCollAlgos + c.algo) * kCollBuffers + c.buffer)];
    out.push_back(c);
  }
  return out;
}

class AllreduceParity : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam() == BackendKind::cuda && batched::cuda_device_count(&why) == 0)
      GTEST_SKIP() << "CUDA backend not run: " << why;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, AllreduceParity, ::testing::Values(BackendKind::omp, BackendKind::cuda),
                         [](const ::testing::TestParamInfo<BackendKind>& p) { return std::string(to_string(p.param)); });

TEST_P(AllreduceParity, TenThousandRandomConfigs) {
  std::vector<int> counts;
  const std::vector<AllreduceConfig> configs = random_configs(10000, 20261130, &counts);
  for (std::size_t i = 0; i < counts.size(); ++i) EXPECT_GT(counts[i], 20) << "combination " << i << " barely covered";
  const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam(), configs);
  ASSERT_EQ(exec.size(), configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kArOk) << describe(configs[i]);
    const AllreduceResult ref = allreduce_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("allreduce"), configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
  }
}

TEST_P(AllreduceParity, EveryMilestonePoint) {
  const TopologySpec def = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  const TopologySpec ring = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml");
  const std::vector<AllreduceConfig> configs = ccl_milestone_configs(def, ring);
  ASSERT_GT(configs.size(), 741u);
  const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam(), configs);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const AllreduceResult ref = allreduce_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("allreduce"), configs[i], ref, exec[i]), "") << describe(configs[i]);
  }
}

}  // namespace
}  // namespace kb
