// The allreduce model's general walk (src/device/models/collective/allreduce_walk.h): the device
// simulator's first pass computed while the transfers are walked, without the op graph, a
// group's sends that share a resource served in the order of their claims. It must take every
// level the simulator's first pass certifies (unless one of its tables is too small), and more
// (the claim order), and give the event simulation's schedule: its figures and every rank's
// finish time (docs/model.md sections 11.8 and 11.10). Walked without depths where no op needs
// them, it must answer as it does with them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "../parity/random_allreduce.h"
#include "device/models/collective/allreduce_model.h"

namespace kb {
namespace {

// At least 10^5 random single-level configs that the walk took, every algorithm and both
// buffer kinds among them.
TEST(AllreduceWalk, CoversTheSimulatorsFirstPassOnRandomConfigs) {
  auto walk = std::make_unique<ar_detail::SimWith<kArNoReplay>>();  // the walk itself (the replay: test_allreduce_replay.cpp)
  auto deep = std::make_unique<ar_detail::SimWith<kArNoReplay & ~kArPathFlat>>();  // the walk with depths only
  // Builds the ops: the simulator's fast path (first pass, then second), or its events.
  auto ops = std::make_unique<ar_detail::SimWith<kArSimulatorOnly>>();
  auto events = std::make_unique<ar_detail::SimWith<kArEventsOnly>>();
  std::vector<int> counts;
  std::int64_t taken = 0, beyond = 0, refused = 0, full = 0, per_algo[kCollAlgos] = {}, per_buffer[kCollBuffers] = {};
  std::int64_t flat = 0, with_depths = 0;
  for (std::uint64_t seed = 1; taken < 100000; ++seed) {
    ASSERT_LT(seed, 200u) << "the walk is too rare to test";
    for (const AllreduceConfig& c : testing::random_allreduce_configs(10000, 20261204 + seed, &counts)) {
      if (c.level == static_cast<std::int64_t>(CollLevel::hier)) continue;  // several levels: the parity tests
      const AllreduceResult a = allreduce_model(c, *walk);
      if (a.status != kArOk || walk->walked_levels > 0) continue;  // the ring's closed form: its own tests
      ASSERT_EQ(walk->levels, 1);
      const AllreduceResult b = allreduce_model(c, *ops);
      ASSERT_EQ(ops->general_levels + ops->general_refused + ops->general_full, 0);
      if (walk->general_levels == 1) {
        // Beyond the first pass: a group's sends that share a resource, served in claim order.
        if (!ops->e.first_pass) ++beyond;
        ++taken, ++per_algo[c.algo], ++per_buffer[c.buffer];
      } else if (walk->general_refused == 1) {
        ASSERT_FALSE(ops->e.first_pass) << "the walk refused a level the first pass certifies: " << testing::describe(c);
        ++refused;
      } else {
        ASSERT_EQ(walk->general_full, 1);  // a table too small: either outcome of the first pass
        ++full;
      }
      // Taken or not, the model's answer is the simulator's.
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << testing::describe(c) << ": " << a.latency_ps << " against " << b.latency_ps;
      for (std::int64_t r = 0; r < kCollMaxRanks; ++r) ASSERT_EQ(walk->mark_done[r], ops->mark_done[r]) << r;
      // Without depths or with them: the same outcome, the same answer.
      const AllreduceResult d = allreduce_model(c, *deep);
      ASSERT_EQ(deep->flat_levels, 0);
      ASSERT_EQ(deep->general_levels, walk->general_levels) << testing::describe(c);
      ASSERT_EQ(std::memcmp(&a, &d, sizeof a), 0) << testing::describe(c) << ": " << a.latency_ps << " against " << d.latency_ps;
      for (std::int64_t r = 0; r < kCollMaxRanks; ++r) ASSERT_EQ(walk->mark_done[r], deep->mark_done[r]) << r;
      if (walk->general_levels == 1) ++(walk->flat_levels == 1 ? flat : with_depths);
      if (walk->general_levels == 0) continue;
      const AllreduceResult e = allreduce_model(c, *events);
      ASSERT_EQ(std::memcmp(&a, &e, sizeof a), 0) << testing::describe(c) << ": " << a.latency_ps << " against " << e.latency_ps;
      for (std::int64_t r = 0; r < kCollMaxRanks; ++r) ASSERT_EQ(walk->mark_done[r], events->mark_done[r]) << r;
    }
  }
  std::printf("general walk: taken on %lld configs (%lld of them beyond the first pass; ring %lld, hd %lld, tree %lld, "
              "mesh2d %lld, root %lld; SRAM %lld, HBM %lld), refused on %lld, too large for it on %lld\n",
              static_cast<long long>(taken), static_cast<long long>(beyond), static_cast<long long>(per_algo[0]),
              static_cast<long long>(per_algo[1]),
              static_cast<long long>(per_algo[2]), static_cast<long long>(per_algo[3]), static_cast<long long>(per_algo[4]),
              static_cast<long long>(per_buffer[0]), static_cast<long long>(per_buffer[1]), static_cast<long long>(refused),
              static_cast<long long>(full));
  std::printf("general walk: %lld taken without depths, %lld needed them\n", static_cast<long long>(flat),
              static_cast<long long>(with_depths));
  for (std::int64_t a = 0; a < kCollAlgos; ++a)
    if (coll_algo_runs(a, static_cast<std::int64_t>(CollOp::allreduce))) EXPECT_GT(per_algo[a], 1000) << kCollAlgoNames[a];
  for (std::int64_t n : per_buffer) EXPECT_GT(n, 10000);
  EXPECT_GT(refused, 100);  // both outcomes are exercised
  EXPECT_GT(beyond, 1000);  // and the claim order within a group
  EXPECT_GT(flat, 10000);   // both walks take levels
  EXPECT_GT(with_depths, 1000);
}

// The ops of their own (allgather, reducescatter, alltoall) through every evaluator of a
// level: the general walk (without depths and with them), the simulator's fast path, and its
// events alone, give one answer, and the walk takes most of them.
TEST(AllreduceWalk, TheOpsOfTheirOwnAgreeOnEveryPath) {
  auto walk = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  auto deep = std::make_unique<ar_detail::SimWith<kArNoReplay & ~kArPathFlat>>();
  auto ops = std::make_unique<ar_detail::SimWith<kArSimulatorOnly>>();
  auto events = std::make_unique<ar_detail::SimWith<kArEventsOnly>>();
  for (const CollOp op : {CollOp::allgather, CollOp::reducescatter, CollOp::alltoall}) {
    std::vector<int> counts;
    std::int64_t taken = 0, seen = 0;
    for (const AllreduceConfig& c : testing::random_op_configs(op, 5000, 20261206 + static_cast<std::uint64_t>(op), &counts)) {
      const AllreduceResult a = allreduce_model(c, *walk), b = allreduce_model(c, *ops), d = allreduce_model(c, *deep),
                            e = allreduce_model(c, *events);
      ASSERT_EQ(a.status, kArOk) << testing::describe(c);
      ASSERT_EQ(walk->walked_levels, 0) << "the ring's closed form is the ring allreduce's";
      ASSERT_EQ(events->event_levels, 1);
      for (const AllreduceResult* x : {&b, &d, &e})
        ASSERT_EQ(std::memcmp(&a, x, sizeof a), 0) << testing::describe(c) << ": " << a.latency_ps << " against " << x->latency_ps;
      for (std::int64_t r = 0; r < kCollMaxRanks; ++r) {
        ASSERT_EQ(walk->mark_done[r], events->mark_done[r]) << r;
        ASSERT_EQ(ops->mark_done[r], events->mark_done[r]) << r;
      }
      taken += walk->general_levels;
      ++seen;
    }
    EXPECT_GT(taken, seen / 2) << kCollOpNames[static_cast<int>(op)] << ": the general walk takes few";
  }
}

}  // namespace
}  // namespace kb
