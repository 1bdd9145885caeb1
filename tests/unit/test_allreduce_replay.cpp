// The allreduce model's replay of a recorded level (src/device/models/collective/allreduce_replay.h, host
// only): a level of a structure the thread has recorded is timed by replaying the recorded
// ops with the config's own costs, in one of the orders its earlier configs needed, and taken
// only where the replay's certificate holds (docs/model.md section 11.11). On many sizes of
// random configs of every level (hier included), algorithm, op and buffer kind, the model
// with the replay must give exactly what it gives without, and the replay must take most
// levels, refuse some (the claims came in another order) and learn their orders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "../parity/random_allreduce.h"
#include "device/models/collective/allreduce_model.h"

namespace kb {
namespace {

TEST(AllreduceReplay, EqualsTheModelOnManySizesOfRandomConfigs) {
  auto with = std::make_unique<ar_detail::Sim>();
  auto without = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  ar_detail::ArReplayCache& cache = ar_detail::replay_cache();
  cache.record_at = 2;  // each structure recorded at its second size: the replay tested at many
  const std::int64_t mismatches = cache.mismatches, refusals = cache.refusals, orders = cache.orders - cache.graphs,
                     uniform = cache.uniform, closed = cache.closed;
  std::mt19937_64 rng(20261205);
  std::vector<int> counts;
  std::int64_t replayed = 0, recorded = 0, configs = 0, hier = 0, rings = 0, per_buffer[kCollBuffers] = {};
  for (std::uint64_t seed = 1; replayed < 100000; ++seed) {
    ASSERT_LT(seed, 40u) << "the replay is too rare to test";
    for (const AllreduceConfig& base : testing::random_allreduce_configs(2000, 20261300 + seed, &counts)) {
      // The structure at sizes from the least to a hundred thousand times it, in random order.
      for (int v = 0; v < 12; ++v) {
        AllreduceConfig c = base;
        // Every other size a multiple of the pieces (each piece one size: the classes'
        // replay), the others any even size (pieces of two sizes: the replay op by op).
        const std::int64_t least = c.chunks * c.ranks, scale = v < 4 ? 4 : v < 8 ? 300 : 100000;
        c.bytes = v % 2 ? 2 * (least + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(scale * least)))
                        : 2 * least * (1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(scale)));
        if (allreduce_check(c) != kArOk) continue;
        const AllreduceResult a = allreduce_model(c, *with), b = allreduce_model(c, *without);
        ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0)
            << testing::describe(c) << ": " << a.latency_ps << " replayed against " << b.latency_ps;
        ASSERT_EQ(with->levels, without->levels);
        if (a.status != kArOk) continue;
        if (c.level == static_cast<std::int64_t>(CollLevel::hier)) {
          for (std::int64_t r = 0; r < kCollMaxRanks; ++r) ASSERT_EQ(with->mark_done[r], without->mark_done[r]) << r;
          hier += with->replayed_levels;
        }
        if (c.algo == static_cast<std::int64_t>(CollAlgo::ring)) rings += with->replayed_levels;
        replayed += with->replayed_levels, recorded += with->recorded_levels;
        per_buffer[c.buffer] += with->replayed_levels;
        ++configs;
      }
    }
  }
  // Orders learned for a structure that had one already.
  const std::int64_t refused = cache.refusals - refusals, learned = cache.orders - cache.graphs - orders,
                     by_classes = cache.uniform - uniform, by_forms = cache.closed - closed;
  std::printf("replay: %lld levels replayed (%lld of hier phases, %lld rings; SRAM %lld, HBM %lld; %lld by their "
              "classes, %lld of them in closed form) over %lld configs; %lld recorded, %lld further orders learned, "
              "%lld replays refused\n",
              static_cast<long long>(replayed), static_cast<long long>(hier), static_cast<long long>(rings),
              static_cast<long long>(per_buffer[0]), static_cast<long long>(per_buffer[1]),
              static_cast<long long>(by_classes), static_cast<long long>(by_forms), static_cast<long long>(configs),
              static_cast<long long>(recorded),
              static_cast<long long>(learned), static_cast<long long>(refused));
  EXPECT_EQ(cache.mismatches, mismatches) << "a recording's replay differed from the walk it repeats";
  for (std::int64_t n : per_buffer) EXPECT_GT(n, 10000);
  EXPECT_GT(hier, 10000);
  EXPECT_GT(rings, 5000);
  EXPECT_GT(by_classes, 30000);             // each piece one size: the classes' replay
  EXPECT_GT(by_forms, 20000);               // in closed form
  EXPECT_GT(by_classes - by_forms, 5000);   // and class by class
  EXPECT_GT(replayed - by_classes, 30000);  // pieces of two sizes: op by op
  EXPECT_GT(refused, 200);  // the certificate's refusals are exercised
  EXPECT_GT(learned, 200);  // and so are structures with several orders
}

