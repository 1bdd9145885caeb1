// Parity of the collective family's ops of their own (allgather, reducescatter, alltoall):
// for every backend, the batched model and the reference engine agree exactly on every
// parity figure, on 10,000 random configs per op over every level (hier as one level),
// algorithm, buffer kind and chunking they run on, and on random machines; the milestone's
// points of these ops too.
#include <gtest/gtest.h>

#include "backend_param.h"
#include "benches/milestone_1h_ccl.h"
#include "random_allreduce.h"
#include "host/families/family.h"
#include "host/families/collective/allreduce_program.h"
#include "host/parity/figures.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"

namespace kb {

namespace {

using testing::describe;

constexpr CollOp kOwnOps[] = {CollOp::allgather, CollOp::reducescatter, CollOp::alltoall};

class CollectiveOpParity : public testing::BackendTest {};

KB_BACKEND_SUITE(CollectiveOpParity);

TEST_P(CollectiveOpParity, TenThousandRandomConfigsOfEachOp) {
  const Family& f = family("collective");
  for (const CollOp op : kOwnOps) {
    SCOPED_TRACE(kCollOpNames[static_cast<int>(op)]);
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
    const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam(), configs);
    ASSERT_EQ(exec.size(), configs.size());
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
}

TEST_P(CollectiveOpParity, EveryMilestonePointOfEachOp) {
  const TopologySpec def = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  const TopologySpec ring = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml");
  std::vector<AllreduceConfig> configs;
  std::int64_t per_op[kCollOps] = {};
  for (const AllreduceConfig& c : ccl_milestone_configs(def, ring))
    if (c.op != static_cast<std::int64_t>(CollOp::allreduce)) configs.push_back(c), ++per_op[c.op];
  for (const CollOp op : kOwnOps) EXPECT_GT(per_op[static_cast<int>(op)], 40) << kCollOpNames[static_cast<int>(op)];
  const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam(), configs);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const AllreduceResult ref = allreduce_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("collective"), configs[i], ref, exec[i]), "") << describe(configs[i]);
  }
}

}  // namespace
}  // namespace kb
