// Collectives on the reference runtime: every rank ends with the elementwise sum (the root,
// for reduce) on every level, algorithm, buffer kind and chunking; the direct-launch ring
// has the library ring's timeline op for op; where the alpha-beta-gamma formula is exact the
// simulated latency is within 2% of it; invalid requests name their reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "topologies.h"
#include "host/analytical/collectives.h"
#include "host/common/error.h"
#include "host/families/collective/allreduce_figures.h"
#include "host/families/collective/allreduce_program.h"
#include "host/runtime/numeric.h"
#include "host/topology/load.h"

namespace kb {
namespace {

using kb::unittest::topo;
using kb::unittest::tiny;

AllreduceConfig config(const TopologySpec& t, CollLevel level, CollAlgo algo, std::int64_t ranks, std::int64_t bytes,
                       CollBuffer buffer = CollBuffer::sram, CollOp op = CollOp::allreduce, std::int64_t chunks = 1) {
  AllreduceConfig c{};
  c.hw = t.hw();
  c.bytes = bytes;
  c.level = static_cast<std::int64_t>(level);
  c.algo = static_cast<std::int64_t>(algo);
  c.ranks = ranks;
  c.buffer = static_cast<std::int64_t>(buffer);
  c.op = static_cast<std::int64_t>(op);
  c.chunks = chunks;
  return c;
}

std::string name(const AllreduceConfig& c) {
  return std::string(to_string(static_cast<CollLevel>(c.level))) + "/" + to_string(static_cast<CollAlgo>(c.algo)) +
         " p" + std::to_string(c.ranks) + (c.buffer ? " hbm" : " sram") + (c.op ? " reduce" : " allreduce") + " chunks " +
         std::to_string(c.chunks) + " bytes " + std::to_string(c.bytes);
}

// Every rank (the root, for reduce) holds the sum of the inputs, within the f16 rounding of
// p - 1 additions; for allreduce every rank holds the same bits.
void expect_sum(const AllreduceConfig& c, const CollectiveRun& run) {
  const std::int64_t values = c.bytes / 2, root = coll_final_root(c);
  double worst = 0;
  for (std::int64_t i = 0; i < values; ++i) {
    double sum = 0, mag = 0;
    for (std::int64_t r = 0; r < c.ranks; ++r) {
      sum += run.inputs[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
      mag += std::fabs(run.inputs[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]);
    }
    const double tol = static_cast<double>(c.ranks - 1) * std::ldexp(1.0, -10) * std::max(1.0, mag);
    for (std::int64_t r = 0; r < c.ranks; ++r) {
      if (c.op == static_cast<std::int64_t>(CollOp::reduce) && r != root) continue;
      const double got = run.values[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
      worst = std::max(worst, std::fabs(got - sum));
      ASSERT_NEAR(got, sum, tol) << name(c) << " rank " << r << " value " << i;
      if (c.op == static_cast<std::int64_t>(CollOp::allreduce)) {
        ASSERT_EQ(got, run.values[static_cast<std::size_t>(root)][static_cast<std::size_t>(i)]) << name(c) << " rank " << r;
      }
    }
  }
}

TEST(Collective, EveryRankEndsWithTheSum) {
  const TopologySpec def = topo("default.yaml"), ring8 = topo("ring8.yaml");
  int runs = 0;
  for (int level = 0; level < 4; ++level)
    for (int algo = 0; algo < 5; ++algo)
      for (std::int64_t p : level == 3 ? std::vector<std::int64_t>{3, 8, 16, 24, 64} : std::vector<std::int64_t>{2, 3, 4, 8})
        for (int buffer = 0; buffer < 2; ++buffer)
          for (int op = 0; op < 2; ++op)
            for (std::int64_t chunks : {1, 3}) {
              const AllreduceConfig c = config(level == 2 ? ring8 : def, static_cast<CollLevel>(level),
                                               static_cast<CollAlgo>(algo), p, 2 * 37 * p * chunks, static_cast<CollBuffer>(buffer),
                                               static_cast<CollOp>(op), chunks);
              if (allreduce_check(c) != kArOk) continue;
              expect_sum(c, run_collective(c, true, 7));
              ++runs;
            }
  EXPECT_GT(runs, 400);
}

// allgather, reducescatter and alltoall in data mode, against float64: every level (hier as
// one level over part of a cube or two cubes), algorithm that runs the op, buffer, chunking, and piece sizes that differ (all-to-all: one size).
// The check itself fails on a value moved to the wrong place or summed wrongly.
TEST(Collective, TheOpsOfTheirOwnMoveAndAddAsDefined) {
  const TopologySpec def = topo("default.yaml"), ring8 = topo("ring8.yaml");
  int runs = 0;
  for (const CollOp op : {CollOp::allgather, CollOp::reducescatter, CollOp::alltoall})
    for (int level = 0; level < 4; ++level)
      for (int algo = 0; algo < kCollAlgos; ++algo)
        for (std::int64_t p : level == 3 ? std::vector<std::int64_t>{3, 8, 16} : std::vector<std::int64_t>{2, 3, 4, 8})
          for (int buffer = 0; buffer < 2; ++buffer)
            for (std::int64_t chunks : {1, 3}) {
              const std::int64_t values = op == CollOp::alltoall ? 5 * p * chunks : 37 * p * chunks + 5;
              const AllreduceConfig c = config(level == 2 ? ring8 : def, static_cast<CollLevel>(level),
                                               static_cast<CollAlgo>(algo), p, 2 * values, static_cast<CollBuffer>(buffer), op, chunks);
              if (allreduce_check(c) != kArOk) continue;
              CollectiveRun run = run_collective(c, true, 7);
              const CollectiveDataCheck d = collective_data_check(c, run);
              ASSERT_EQ(d.wrong, 0) << name(c) << " " << kCollOpNames[static_cast<int>(op)];
              ASSERT_GT(d.values, 0);
              // Each op's definition reaches every value it names: all of them (allgather,
              // alltoall), or every rank's own piece (reducescatter).
              EXPECT_EQ(d.values, op == CollOp::reducescatter ? values : p * values) << name(c);
              // A value off by one, or a rank's pieces in the wrong order, is caught.
              run.values[static_cast<std::size_t>(p - 1)][static_cast<std::size_t>(coll_piece_lo(c, 0, p - 1))] += 0.5f;
              EXPECT_EQ(collective_data_check(c, run).wrong, 1) << name(c);
              ++runs;
            }
  EXPECT_GT(runs, 150);
}

// The op bound the reference is held to (allreduce_reference_ops) is an upper bound of the
// ops the library builds, and a close one: the run itself refuses an op beyond it.
TEST(Collective, TheOpBoundIsCloseAbove) {
  const TopologySpec def = topo("default.yaml"), ring8 = topo("ring8.yaml");
  int runs = 0;
  double loosest = 0;
  for (int level = 0; level < 4; ++level)
    for (int algo = 0; algo < 5; ++algo)
      for (std::int64_t p : level == 3 ? std::vector<std::int64_t>{8, 16, 64} : std::vector<std::int64_t>{4, 8})
        for (int buffer = 0; buffer < 2; ++buffer)
          for (std::int64_t chunks : {1, 4}) {
            const AllreduceConfig c = config(level == 2 ? ring8 : def, static_cast<CollLevel>(level), static_cast<CollAlgo>(algo),
                                             p, 2 * 64 * p * chunks, static_cast<CollBuffer>(buffer), CollOp::allreduce, chunks);
            if (allreduce_check(c) != kArOk) continue;
            const std::int64_t ops = run_collective(c, false, 1).report.summary.ops, bound = allreduce_reference_ops(c);
            EXPECT_LE(ops, bound) << name(c);
            loosest = std::max(loosest, static_cast<double>(bound) / static_cast<double>(ops));
            ++runs;
          }
  EXPECT_GT(runs, 60);
  EXPECT_LT(loosest, 3.5) << "the bound refuses runs far smaller than --max-ops";
}

TEST(Collective, HierAcrossSips) {
  // Every PE of four SIPs of ring8 (256 ranks): inside cubes, across cubes, across SIPs, back.
  TopologySpec t = topo("ring8.yaml");
  t.sips = 4;
  for (int algo : {0, 2, 4})
    for (int op = 0; op < 2; ++op) {
      const AllreduceConfig c = config(t, CollLevel::hier, static_cast<CollAlgo>(algo), 256, 2 * 256, CollBuffer::sram,
                                       static_cast<CollOp>(op));
      ASSERT_EQ(allreduce_check(c), kArOk) << name(c);
      const CollectiveRun run = run_collective(c, true, 11);
      expect_sum(c, run);
      EXPECT_GT(run.report.summary.link_bytes[2], 0);
    }
}

TEST(Collective, HierPhases) {
  const TopologySpec def = topo("default.yaml");
  // 24 PEs: 3 whole cubes of 8; a reduce inside each cube, across the 3 cubes, and back.
  AllreduceConfig c = config(def, CollLevel::hier, CollAlgo::ring, 24, 4096);
  CollPhase ph[5];
  ASSERT_EQ(coll_hier_phases(c, ph), 3);
  EXPECT_EQ(ph[0].sub.level, 0);
  EXPECT_EQ(ph[0].sub.op, static_cast<std::int64_t>(CollOp::reduce));
  EXPECT_EQ(ph[1].sub.level, 1);
  EXPECT_EQ(ph[1].sub.ranks, 3);
  EXPECT_EQ(ph[1].sub.op, static_cast<std::int64_t>(CollOp::allreduce));
  EXPECT_EQ(ph[2].sub.op, static_cast<std::int64_t>(CollOp::bcast));
  EXPECT_EQ(coll_total_inboxes(c), 2);  // one for the cube's ring, one for the cubes' ring
  c.ranks = 20;  // not whole cubes
  EXPECT_EQ(allreduce_check(c), kArBadRanks);
  EXPECT_NE(allreduce_status_message(kArBadRanks, c).find("whole cubes of a SIP"), std::string::npos);
  c = config(def, CollLevel::hier, CollAlgo::hd, 24, 4096);  // 3 cubes: not a power of two
  EXPECT_EQ(allreduce_check(c), kArBadAlgo);
}

TEST(Collective, RootIsTheGridCentre) {
  const AllreduceConfig c = config(topo("default.yaml"), CollLevel::cube, CollAlgo::root, 8, 1024);
  EXPECT_EQ(coll_root(c), 6);  // (rows / 2, cols / 2) = (1, 2) on the 2x4 grid
}

TEST(Collective, DirectLaunchRingHasTheLibraryTimeline) {
  const TopologySpec def = topo("default.yaml"), ring8 = topo("ring8.yaml");
  for (int level = 0; level < 3; ++level)
    for (std::int64_t p : {2, 5, 8})
      for (std::int64_t chunks : {1, 2}) {
        const AllreduceConfig c = config(level == 2 ? ring8 : def, static_cast<CollLevel>(level), CollAlgo::ring, p,
                                         2 * 1000 * p, CollBuffer::sram, CollOp::allreduce, chunks);
        ASSERT_EQ(allreduce_check(c), kArOk) << name(c);
        const CollectiveRun lib = run_collective(c, true, 3);
        const CollectiveRun direct = run_ring_direct(c, true, 3);
        ASSERT_EQ(direct.report.status, engine::Status::ok) << direct.report.message;
        EXPECT_EQ(lib.report.summary.latency_ps, direct.report.summary.latency_ps) << name(c);
        EXPECT_EQ(lib.report.summary.link_bytes, direct.report.summary.link_bytes) << name(c);
        EXPECT_EQ(lib.report.summary.busy_ps, direct.report.summary.busy_ps) << name(c);
        EXPECT_EQ(lib.values, direct.values) << name(c);
        // Op for op: every copy hop and vector add on the same resource, at the same picoseconds.
        ASSERT_FALSE(lib.timeline.empty());
        EXPECT_EQ(lib.timeline, direct.timeline) << name(c);
      }
}

TEST(Collective, RingOfSipsMatchesTheAlphaBetaGammaModel) {
  TopologySpec t = topo("ring8.yaml");
  for (std::int64_t p : {2, 4, 8})
    for (std::int64_t bytes : {INT64_C(1) << 12, INT64_C(1) << 16, INT64_C(1) << 19}) {
      t.sips = p;  // the ranks are the whole ring: every step is one link
      const AllreduceConfig c = config(t, CollLevel::sip, CollAlgo::ring, p, bytes);
      ASSERT_EQ(allreduce_check(c), kArOk) << name(c);
      const CollectiveRun run = run_collective(c, false);
      const double ratio =
          static_cast<double>(run.report.summary.latency_ps) / static_cast<double>(collective_analytical_ps(c));
      EXPECT_NEAR(ratio, 1.0, 0.02) << name(c) << ": " << run.report.summary.latency_ps;
      // Each rank sends 2(p-1) pieces of bytes/p over one ring link each.
      EXPECT_EQ(run.report.summary.link_bytes[static_cast<std::size_t>(engine::LinkLevel::sip)], p * 2 * (p - 1) * (bytes / p));
    }
}

// The ring, hd and tree models see the ranks, not the grid they would fill: 4 cubes on a
// grid 3 wide are 4 ranks (the grid's 1 x 3 was once taken for them, and hd refused it).
TEST(Collective, AnalyticalModelCountsRanksNotTheirGrid) {
  TopologySpec t = topo("default.yaml");
  t.cube_rows = 2, t.cube_cols = 3;
  for (CollAlgo algo : {CollAlgo::ring, CollAlgo::hd, CollAlgo::tree})
    for (CollOp op : {CollOp::allreduce, CollOp::reduce}) {
      const AllreduceConfig c = config(t, CollLevel::cube, algo, 4, 4096, CollBuffer::hbm, op);
      ASSERT_EQ(allreduce_check(c), kArOk) << name(c);
      EXPECT_EQ(collective_analytical_ps(c),
                analytical::collective_ps(algo, op == CollOp::reduce, 1, 4, 4096,
                                          collective_step_costs(c)))
          << name(c);
    }
}

TEST(Collective, InvalidRequestsNameTheirReason) {
  const TopologySpec def = topo("default.yaml");
  AllreduceConfig c = config(def, CollLevel::cube, CollAlgo::hd, 6, 1 << 12);
  EXPECT_EQ(allreduce_check(c), kArBadAlgo);
  EXPECT_NE(allreduce_status_message(kArBadAlgo, c).find("power-of-two"), std::string::npos);
  EXPECT_THROW(run_collective(c, false), InputError);
  c = config(def, CollLevel::cube, CollAlgo::mesh2d, 6, 1 << 12);  // 6 ranks on rows of 4
  EXPECT_EQ(allreduce_check(c), kArBadAlgo);
  c = config(def, CollLevel::cube, CollAlgo::ring, 9, 1 << 12);
  EXPECT_EQ(allreduce_check(c), kArBadRanks);
  c = config(def, CollLevel::sip, CollAlgo::ring, 2, 1 << 12);  // the default machine has one SIP
  EXPECT_EQ(allreduce_check(c), kArBadRanks);
  c = config(def, CollLevel::pe, CollAlgo::ring, 8, 8 * 2 - 2);
  EXPECT_EQ(allreduce_check(c), kArBadSize);
  c = config(def, CollLevel::pe, CollAlgo::tree, 8, 1 << 20);  // data and 3 inboxes: 4 MiB > 2 MiB SRAM
  EXPECT_EQ(allreduce_check(c), kArSramOverflow);
  EXPECT_NE(allreduce_status_message(kArSramOverflow, c).find("4194304 bytes of SRAM"), std::string::npos);
  c = config(def, CollLevel::pe, CollAlgo::tree, 8, INT64_C(1) << 32, CollBuffer::hbm);
  EXPECT_EQ(allreduce_check(c), kArHbmOverflow);
  c = config(def, CollLevel::cube, CollAlgo::ring, 8, 1 << 20, CollBuffer::sram, CollOp::allreduce, 64);
  EXPECT_EQ(allreduce_check(c), kArTooLarge);
}

}  // namespace
}  // namespace kb
