// Parity of the collective family's ops of their own (allgather, reducescatter, alltoall):
// for every backend, the batched model and the reference engine agree exactly on every
// parity figure, on 10,000 random configs per op over every level (hier as one level),
// algorithm, buffer kind and chunking they run on, and on random machines; the milestone's
// points of these ops too.
#include <gtest/gtest.h>

#include "benches/milestone_1h_ccl.h"
#include "random_allreduce.h"
#include "host/families/family.h"
#include "host/kernels/allreduce_program.h"
#include "host/parity/figures.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"

namespace kb {

namespace {

using testing::describe;

struct OpCase {
  BackendKind backend;
  CollOp op;
};
inline void PrintTo(const OpCase& c, std::ostream* os) { *os << to_string(c.backend) << "/" << kCollOpNames[static_cast<int>(c.op)]; }

class CollectiveOpParity : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override {
    std::string why;
    if (GetParam().backend == BackendKind::cuda && batched::cuda_device_count(&why) == 0)
      GTEST_SKIP() << "CUDA backend not run: " << why;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, CollectiveOpParity,
                         ::testing::Values(OpCase{BackendKind::omp, CollOp::allgather}, OpCase{BackendKind::omp, CollOp::reducescatter},
                                           OpCase{BackendKind::omp, CollOp::alltoall}, OpCase{BackendKind::cuda, CollOp::allgather},
                                           OpCase{BackendKind::cuda, CollOp::reducescatter},
                                           OpCase{BackendKind::cuda, CollOp::alltoall}),
                         [](const ::testing::TestParamInfo<OpCase>& p) {
                           return std::string(kCollOpNames[static_cast<int>(p.param.op)]) + "_" + to_string(p.param.backend);
                         });

TEST_P(CollectiveOpParity, TenThousandRandomConfigs) {
  const CollOp op = GetParam().op;
  std::vector<int> counts;
  const std::vector<AllreduceConfig> configs =
      testing::random_op_configs(op, 10000, 20261206 + static_cast<std::uint64_t>(op), &counts);
  // Every level (hier as one level: its fewer valid shapes), algorithm that runs the op, and
  // buffer, well covered.
  for (std::int64_t level = 0; level < kCollLevels; ++level)
    for (std::int64_t algo = 0; algo < kCollAlgos; ++algo)
      for (std::int64_t buffer = 0; buffer < kCollBuffers; ++buffer)
        if (coll_algo_runs(algo, static_cast<std::int64_t>(op)))
          EXPECT_GT(counts[static_cast<std::size_t>((level * kCollAlgos + algo) * kCollBuffers + buffer)], level < 3 ? 200 : 40)
              << "level " << level << " algo " << algo << " buffer " << buffer << " barely covered";
  const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam().backend, configs);
  ASSERT_EQ(exec.size(), configs.size());
  const Family& f = family("collective");
  std::int64_t chunked = 0, adds = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kArOk) << describe(configs[i]);
    const AllreduceResult ref = allreduce_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(f, configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
    ASSERT_EQ(testing::energy_recompute_diff(f, &configs[i], &exec[i]), "") << describe(configs[i]);
    chunked += configs[i].chunks > 1;
    adds += exec[i].vector_ops > 0;
  }
  EXPECT_GT(chunked, 2000);
  // Only a reduce-scatter adds.
  EXPECT_EQ(adds, op == CollOp::reducescatter ? static_cast<std::int64_t>(configs.size()) : 0);
}

TEST_P(CollectiveOpParity, EveryMilestonePoint) {
  const TopologySpec def = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  const TopologySpec ring = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml");
  std::vector<AllreduceConfig> configs;
  for (const AllreduceConfig& c : ccl_milestone_configs(def, ring))
    if (c.op == static_cast<std::int64_t>(GetParam().op)) configs.push_back(c);
  ASSERT_GT(configs.size(), 40u);
  const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam().backend, configs);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const AllreduceResult ref = allreduce_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("collective"), configs[i], ref, exec[i]), "") << describe(configs[i]);
  }
}

}  // namespace
}  // namespace kb
