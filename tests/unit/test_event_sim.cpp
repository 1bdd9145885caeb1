// The device simulator (src/device/sim/event_sim.h): its arbitration on hand-built cases,
// and its fast path against its own event simulation on random op graphs and on random
// allreduce configs (docs/model.md section 11.8). The event simulation itself is held to the
// reference engine by the parity tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "../parity/random_allreduce.h"
#include "device/models/collective/allreduce_model.h"
#include "device/models/decode/decode_model.h"
#include "device/sim/event_sim.h"

namespace kb {
namespace {

using Small = sim::EventSim<64, 256, 8>;
constexpr bool kArb = true, kInOrder = false;

// Both paths: the event simulation, and the fast path's second pass, which serves the link in
// claim order rather than id order.
TEST(EventSim, OpsReadyAtOneInstantGoToTheLowerPe) {
  for (bool events_only : {false, true}) {
    Small s;
    s.reset();
    const int link = s.resource(7, kArb, 10, 0);
    const int late = s.op(/*pe*/ 5, 0, link, 100, 0);   // id 0, PE 5
    const int early = s.op(/*pe*/ 2, 0, link, 100, 1);  // id 1, PE 2: goes first
    s.run(events_only);
    ASSERT_EQ(s.status, sim::kSimOk);
    EXPECT_EQ(s.path, events_only ? sim::Path::events : sim::Path::fast);
    EXPECT_EQ(s.end_t[early], 110);
    EXPECT_EQ(s.end_t[late], 210);
    EXPECT_EQ(s.mark_done[0], 210);
    EXPECT_EQ(s.latency, 210);
  }
}

TEST(EventSim, ReadyFirstBeatsProgramAndIdOrder) {
  for (bool events_only : {false, true}) {
    Small s;
    s.reset();
    const int engine = s.resource(1, kInOrder, 0, 1), link = s.resource(2, kArb, 0, 0);
    const int x = s.op(0, 0, engine, 100, 0);
    const int waits = s.op(0, 1, link, 50, 0);  // ready at 100
    s.dep(waits, x);
    const int free = s.op(3, 0, link, 50, 1);  // ready at 0, issued by a higher PE and later
    s.run(events_only);
    EXPECT_EQ(s.path, events_only ? sim::Path::events : sim::Path::fast);
    EXPECT_EQ(s.end_t[free], 50);
    EXPECT_EQ(s.end_t[waits], 150);
    EXPECT_EQ(s.class_busy[1], 100);
  }
}

// Two ops ready at one instant in different arbitration rounds, the later-round one going
// first by PE: the one ready first is served first, and no order certifies that, so the fast
// path gives way to the events.
TEST(EventSim, AnEarlierRoundBeatsALowerPe) {
  for (bool events_only : {false, true}) {
    Small s;
    s.reset();
    const int port = s.resource(1, kArb, 0, 0), link = s.resource(2, kArb, 0, 0);
    const int hop = s.op(/*pe*/ 0, 0, port, 0, 0);  // round 1 at 0; its head reaches the link in round 2
    const int second = s.op(/*pe*/ 0, 1, link, 30, 0);
    s.head(second, hop);
    const int first = s.op(/*pe*/ 1, 0, link, 30, 1);  // ready before round 1: chosen in round 1
    s.run(events_only);
    EXPECT_EQ(s.path, sim::Path::events);
    EXPECT_EQ(s.end_t[first], 30);
    EXPECT_EQ(s.end_t[second], 60);
  }
}

TEST(EventSim, InOrderResourcesKeepProgramOrderOnBothPaths) {
  for (bool events_only : {false, true}) {
    Small s;
    s.reset();
    const int a = s.resource(1, kInOrder, 0, 0), b = s.resource(2, kInOrder, 5, 0);
    const int x = s.op(0, 0, a, 100, 0);
    const int first = s.op(0, 1, b, 10, 0);  // ready at 100
    s.dep(first, x);
    const int second = s.op(0, 2, b, 10, 0);  // ready at 0, but after `first` in program order
    s.run(events_only);
    EXPECT_EQ(s.path, events_only ? sim::Path::events : sim::Path::fast);
    EXPECT_EQ(s.end_t[first], 115);
    EXPECT_EQ(s.end_t[second], 125);
  }
}

TEST(EventSim, CutThroughHeadsAndSlowestHopChains) {
  for (bool events_only : {false, true}) {
    Small s;
    s.reset();
    const int dma = s.resource(1, kInOrder, 30, 0), l1 = s.resource(2, kArb, 10, 0), l2 = s.resource(3, kArb, 20, 0);
    const int rd = s.op(0, 0, dma, 40, 0), h1 = s.op(0, 1, l1, 100, 0), h2 = s.op(0, 2, l2, 100, 0);
    s.head(h1, rd);
    s.head(h2, h1);
    s.chain(rd, 3);  // every hop held for the slowest (100)
    s.mark(h2, 1);
    s.run(events_only);
    // rd 0..100 (+30), h1 from 30 to 130 (+10), h2 from 40 to 140 (+20): ends 130, 140, 160.
    EXPECT_EQ(s.end_t[rd], 130);
    EXPECT_EQ(s.end_t[h1], 140);
    EXPECT_EQ(s.end_t[h2], 160);
    EXPECT_EQ(s.mark_done[1], 160);
  }
}

// Random op graphs, ties and zero times included: wherever the fast path is taken, it gives
// exactly the event simulation's schedule. The second regime makes most times zero, so that
// many ops become ready in later arbitration rounds of one instant.
#ifndef KB_SIM_GRAPHS
#define KB_SIM_GRAPHS 100000
#endif
TEST(EventSim, FastPathEqualsEventsOnRandomGraphs) {
  constexpr int kGraphs = KB_SIM_GRAPHS;
  auto fast = std::make_unique<Small>(), events = std::make_unique<Small>();
  for (int regime : {0, 1}) {
    std::mt19937_64 rng(20261201 + regime);
    auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
    int taken = 0, refused = 0, third = 0;
    for (int g = 0; g < kGraphs; ++g) {
      const int ops = static_cast<int>(pick(1, 40)), resources = static_cast<int>(pick(1, regime ? 2 : 6));
      const std::uint64_t seed = rng();
      for (Small* s : {fast.get(), events.get()}) {
        std::mt19937_64 r(seed);
        auto p = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(r); };
        auto time = [&](int zero_in) { return p(0, zero_in - 1) ? (regime ? 0 : p(1, 4) * 10) : (regime ? 10 : 0); };
        s->reset();
        for (int k = 0; k < resources; ++k) s->resource(k, p(0, 2) > 0, time(regime ? 4 : 2), static_cast<int>(p(0, 1)));
        std::int64_t issued[4] = {0, 0, 0, 0};
        for (int i = 0; i < ops; ++i) {
          const std::int64_t pe = p(0, 3);
          const int o = s->op(pe, issued[pe]++, static_cast<int>(p(0, resources - 1)), time(regime ? 4 : 3),
                              static_cast<int>(pe));
          for (int d = static_cast<int>(p(0, 2)); d > 0 && i > 0; --d) s->dep(o, static_cast<int>(p(0, i - 1)));
          if (i > 0 && p(0, regime ? 1 : 5) == 0 && s->head_next[i - 1] < 0) s->head(o, i - 1);
        }
      }
      fast->run(false);
      events->run(true);
      ASSERT_EQ(fast->status, sim::kSimOk);
      ASSERT_EQ(events->status, sim::kSimOk);
      if (fast->path == sim::Path::events) {
        ++refused;
        continue;
      }
      ++taken;
      third += fast->passes == 3;
      ASSERT_EQ(fast->latency, events->latency) << "regime " << regime << " graph " << g;
      for (int i = 0; i < ops; ++i) ASSERT_EQ(fast->end_t[i], events->end_t[i]) << "graph " << g << " op " << i;
      for (int k = 0; k < 2; ++k) ASSERT_EQ(fast->class_busy[k], events->class_busy[k]);
      for (int m = 0; m < 4; ++m) ASSERT_EQ(fast->mark_done[m], events->mark_done[m]);
    }
    std::printf("random graphs, regime %d: fast path on %d (%d by a third pass), events on %d\n", regime, taken, third,
                refused);
    EXPECT_GT(taken, kGraphs / 10);  // both paths are exercised, and the third pass
    EXPECT_GT(third, kGraphs / 1000);
    EXPECT_GT(refused, kGraphs / 10);
  }
}

// Allreduce: at least 10^5 random configs on which every level took the fast path, each
// equal to the event simulation, figure for figure and rank for rank.
TEST(EventSim, AllreduceFastPathEqualsEventsOnRandomConfigs) {
  // The simulator's own fast path (the general walk: test_allreduce_walk.cpp), and its events.
  auto fast = std::make_unique<ar_detail::SimWith<kArSimulatorOnly>>();
  auto events = std::make_unique<ar_detail::SimWith<kArEventsOnly>>();
  std::vector<int> counts;
  std::int64_t taken = 0, refused = 0;
  for (std::uint64_t seed = 1; taken < 100000; ++seed) {
    ASSERT_LT(seed, 100u) << "the fast path is too rare to test";
    const std::vector<AllreduceConfig> configs = testing::random_allreduce_configs(10000, 20261201 + seed, &counts);
    for (const AllreduceConfig& c : configs) {
      const AllreduceResult a = allreduce_model(c, *fast);
      if (fast->event_levels > 0) {
        ++refused;
        continue;
      }
      ++taken;
      const AllreduceResult b = allreduce_model(c, *events);
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << testing::describe(c);
      ASSERT_EQ(fast->levels, events->levels);
      for (std::int64_t r = 0; r < kCollMaxRanks; ++r) ASSERT_EQ(fast->mark_done[r], events->mark_done[r]);
    }
  }
  std::printf("allreduce: fast path on %lld configs, events on %lld\n", static_cast<long long>(taken),
              static_cast<long long>(refused));
}

// The walk keeps its state per hop of each rank's route: it relies on no two hops sharing a
// link (docs/model.md section 11.9, fact 1), which this checks for the last walk.
void expect_one_sender_per_link(const ar_detail::RingWalk& w, std::int64_t ranks, const AllreduceConfig& c) {
  std::set<std::int64_t> links;
  for (std::int32_t k = 0; k < w.route[ranks]; ++k)
    ASSERT_TRUE(links.insert(w.hops[k].link).second) << "link " << w.hops[k].link << " twice: " << testing::describe(c);
}

// The ring's closed form (allreduce_ring.h): at least 10^5 random configs of its domain on
// one buffer kind (the ring allreduce at the pe, cube and SIP levels) that it took, each
// equal to the event simulation, figure for figure and rank for rank. `chunked_least`: how
// many of them must have more than one chunk.
void ring_walk_equals_events(CollBuffer buffer, std::int64_t chunked_least) {
  // The walks themselves (the replay: test_allreduce_replay.cpp), and the simulator's events.
  auto walk = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  auto events = std::make_unique<ar_detail::SimWith<kArEventsOnly>>();
  std::vector<int> counts;
  std::int64_t taken = 0, refused = 0, per_level[3] = {0, 0, 0}, chunked = 0;
  for (std::uint64_t seed = 1; taken < 100000; ++seed) {
    ASSERT_LT(seed, 200u) << "the closed form is too rare to test";
    for (AllreduceConfig c : testing::random_allreduce_configs(10000, 20261202 + seed, &counts)) {
      c.algo = static_cast<std::int64_t>(CollAlgo::ring), c.buffer = static_cast<std::int64_t>(buffer);
      c.op = static_cast<std::int64_t>(CollOp::allreduce);
      if (c.level == static_cast<std::int64_t>(CollLevel::hier)) c.level = static_cast<std::int64_t>(seed % 3);
      if (allreduce_check(c) != kArOk) continue;
      ASSERT_TRUE(ar_detail::ring_walk_domain(c));
      for (std::int64_t b = 0; b < kCollBuffers; ++b) {  // the ring's op count in closed form
        AllreduceConfig k = c;
        k.buffer = b;
        ASSERT_EQ(ar_detail::count_ops(k), ar_detail::count_ops_by_schedule(k)) << testing::describe(k);
      }
      const AllreduceResult a = allreduce_model(c, *walk);
      if (walk->walked_levels == 0) {
        ++refused;
        continue;
      }
      ++taken, ++per_level[c.level], chunked += c.chunks > 1;
      expect_one_sender_per_link(walk->walk, c.ranks, c);
      const AllreduceResult b = allreduce_model(c, *events);
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << testing::describe(c) << ": " << a.latency_ps << " against " << b.latency_ps;
      for (std::int64_t r = 0; r < kCollMaxRanks; ++r) ASSERT_EQ(walk->mark_done[r], events->mark_done[r]) << r;
    }
  }
  std::printf("ring walk (%s): taken on %lld configs (pe %lld, cube %lld, sip %lld; %lld chunked), simulated on %lld\n",
              buffer == CollBuffer::hbm ? "HBM" : "SRAM", static_cast<long long>(taken),
              static_cast<long long>(per_level[0]), static_cast<long long>(per_level[1]),
              static_cast<long long>(per_level[2]), static_cast<long long>(chunked), static_cast<long long>(refused));
  for (std::int64_t n : per_level) EXPECT_GT(n, 10000);
  EXPECT_GE(chunked, chunked_least);
}

TEST(EventSim, AllreduceRingWalkEqualsEventsOnRandomConfigs) { ring_walk_equals_events(CollBuffer::sram, 10000); }

// With HBM buffers every rank's HBM write port has two issuers (the send into it and its own
// adds); the walk takes a config only where their claims come in its order.
TEST(EventSim, AllreduceRingWalkOnHbmEqualsEventsOnRandomConfigs) { ring_walk_equals_events(CollBuffer::hbm, 1000); }

// A hier ring allreduce's top phase is a ring allreduce among the leaders (its group 0's
// PEs): the walk takes it there, and the whole config (every phase, each phase starting from
// the walked one's per-rank finish times) equals the event simulation, figure for figure and
// rank for rank, on 10^5 random hier configs on both buffer kinds.
TEST(EventSim, AllreduceRingWalkTakesTheTopPhaseOfHier) {
  // The walks themselves (the replay: test_allreduce_replay.cpp), and the simulator's events.
  auto walk = std::make_unique<ar_detail::SimWith<kArNoReplay>>();
  auto events = std::make_unique<ar_detail::SimWith<kArEventsOnly>>();
  std::vector<int> counts;
  std::int64_t taken = 0, refused = 0, per_buffer[2] = {0, 0};
  for (std::uint64_t seed = 1; taken < 100000; ++seed) {
    ASSERT_LT(seed, 400u) << "the closed form is too rare to test";
    for (AllreduceConfig c : testing::random_allreduce_configs(10000, 20261203 + seed, &counts)) {
      if (c.level != static_cast<std::int64_t>(CollLevel::hier)) continue;
      c.algo = static_cast<std::int64_t>(CollAlgo::ring), c.op = static_cast<std::int64_t>(CollOp::allreduce);
      if (allreduce_check(c) != kArOk) continue;
      const AllreduceResult a = allreduce_model(c, *walk);
      if (walk->walked_levels == 0) {
        ++refused;
        continue;
      }
      ++taken, ++per_buffer[c.buffer];
      CollPhase ph[5];
      std::int64_t leader_pe = 0, leader_cube = 0;
      const int phases = coll_hier_phases(c, ph, &leader_pe, &leader_cube);
      for (int k = 0; k < phases; ++k) {  // the walked one: the top phase, the one allreduce
        const AllreduceConfig& sub = ph[k].sub;
        if (sub.op != static_cast<std::int64_t>(CollOp::allreduce)) continue;
        // The later phases' walks share its storage: walk it again on its own, at the
        // model's nodes (its group 0's leaders).
        net::Node nodes[kCollMaxRanks];
        std::int64_t sharers[kCollMaxRanks];
        for (std::int64_t r = 0; r < sub.ranks; ++r)
          nodes[r] = coll_node(c, coll_hier_rank(c, sub, 0, r, leader_pe, leader_cube)), sharers[r] = 1;
        auto alone = std::make_unique<ar_detail::RingWalk>();
        ar_detail::AllreduceFigures f{};
        ar_detail::ring_walk(sub, *alone, nodes, sharers, &f);
        ASSERT_GT(alone->route[sub.ranks], 0) << "the walk stopped before its routes: " << testing::describe(c);
        expect_one_sender_per_link(*alone, sub.ranks, c);
      }
      const AllreduceResult b = allreduce_model(c, *events);
      ASSERT_EQ(events->walked_levels, 0);
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << testing::describe(c) << ": " << a.latency_ps << " against " << b.latency_ps;
      for (std::int64_t r = 0; r < kCollMaxRanks; ++r) ASSERT_EQ(walk->mark_done[r], events->mark_done[r]) << r;
    }
  }
  std::printf("ring walk in hier: taken on %lld configs (SRAM %lld, HBM %lld), simulated on %lld\n",
              static_cast<long long>(taken), static_cast<long long>(per_buffer[0]), static_cast<long long>(per_buffer[1]),
              static_cast<long long>(refused));
  for (std::int64_t n : per_buffer) EXPECT_GT(n, 10000);
}

// Decode's reduce across cubes (docs/model.md section 12.5): each PE position of a child cube
// sends m, l and O over the cube's one link, the three ready at once, and the model serves
// them as one bundle of their summed busy time (sim::serve_all on dec_detail::Bundle). On
// random queues (1-64 positions in any PE order, ready times with ties, busy times of each
// position's own and any latency) each bundle lands when the event simulation lands its
// position's last copy, on both of the simulator's paths.
TEST(EventSim, CopiesReadyAtOnceAreServedAsOneBundle) {
  std::mt19937_64 rng(41);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  using Queue = sim::EventSim<256, 256, 8>;
  auto s = std::make_unique<Queue>();
  int ties = 0, waited = 0;
  for (int it = 0; it < 20000; ++it) {
    const int n = static_cast<int>(pick(1, 64));
    const ps_t lat = pick(0, 3) ? pick(0, 300) : 0, step = pick(1, 400);
    std::vector<ps_t> bm(static_cast<std::size_t>(n)), bo(static_cast<std::size_t>(n));
    std::vector<std::int32_t> pe(static_cast<std::size_t>(n));
    std::iota(pe.begin(), pe.end(), 0);
    std::shuffle(pe.begin(), pe.end(), rng);
    std::vector<dec_detail::Bundle> b(static_cast<std::size_t>(n));
    std::vector<int> last(static_cast<std::size_t>(n));
    s->reset();
    const int link = s->resource(1, kArb, lat, 0);
    for (int i = 0; i < n; ++i) {
      const ps_t ready = pick(0, 2) ? pick(0, 6) * step : 0;  // few distinct instants: ties
      bm[i] = pick(0, 60), bo[i] = pick(0, 2) ? bo[i > 0 ? i - 1 : 0] : pick(0, 500);
      int before = -1;
      if (ready > 0) before = s->op(pe[i], 0, s->resource(100 + i, kInOrder, 0, 1), ready, -1);
      for (int k = 0; k < 3; ++k) {
        last[i] = s->op(pe[i], 1 + k, link, k < 2 ? bm[i] : bo[i], -1);
        s->dep(last[i], before);
      }
      b[i] = dec_detail::Bundle{ready, pe[i], /*rows: here, whose busy times*/ i};
    }
    s->run(it % 2 == 1);
    ASSERT_EQ(s->status, sim::kSimOk);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < i; ++j) ties += b[i].ready == b[j].ready;
    auto busy = [&](const dec_detail::Bundle& x) { return 2 * bm[x.rows] + bo[x.rows]; };
    sim::serve_all(b.data(), n, lat, busy);
    for (int i = 0; i < n; ++i) {
      const auto at = std::find_if(b.begin(), b.end(), [&](const dec_detail::Bundle& x) { return x.pe == pe[i]; });
      ASSERT_NE(at, b.end());
      ASSERT_EQ(at->ready, s->end_t[last[i]]) << "queue " << it << ", position " << pe[i];
    }
    for (int i = 1; i < n; ++i) waited += b[i].ready - busy(b[i]) > b[i - 1].ready;  // an idle gap before it
  }
  EXPECT_GT(ties, 100000);  // pairs ready at one instant, to be ordered by PE
  EXPECT_GT(waited, 1000);  // and idle gaps
}

}  // namespace
}  // namespace kb
