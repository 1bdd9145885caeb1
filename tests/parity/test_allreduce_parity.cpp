// Parity of the allreduce family: for every backend, the batched model (exec) and the
// reference engine (ref) agree exactly on every parity figure of the family's table, on
// random configs that cover every level, algorithm, buffer kind, op, chunking and machine
// shape (SIP topologies, grids, link figures including zero latencies, HBM and DMA rates).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "backend_param.h"
#include "benches/milestone_1h_ccl.h"
#include "random_allreduce.h"
#include "host/common/output.h"
#include "host/families/family.h"
#include "host/families/collective/allreduce_program.h"
#include "host/parity/figures.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"

namespace kb {

namespace {

using testing::describe;
using testing::random_allreduce_configs;

class AllreduceParity : public testing::BackendTest {};

KB_BACKEND_SUITE(AllreduceParity);

TEST_P(AllreduceParity, TenThousandRandomConfigs) {
  std::vector<int> counts;
  const std::vector<AllreduceConfig> configs = random_allreduce_configs(10000, 20261130, &counts);
  for (std::size_t i = 0; i < counts.size(); ++i)  // (level, algo, buffer): every algorithm of allreduce and reduce
    if (coll_algo_runs(static_cast<std::int64_t>(i) / kCollBuffers % kCollAlgos, static_cast<std::int64_t>(CollOp::allreduce)))
      EXPECT_GT(counts[i], 20) << "combination " << i << " barely covered";
  const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam(), configs);
  ASSERT_EQ(exec.size(), configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kArOk) << describe(configs[i]);
    const AllreduceResult ref = allreduce_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("allreduce"), configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
    ASSERT_EQ(testing::energy_recompute_diff(family("allreduce"), &configs[i], &exec[i]), "") << describe(configs[i]);
  }
}

// Wider machines, sizes and chunkings than the test above, and arbitration ties; configs
// the check refuses are refused alike by the model (the check's status) and the reference.
TEST_P(AllreduceParity, WideRangesAndTies) {
  std::vector<AllreduceConfig> rejected;
  rejected.reserve(200);
  const std::vector<AllreduceConfig> configs = testing::random_wide_allreduce_configs(2000, 20261203, &rejected);
  const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam(), configs);
  std::int64_t large = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kArOk) << describe(configs[i]);
    const AllreduceResult ref = allreduce_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("allreduce"), configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
    ASSERT_EQ(testing::energy_recompute_diff(family("allreduce"), &configs[i], &exec[i]), "") << describe(configs[i]);
    large += configs[i].bytes > 8192 || configs[i].ranks > 12 || configs[i].chunks > 4;
  }
  EXPECT_GT(large, 1000) << "the wide ranges are barely covered";
  ASSERT_EQ(rejected.size(), 200u);
  const std::vector<AllreduceResult> refused = eval<AllreduceModel>(GetParam(), rejected);
  for (std::size_t i = 0; i < rejected.size(); ++i) {
    EXPECT_EQ(refused[i].status, allreduce_check(rejected[i])) << describe(rejected[i]);
    EXPECT_ANY_THROW(allreduce_reference(rejected[i], nullptr)) << describe(rejected[i]);
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
