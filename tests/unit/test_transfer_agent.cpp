// The transfer agent (src/device/sim/transfer.h, ADR 0033): the ops it hands a policy, in
// which order, at which busy time, and how a paused transfer resumes; the chain rule; a copy
// alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "device/sim/transfer.h"
#include "host/topology/load.h"

namespace kb {
namespace {

HwConfig hw() { return load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml").hw(); }

struct Seen {
  xfer::Role role;
  std::int32_t hop;
  bool last;
  ps_t busy;
  bool operator==(const Seen& o) const { return role == o.role && hop == o.hop && last == o.last && busy == o.busy; }
};

// Logs every op; pauses after each with `pause`, fails at op `fail_at`.
struct Log {
  explicit Log(std::int64_t bytes) : nb(bytes) {}
  std::int64_t nb;
  bool pause = false;
  int fail_at = -1;
  std::vector<Seen> seen;
  ps_t own_ps(const xfer::Step& s) const { return s.role == xfer::Role::read ? 1000 : 2000; }
  ps_t own_ps(const xfer::Step&, const net::Hop& h) const { return xfer::hop_ps(nb, h.bandwidth_gbps); }
  xfer::Go answer() const {
    if (static_cast<int>(seen.size()) - 1 == fail_at) return xfer::Go::fail;
    return pause ? xfer::Go::pause : xfer::Go::on;
  }
  xfer::Go serve(const xfer::Step& s, ps_t busy) {
    seen.push_back(Seen{s.role, s.hop, s.last, busy});
    return answer();
  }
  xfer::Go serve(const xfer::Step& s, const net::Hop&, ps_t busy) {
    seen.push_back(Seen{s.role, s.hop, s.last, busy});
    return answer();
  }
};

// From PE 0 of cube 0 to PE 0 of the far corner cube: several mesh hops.
struct Route {
  HwConfig h = hw();
  net::Node a{0, 0, 0}, b{0, 7, 0};
  std::int32_t hops() const { return static_cast<std::int32_t>(net::hop_count(h, a, b)); }
  xfer::WalkedRoute walk() const { return xfer::WalkedRoute{h, a, b}; }
};

TEST(TransferAgent, HandsTheOpsInProgramOrderAtTheChainOrTheirOwnTime) {
  const Route r;
  const std::int32_t n = r.hops();
  ASSERT_GE(n, 3);
  Log hbm{1 << 20};
  ASSERT_EQ(xfer::send(hbm, r.walk(), n, true, 777), xfer::Go::on);
  std::vector<Seen> want{{xfer::Role::read, -1, false, 777}};
  for (std::int32_t k = 0; k < n; ++k) want.push_back(Seen{xfer::Role::hop, k, false, 777});
  want.push_back(Seen{xfer::Role::write, n, true, 777});
  EXPECT_EQ(hbm.seen, want);

  Log sram{1 << 20};  // no HBM end: the hops alone, each at its own time, the last one landing
  ASSERT_EQ(xfer::send(sram, r.walk(), n, false, xfer::kOwn), xfer::Go::on);
  ASSERT_EQ(sram.seen.size(), static_cast<std::size_t>(n));
  for (std::int32_t k = 0; k < n; ++k)
    EXPECT_EQ(sram.seen[static_cast<std::size_t>(k)],
              (Seen{xfer::Role::hop, k, k + 1 == n, xfer::hop_ps(1 << 20, r.h.cube_link.bandwidth_gbps)}));

  Log own{4096};  // HBM ends at their own times: a policy that streams the chain itself
  ASSERT_EQ(xfer::send(own, r.walk(), n, true, xfer::kOwn), xfer::Go::on);
  EXPECT_EQ(own.seen.front().busy, 1000);
  EXPECT_EQ(own.seen.back().busy, 2000);
}

TEST(TransferAgent, APausedTransferResumesAtItsNextOpAndAFailStopsIt) {
  const Route r;
  const std::int32_t n = r.hops();
  for (const bool hbm : {false, true}) {
    Log whole{1 << 16}, steps{1 << 16};
    ASSERT_EQ(xfer::send(whole, r.walk(), n, hbm, hbm ? 5 : xfer::kOwn), xfer::Go::on);
    steps.pause = true;
    for (std::int32_t from = 0; from < xfer::op_count(n, hbm); ++from) {
      ASSERT_EQ(xfer::send(steps, r.walk(), n, hbm, hbm ? 5 : xfer::kOwn, from), xfer::Go::pause);
      ASSERT_EQ(steps.seen.size(), static_cast<std::size_t>(from + 1));
    }
    EXPECT_EQ(steps.seen, whole.seen) << (hbm ? "hbm" : "sram");
    Log failing{1 << 16};
    failing.fail_at = 1;
    EXPECT_EQ(xfer::send(failing, r.walk(), n, hbm, hbm ? 5 : xfer::kOwn), xfer::Go::fail);
    EXPECT_EQ(failing.seen.size(), 2u);
  }
}

TEST(TransferAgent, AChainHoldsEveryOpForTheSlowestOne) {
  const HwConfig h = hw();
  const std::int64_t nb = 3 << 20;
  const ps_t hops[3] = {10, 700000, 20};
  const ps_t chain = xfer::chain_ps(h, nb, 2, 6, [&](auto&& visit) {
    for (const ps_t t : hops) visit(t);
  });
  const ps_t want = std::max({xfer::hbm_ps(h, nb, 2), xfer::hbm_ps(h, nb, 6), hops[1]});
  EXPECT_EQ(chain, want);
  ps_t busy[4] = {3, 9, 4, 1};
  xfer::stream(busy, 4);
  for (const ps_t b : busy) EXPECT_EQ(b, 9);
  // The add chain: both operands read, the add, the sum written, at one share.
  EXPECT_EQ(xfer::add_chain_ps(h, 1000, 3),
            std::max({xfer::hbm_ps(h, 4000, 3), xfer::add_ps(h, 1000), xfer::hbm_ps(h, 2000, 3)}));
}

// A copy alone lands its ops' latencies after it starts plus its chain: what serving each of
// its ops at once on idle resources gives (each hop ready once the previous one's head has
// crossed, the last op ending its busy time and latency after it starts).
TEST(TransferAgent, ACopyAloneIsItsLatenciesPlusItsChain) {
  const Route r;
  const std::int64_t nb = 1 << 22;
  std::int64_t hops = 0;
  const ps_t alone = xfer::alone_ps(r.h, r.a, r.b, nb, 1, 4, [&](const net::Hop&) { ++hops; });
  EXPECT_EQ(hops, r.hops());
  ps_t chain = 0;
  net::for_each_hop(r.h, r.a, r.b, [&](const net::Hop& hop) { chain = std::max(chain, xfer::hop_ps(nb, hop.bandwidth_gbps)); });
  chain = std::max({chain, xfer::hbm_ps(r.h, nb, 1), xfer::hbm_ps(r.h, nb, 4)});
  const ps_t L = r.h.hbm_latency_ns * kPsPerNs;
  ps_t ready = 0, end = 0;
  ready += L;  // the read's head
  net::for_each_hop(r.h, r.a, r.b, [&](const net::Hop& hop) { ready += hop.latency_ns * kPsPerNs; });
  end = ready + chain + L;  // the write
  EXPECT_EQ(alone, end);
}

}  // namespace
}  // namespace kb
