// The ring allreduce reference program: every rank ends with the elementwise sum, and on a
// ring of SIPs with SRAM buffers and one chunk per rank the simulated latency is the
// alpha-beta-gamma model's, within 2%.
#include <gtest/gtest.h>

#include <cmath>

#include "host/analytical/collectives.h"
#include "host/common/error.h"
#include "host/kernels/allreduce.h"
#include "host/runtime/numeric.h"
#include "host/topology/load.h"

namespace kb {
namespace {

TopologySpec ring8() { return load_topology(std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml"); }

TEST(RingAllreduce, EveryRankEndsWithTheSum) {
  for (std::int64_t p : {2, 3, 8}) {
    const std::int64_t values = 64 * p;
    std::vector<std::vector<float>> in(static_cast<std::size_t>(p));
    for (std::int64_t r = 0; r < p; ++r)
      for (std::int64_t i = 0; i < values; ++i)
        in[static_cast<std::size_t>(r)].push_back(round_to(DType::f16, uniform_pm1(static_cast<std::uint64_t>(r + 1), static_cast<std::uint64_t>(i))));
    const AllreduceResult res = run_ring_allreduce(ring8(), RingAllreduce{p, 2 * values}, in);
    ASSERT_EQ(res.report.status, engine::Status::ok) << res.report.message;
    for (std::int64_t i = 0; i < values; ++i) {
      double sum = 0;
      for (std::int64_t r = 0; r < p; ++r) sum += in[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
      for (std::int64_t r = 0; r < p; ++r) {
        const float got = res.values[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
        // p - 1 additions, each rounded to f16: within p - 1 f16 units of the float64 sum.
        EXPECT_NEAR(got, sum, (p - 1) * std::ldexp(1.0, -10) * std::max(1.0, std::fabs(sum))) << "p " << p << " rank " << r << " i " << i;
        EXPECT_EQ(got, res.values[0][static_cast<std::size_t>(i)]);  // every rank the same bits
      }
    }
  }
}

TEST(RingAllreduce, MatchesTheAlphaBetaGammaModel) {
  TopologySpec t = ring8();
  const double a = static_cast<double>(t.sip_link.latency_ns) * 1000.0;
  const double b = 1000.0 / static_cast<double>(t.sip_link.bandwidth_gbps);
  // vector add: lanes values (2 bytes each) per cycle
  const double c = 1e6 / static_cast<double>(t.clock_mhz) / static_cast<double>(t.vector_lanes) / 2.0;
  for (std::int64_t p : {2, 4, 8})
    for (std::int64_t bytes : {INT64_C(1) << 12, INT64_C(1) << 16, INT64_C(1) << 20}) {
      t.sips = p;  // the ranks are the whole ring: every step is one link
      const AllreduceResult res = run_ring_allreduce(t, RingAllreduce{p, bytes});
      ASSERT_EQ(res.report.status, engine::Status::ok) << res.report.message;
      const auto model = analytical::allreduce_ps(analytical::AllreduceAlgo::ring, p, bytes, {a, b, c});
      const double ratio = static_cast<double>(res.report.summary.latency_ps) / static_cast<double>(model);
      EXPECT_NEAR(ratio, 1.0, 0.02) << "p " << p << " bytes " << bytes << ": " << res.report.summary.latency_ps << " vs " << model;
      // Each rank sends 2(p-1) chunks of bytes/p over one ring link each.
      EXPECT_EQ(res.report.summary.link_bytes[static_cast<std::size_t>(engine::LinkLevel::sip)], p * 2 * (p - 1) * (bytes / p));
    }
  t.sips = 8;
  EXPECT_THROW(run_ring_allreduce(t, RingAllreduce{3, 100}), InputError);  // 50 values in 3 chunks
  EXPECT_THROW(run_ring_allreduce(t, RingAllreduce{9, 1 << 12}), InputError);
}

}  // namespace
}  // namespace kb
