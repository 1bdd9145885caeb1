// The allreduce model's op count (src/device/models/collective/allreduce_model.h), which decides
// whether a config fits the model (kArTooLarge): the transfers in closed form equal what
// coll_schedule emits, the bound from them is never below the count (and is the count at the
// pe level), and the check's status is the same whether it counts or bounds. And the HBM
// ports a collective uses: where the model takes every rank to use both without walking the
// transfers, the transfers do.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

#include "../parity/random_allreduce.h"
#include "device/models/collective/allreduce_model.h"

namespace kb {
namespace {

// coll_schedule's transfers, counted one by one.
struct Tally {
  std::int64_t all = 0, adds = 0;
  void xfer(std::int64_t, const CollXfer& x) {
    ++all;
    adds += x.reduce;
  }
  void flush() {}
};

std::int64_t every_port_levels = 0;

// One single-level collective (a config, or a phase of hier): the closed forms against the
// schedule. Returns whether its bound passed kCollMaxOps.
bool expect_counts(const AllreduceConfig& c) {
  Tally t;
  coll_schedule(c, t);
  std::int64_t all = -1, adds = -1;
  ar_detail::count_transfers(c, &all, &adds);
  EXPECT_EQ(all, t.all) << testing::describe(c);
  EXPECT_EQ(adds, t.adds) << testing::describe(c);
  const std::int64_t counted = ar_detail::count_ops_by_schedule(c), bound = ar_detail::count_ops_bound(c);
  if (c.level != static_cast<std::int64_t>(CollLevel::hier)) {  // a hier launch as one level: the check counts exactly
    EXPECT_GE(bound, counted) << testing::describe(c);
  }
  if (c.level == static_cast<std::int64_t>(CollLevel::pe)) {
    EXPECT_EQ(bound, counted) << testing::describe(c);
  }
  EXPECT_EQ(ar_detail::count_ops(c), counted) << testing::describe(c);
  if (ar_detail::Sim::every_port(c)) {
    std::int8_t port[2 * kCollMaxRanks] = {};
    ar_detail::Sim::Ports marks{port};
    coll_schedule(c, marks);
    for (std::int64_t i = 0; i < 2 * c.ranks; ++i) EXPECT_EQ(port[i], 1) << testing::describe(c) << ": port " << i;
    ++every_port_levels;
  }
  return bound > kCollMaxOps;
}

// Wide random configs, valid and refused, each with every algorithm, op and buffer kind the
// fields check lets through; hier through each phase.
TEST(AllreduceOps, ClosedFormsEqualTheScheduleOnRandomConfigs) {
  every_port_levels = 0;
  std::int64_t levels = 0, past = 0, too_large = 0;
  std::int64_t per_level[kCollLevels] = {};
  for (std::uint64_t seed = 1; levels < 100000; ++seed) {
    ASSERT_LT(seed, 100u);
    std::vector<AllreduceConfig> rejected;
    rejected.reserve(2000);
    std::vector<AllreduceConfig> all = testing::random_wide_allreduce_configs(2000, 20261205 + seed, &rejected);
    all.insert(all.end(), rejected.begin(), rejected.end());
    for (const AllreduceConfig& base : all) {
      for (std::int64_t algo = 0; algo < kCollAlgos; ++algo)
        for (std::int64_t op = 0; op < kCollOps; ++op)
          for (std::int64_t buffer = 0; buffer < kCollBuffers; ++buffer) {
            AllreduceConfig c = base;
            c.algo = algo, c.op = op, c.buffer = buffer;
            if (coll_check(c) != kArOk) continue;
            ++per_level[c.level];
            // The check's status bounds where it may, and counts where it asks for the count.
            std::int64_t ops = -1;
            const std::int32_t counted = allreduce_check(c, &ops);
            ASSERT_EQ(allreduce_check(c), counted) << testing::describe(c);
            too_large += counted == kArTooLarge;
            if (coll_one_level(c)) {  // hier's allgather, reducescatter and alltoall too
              past += expect_counts(c);
              ++levels;
              continue;
            }
            CollPhase ph;
            const int n = coll_hier_phases(c, nullptr, nullptr, nullptr, kCollMaxPhases);
            for (int k = 0; k < n; ++k) {
              coll_hier_phases(c, &ph, nullptr, nullptr, k);
              past += expect_counts(ph.sub);
              ++levels;
            }
            if (::testing::Test::HasFailure()) return;
          }
    }
  }
  std::printf("op counts: %lld levels (configs: pe %lld, cube %lld, sip %lld, hier %lld); %lld bounds past %lld ops, "
              "%lld configs too large; %lld levels with every port used\n",
              static_cast<long long>(levels), static_cast<long long>(per_level[0]), static_cast<long long>(per_level[1]),
              static_cast<long long>(per_level[2]), static_cast<long long>(per_level[3]), static_cast<long long>(past),
              static_cast<long long>(kCollMaxOps), static_cast<long long>(too_large),
              static_cast<long long>(every_port_levels));
  for (std::int64_t l = 0; l < kCollLevels; ++l) EXPECT_GT(per_level[l], 1000) << l;
  EXPECT_GT(past, 1000);
  EXPECT_GT(too_large, 1000);
  EXPECT_GT(every_port_levels, 10000);
}

// The walks' table of where each piece begins (piece_table, remainders carried) against
// coll_piece_lo (its floors divided out), over sizes that leave pieces of unequal lengths.
TEST(AllreduceOps, PieceTableEqualsThePiecesBounds) {
  std::mt19937_64 rng(20261205);
  std::vector<std::int64_t> table(ar_detail::ArFullCaps::kPieceTable);
  std::int64_t compared = 0;
  for (int n = 0; n < 100000; ++n) {
    AllreduceConfig c{};
    c.ranks = 1 + static_cast<std::int64_t>(rng() % 64);
    c.chunks = 1 + static_cast<std::int64_t>(rng() % 8);
    const std::int64_t least = c.ranks * c.chunks;  // a value per piece at least
    c.bytes = 2 * (least + static_cast<std::int64_t>(rng() % (n % 2 ? 64 : (std::int64_t{1} << 40))));
    if (!ar_detail::piece_table(c, table.data(), static_cast<std::int64_t>(table.size()))) continue;
    for (std::int64_t ch = 0; ch < c.chunks; ++ch)
      for (std::int64_t k = 0; k <= c.ranks; ++k, ++compared)
        ASSERT_EQ(table[static_cast<std::size_t>(ch * (c.ranks + 1) + k)], coll_piece_lo(c, ch, k))
            << "bytes " << c.bytes << ", chunks " << c.chunks << ", ranks " << c.ranks << ": chunk " << ch << ", piece " << k;
  }
  EXPECT_GT(compared, 1000000);
}

}  // namespace
}  // namespace kb