// An allreduce with HBM buffers in one chunk on a test topology (its size set by the caller).
AllreduceConfig hbm_allreduce(const char* topology, CollLevel level, CollAlgo algo, std::int64_t ranks) {
  AllreduceConfig c{};
  c.hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/" + topology).hw();
  c.level = static_cast<std::int64_t>(level), c.algo = static_cast<std::int64_t>(algo);
  c.ranks = ranks, c.buffer = static_cast<std::int64_t>(CollBuffer::hbm), c.chunks = 1;
  c.op = static_cast<std::int64_t>(CollOp::allreduce);
  return c;
}

// The thread's cache as a new thread finds it (a test's counts do not depend on the tests
// run before it in the same process), recording a structure at its `record_at`-th meeting.
ar_detail::ArReplayCache& empty_cache(std::uint64_t record_at = 2) {
  ar_detail::ArReplayCache& cache = ar_detail::replay_cache();
  cache.drop_programs(), cache.hws.clear(), cache.hw_places.clear(), cache.last_hw = 0;
  std::fill(cache.seen.begin(), cache.seen.end(), 0);
  cache.record_at = record_at;
  return cache;
}

// A structure whose sizes need more orders than it keeps (kOrders) refuses more than it
// serves, and recording one order over another each time costs more than walking: past
// kGiveUp refusals it is walked, neither tried nor recorded again. Each random structure
// here is met at 40 sizes from 2 B a piece to 2^20 times that, in random order; every
// result stays the model's, some structures are given up, and a second pass over the same
// levels records fewer orders than the first.
TEST(AllreduceReplay, AStructureThatRefusesMoreThanItServesIsWalked) {
  ar_detail::ArReplayCache& cache = empty_cache();
  auto with = std::make_unique<ar_detail::Sim>();
  auto without = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  std::mt19937_64 rng(20261206);
  std::vector<int> counts;
  std::vector<AllreduceConfig> levels;
  for (const AllreduceConfig& base : testing::random_allreduce_configs(300, 20261206, &counts))
    for (int v = 0; v < 40; ++v) {
      AllreduceConfig c = base;
      const std::int64_t least = c.chunks * c.ranks;
      c.bytes = 2 * (least + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(least << (v % 21))));
      if (allreduce_check(c) == kArOk) levels.push_back(c);
    }
  std::shuffle(levels.begin(), levels.end(), rng);
  const std::int64_t given_up = cache.given_up;
  std::int64_t orders[2] = {};
  for (int pass = 0; pass < 2; ++pass) {
    const std::int64_t before = cache.orders;
    for (const AllreduceConfig& c : levels) {
      const AllreduceResult a = allreduce_model(c, *with), b = allreduce_model(c, *without);
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << testing::describe(c);
    }
    orders[pass] = cache.orders - before;
  }
  EXPECT_GT(cache.given_up - given_up, 0);
  EXPECT_LT(orders[1], orders[0]);
  std::printf("%zu levels: %lld structures given up; orders recorded %lld, then %lld\n", levels.size(),
              static_cast<long long>(cache.given_up - given_up), static_cast<long long>(orders[0]), static_cast<long long>(orders[1]));
}

