// Channels (the cube and sip levels): the batched model (every backend) and the reference
// engine agree exactly on random configs with channels, those beyond the full state's ops
// (the host's larger state) included; data mode moves and adds every op's values as defined;
// on ring8 with 450 GB/s SIP links and 600 GB/s HBM, channels take a ring allreduce,
// all-gather and reduce-scatter of 64 MiB and more to at least 85 % of the link rate in
// busbw; `auto` is the count of least latency.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend_param.h"
#include "random_allreduce.h"
#include "host/analytical/collectives.h"
#include "host/families/family.h"
#include "host/families/collective/allreduce_program.h"
#include "host/parity/figures.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"

namespace kb {

namespace {

using testing::describe;

class CollectiveChannels : public testing::BackendTest {};

KB_BACKEND_SUITE(CollectiveChannels);

TEST_P(CollectiveChannels, RandomConfigsAgreeExactly) {
  const Family& f = family("collective");
  std::vector<int> counts;
  int large = 0;
  const std::vector<AllreduceConfig> configs = testing::random_channel_configs(1200, 20261207, &counts, &large);
  for (std::int64_t level = 1; level <= 2; ++level)
    for (std::int64_t op = 0; op < kCollOps; ++op)
      for (std::int64_t buffer = 0; buffer < kCollBuffers; ++buffer)
        EXPECT_GT(counts[static_cast<std::size_t>(((level - 1) * kCollOps + op) * kCollBuffers + buffer)], 15)
            << "level " << level << " op " << op << " buffer " << buffer << " barely covered";
  EXPECT_GT(large, 20) << "few configs beyond the full state's " << kCollMaxOps << " ops";
  std::printf("%zu configs with channels, %d beyond %lld ops\n", configs.size(), large, static_cast<long long>(kCollMaxOps));
  const std::vector<AllreduceResult> exec = eval<AllreduceModel>(GetParam(), configs);
  ASSERT_EQ(exec.size(), configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kArOk) << describe(configs[i]);
    const AllreduceResult ref = allreduce_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(f, configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
    ASSERT_EQ(testing::energy_recompute_diff(f, &configs[i], &exec[i]), "") << describe(configs[i]);
  }
}

TopologySpec ring8() { return load_topology(std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml"); }

// Every op, with every algorithm that runs it, on both buffers, at both levels, with channels
// on every cube of a SIP and past them: each rank ends with what the op defines.
TEST(CollectiveChannels, DataModeOnEveryOp) {
  const HwConfig h = ring8().hw();
  std::int64_t runs = 0;
  for (std::int64_t level = 1; level <= 2; ++level)
    for (std::int64_t op = 0; op < kCollOps; ++op)
      for (std::int64_t algo = 0; algo < kCollAlgos; ++algo)
        for (std::int64_t buffer = 0; buffer < kCollBuffers; ++buffer)
          for (std::int64_t channels : {3, level == 1 ? 8 : 16}) {
            if (!coll_algo_runs(algo, op)) continue;
            AllreduceConfig c{};
            c.hw = h;
            c.level = level, c.op = op, c.algo = algo, c.buffer = buffer, c.channels = channels;
            c.ranks = 4, c.chunks = channels > 8 ? 1 : 2;  // pieces: (ranks x channels)^2 x chunks within 4096
            c.bytes = 2 * c.chunks * c.ranks * channels * 7;
            ASSERT_EQ(allreduce_check(c), kArOk) << describe(c);
            const CollectiveDataCheck d = collective_data_check(c, run_collective(c, true, 11));
            EXPECT_EQ(d.wrong, 0) << describe(c);
            EXPECT_GT(d.values, 0) << describe(c);
            ++runs;
          }
  EXPECT_GT(runs, 60);
}

// The machine: ring8 with 450 GB/s SIP links and 600 GB/s HBM per cube. One channel
// is held at a third of the link by one cube's HBM and one PE's DMA; channels (auto) reach
// 85 % of the link.
TEST(CollectiveChannels, ReachTheSipLinkRateOnRing8) {
  HwConfig h = ring8().hw();
  h.sip_link.bandwidth_gbps = 450;
  h.hbm_bandwidth_gbps = 600;
  for (CollOp op : {CollOp::allreduce, CollOp::allgather, CollOp::reducescatter})
    for (std::int64_t mib : {64, 512}) {
      AllreduceConfig c{};
      c.hw = h;
      c.level = static_cast<std::int64_t>(CollLevel::sip), c.algo = static_cast<std::int64_t>(CollAlgo::ring);
      c.op = static_cast<std::int64_t>(op), c.ranks = 8, c.buffer = static_cast<std::int64_t>(CollBuffer::hbm);
      c.chunks = 1, c.bytes = mib << 20;
      SCOPED_TRACE(describe(c));
      const AllreduceResult one = AllreduceModel::evaluate(c);
      ASSERT_EQ(one.status, kArOk);
      c.channels = 0;
      AllreduceModel::complete(c);
      ASSERT_GT(c.channels, 1);
      const AllreduceResult best = AllreduceModel::evaluate(c);
      ASSERT_EQ(best.status, kArOk);
      const double busbw1 = analytical::busbw_gbps(op, c.bytes, one.latency_ps, c.ranks);
      const double busbw = analytical::busbw_gbps(op, c.bytes, best.latency_ps, c.ranks);
      std::printf("%s %lld MiB: 1 channel %.1f GB/s busbw, %lld channels %.1f GB/s\n", kCollOpNames[c.op],
                  static_cast<long long>(mib), busbw1, static_cast<long long>(c.channels), busbw);
      EXPECT_LT(busbw1, 0.6 * 450);
      EXPECT_GE(busbw, 0.85 * 450);
      if (mib == 64) {  // both engines on the chosen count
        const AllreduceResult ref = allreduce_reference(c, nullptr);
        EXPECT_EQ(figures_diff(family("collective"), c, ref, best), "");
      }
    }
}

// `auto` (0) is the count of least latency over every count the level takes (ties: fewer),
// on the host (complete) and in the evaluation itself (what the device does).
TEST(CollectiveChannels, AutoIsTheLeastLatency) {
  std::vector<int> counts;
  int large = 0;
  const std::vector<AllreduceConfig> configs = testing::random_channel_configs(150, 77, &counts, &large);
  for (AllreduceConfig c : configs) {
    c.channels = 0;
    const AllreduceResult in_eval = AllreduceModel::evaluate(c);
    AllreduceModel::complete(c);
    std::int64_t want = 1;
    AllreduceConfig x = c;
    x.channels = 1;
    AllreduceResult least = AllreduceModel::evaluate(x);
    for (std::int64_t g = 2; g <= kCollMaxChannels; g *= 2) {
      if (!coll_channels_fit(c.hw, c.level, g)) continue;
      x.channels = g;
      const AllreduceResult r = AllreduceModel::evaluate(x);
      if (r.status == kArOk && (least.status != kArOk || r.latency_ps < least.latency_ps)) least = r, want = g;
    }
    EXPECT_EQ(c.channels, want) << describe(c);
    EXPECT_EQ(in_eval.status, least.status) << describe(c);
    EXPECT_EQ(in_eval.latency_ps, least.latency_ps) << describe(c);
  }
}

}  // namespace
}  // namespace kb