// A sweep over many hardware configs, sizes outermost: every config's hardware differs from
// the one before, and the structures of all of them are kept and replayed.
TEST(AllreduceReplay, ReplaysAcrossManyHardwareConfigs) {
  empty_cache();
  AllreduceConfig c = hbm_allreduce("default.yaml", CollLevel::cube, CollAlgo::ring, 4);
  const HwConfig base = c.hw;
  auto with = std::make_unique<ar_detail::Sim>();
  auto without = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  std::int64_t replayed = 0, evaluated = 0;
  for (std::int64_t b = INT64_C(1) << 12; b <= INT64_C(1) << 24; b *= 4)
    for (std::int64_t v = 0; v < 40; ++v) {
      c.hw = base;
      c.hw.hbm_latency_ns = base.hbm_latency_ns + v;  // another structure's latencies
      c.bytes = b;
      ASSERT_EQ(allreduce_check(c), kArOk);
      const AllreduceResult x = allreduce_model(c, *with), y = allreduce_model(c, *without);
      ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << testing::describe(c);
      replayed += with->replayed_levels, ++evaluated;
    }
  // Each structure is recorded at its second size and replayed at the later ones.
  EXPECT_EQ(replayed, evaluated - 2 * 40);
}

// A sweep that cycles over more structures than a thread's cache holds (1,000 hardware
// configs, sizes outermost): once full, the cache keeps the structures it holds and replays
// them at every later size, and walks the others. (Dropping every program when full, as it
// once did, recorded each structure again before it was met again, and replayed none.)
TEST(AllreduceReplay, AFullCacheKeepsServingAMixOfMoreStructuresThanItHolds) {
  ar_detail::ArReplayCache& cache = empty_cache();
  AllreduceConfig c = hbm_allreduce("default.yaml", CollLevel::cube, CollAlgo::ring, 4);
  c.chunks = 2;
  const HwConfig base = c.hw;
  auto with = std::make_unique<ar_detail::Sim>();
  auto without = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  constexpr std::int64_t kStructures = 1000, kSizes = 6;
  std::int64_t replayed_late = 0, evaluated_late = 0, most_programs = 0;
  for (std::int64_t s = 0; s < kSizes; ++s)
    for (std::int64_t v = 0; v < kStructures; ++v) {
      c.hw = base;
      c.hw.hbm_latency_ns = base.hbm_latency_ns + v;  // a structure of its own
      c.bytes = (INT64_C(1) << 12) << (2 * s);
      ASSERT_EQ(allreduce_check(c), kArOk);
      const AllreduceResult x = allreduce_model(c, *with), y = allreduce_model(c, *without);
      ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << testing::describe(c);
      most_programs = std::max<std::int64_t>(most_programs, static_cast<std::int64_t>(cache.programs.size()));
      if (s >= 2) replayed_late += with->replayed_levels, ++evaluated_late;
    }
  std::printf("full cache: at most %lld programs for %lld structures; %lld of %lld levels replayed after the second size\n",
              static_cast<long long>(most_programs), static_cast<long long>(kStructures), static_cast<long long>(replayed_late),
              static_cast<long long>(evaluated_late));
  ASSERT_LT(most_programs, kStructures) << "the mix fits the cache: the test needs more structures";
  // Every structure the cache holds is replayed at every size after the one it was recorded at.
  EXPECT_GE(replayed_late, (kSizes - 2) * most_programs * 9 / 10);

  // Then the sweep moves on to 200 structures it never met, at many sizes each: the full
  // cache serves none of them, and after a whole window of look-ups that replayed nothing it
  // is emptied, records them, and replays them.
  std::int64_t replayed_new = 0, evaluated_new = 0;
  constexpr std::int64_t kNew = 200, kNewSizes = 250;
  for (std::int64_t s = 0; s < kNewSizes; ++s)
    for (std::int64_t v = 0; v < kNew; ++v) {
      c.hw = base;
      c.hw.hbm_latency_ns = base.hbm_latency_ns + kStructures + v;
      c.bytes = 4096 + 16 * s;
      const AllreduceResult x = allreduce_model(c, *with);
      if (s % 50 == 49) {
        const AllreduceResult y = allreduce_model(c, *without);
        ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << testing::describe(c);
      }
      if (s >= kNewSizes - 25) replayed_new += with->replayed_levels, ++evaluated_new;
    }
  EXPECT_GT(replayed_new, evaluated_new * 9 / 10) << "the cache kept structures the sweep no longer meets";
}

// Rent, then buy: a structure is walked at each of its first kRecordAt - 1 meetings (a
// recording costs about as many walks, so a structure met a few times is never recorded),
// recorded at the kRecordAt-th, and replayed from the next one on; every result the model's.
TEST(AllreduceReplay, AStructureIsRecordedOnlyOnceItsWalksHaveCostAboutARecording) {
  constexpr std::uint64_t kAt = ar_detail::ArReplayCache::kRecordAt;
  ar_detail::ArReplayCache& cache = empty_cache(kAt);
  AllreduceConfig c = hbm_allreduce("default.yaml", CollLevel::cube, CollAlgo::ring, 4);
  auto with = std::make_unique<ar_detail::Sim>();
  auto without = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  const std::int64_t graphs = cache.graphs;
  for (std::uint64_t met = 1; met <= kAt + 5; ++met) {
    c.bytes = INT64_C(4096) * static_cast<std::int64_t>(met);
    ASSERT_EQ(allreduce_check(c), kArOk);
    const AllreduceResult x = allreduce_model(c, *with), y = allreduce_model(c, *without);
    ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << testing::describe(c);
    EXPECT_EQ(cache.graphs - graphs, met < kAt ? 0 : 1) << "meeting " << met;
    EXPECT_EQ(with->replayed_levels, met <= kAt ? 0 : 1) << "meeting " << met;
  }
  // Another structure (two chunks), met once: walked.
  c.chunks = 2;
  const AllreduceResult x = allreduce_model(c, *with);
  EXPECT_EQ(x.status, kArOk);
  EXPECT_EQ(with->replayed_levels, 0);
  EXPECT_EQ(cache.graphs - graphs, 1);
}

// The replay's certificate is its claim order: a replay that served a resource's claims out
// of goes_first order would be taken here and give another answer.
TEST(AllreduceReplay, RefusesWhereAClaimComesOutOfOrder) {
  // halving-doubling over SIPs on a ring of 8 with HBM buffers: its claims on the shared
  // links come in another order at a latency-bound size than at a bandwidth-bound one.
  AllreduceConfig c = hbm_allreduce("ring8.yaml", CollLevel::sip, CollAlgo::hd, 8);
  auto with = std::make_unique<ar_detail::Sim>();
  auto without = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  ar_detail::ArReplayCache& cache = empty_cache();
  const std::int64_t refusals = cache.refusals;
  std::int64_t replayed = 0;
  for (int round = 0; round < 2; ++round)
    for (std::int64_t b = INT64_C(1) << 10; b <= INT64_C(1) << 30; b *= 4) {
      c.bytes = b;
      ASSERT_EQ(allreduce_check(c), kArOk);
      const AllreduceResult x = allreduce_model(c, *with), y = allreduce_model(c, *without);
      ASSERT_EQ(std::memcmp(&x, &y, sizeof x), 0) << testing::describe(c);
      replayed += with->replayed_levels;
    }
  EXPECT_GT(cache.refusals, refusals);
  EXPECT_GT(replayed, 5);
}

}  // namespace
}  // namespace kb
