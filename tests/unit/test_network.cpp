// Routes and link ids of the one network model (src/device/common/network.h), as the
// runtime names them.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "host/runtime/links.h"
#include "host/topology/load.h"

namespace kb {
namespace {

TopologySpec machine(SipTopology sips, std::int64_t nsips = 4) {
  TopologySpec t = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/tiny.yaml");
  t.sips = nsips;
  t.sip_topology = sips;
  t.cube_rows = 2;
  t.cube_cols = 3;
  return t;
}

std::vector<std::string> route(const HwConfig& h, net::Node a, net::Node b) {
  std::vector<std::string> names;
  net::for_each_hop(h, a, b, [&](const net::Hop& hop) { names.push_back(link_info(h, hop.link).name); });
  return names;
}

using V = std::vector<std::string>;

// The node of global PE g.
net::Node node_of(const TopologySpec& t, std::int64_t g) {
  return net::Node{g / t.pes_per_cube() / t.cubes_per_sip(), g / t.pes_per_cube() % t.cubes_per_sip(), g % t.pes_per_cube()};
}

TEST(Network, RoutesByLevel) {
  const TopologySpec ring = machine(SipTopology::ring);
  EXPECT_EQ(route(ring, {0, 1, 0}, {0, 1, 1}), (V{"sip0.cube1.pe0.ipcq_out", "sip0.cube1.pe1.ipcq_in"}));
  // Dimension order: columns first, then rows.
  EXPECT_EQ(route(ring, {0, 0, 0}, {0, 5, 1}), (V{"sip0.cube0->cube1", "sip0.cube1->cube2", "sip0.cube2->cube5"}));
  EXPECT_EQ(route(ring, {1, 5, 0}, {1, 0, 0}), (V{"sip1.cube5->cube4", "sip1.cube4->cube3", "sip1.cube3->cube0"}));
  // Ring: the shorter way round, ties forward.
  EXPECT_EQ(route(ring, {0, 0, 0}, {2, 0, 0}), (V{"sip0->sip1", "sip1->sip2"}));
  EXPECT_EQ(route(ring, {0, 0, 0}, {3, 4, 1}), (V{"sip0->sip3"}));
  EXPECT_EQ(route(ring, {3, 0, 0}, {0, 0, 0}), (V{"sip3->sip0"}));
  EXPECT_EQ(route(machine(SipTopology::switch_), {1, 0, 0}, {3, 2, 0}), (V{"sip1->switch", "switch->sip3"}));
  EXPECT_EQ(route(machine(SipTopology::fully_connected), {1, 0, 0}, {3, 2, 0}), (V{"sip1->sip3"}));
  EXPECT_EQ(net::hop_count(ring, {0, 0, 0}, {2, 0, 0}), 2);
}

// Every link of every kind has its own id and name; every route uses ids in range with the
// bandwidth and latency of its level.
TEST(Network, LinkIdsAreDenseAndDistinct) {
  for (SipTopology k : {SipTopology::ring, SipTopology::fully_connected, SipTopology::switch_})
  for (std::int64_t sips : {2, 3}) {
    const TopologySpec t = machine(k, sips);
    const std::int64_t n = net::link_count(t);
    std::set<std::string> names;
    for (std::int64_t id = 0; id < n; ++id) EXPECT_TRUE(names.insert(link_info(t, id).name).second) << id;
    std::set<std::int64_t> used;
    for (std::int64_t a = 0; a < t.total_pes(); ++a)
      for (std::int64_t b = 0; b < t.total_pes(); ++b) {
        if (a == b) continue;
        net::for_each_hop(t, node_of(t, a), node_of(t, b), [&](const net::Hop& h) {
          ASSERT_GE(h.link, 0);
          ASSERT_LT(h.link, n);
          used.insert(h.link);
          const LinkSpec& spec = h.kind == net::LinkKind::cube_link  ? t.cube_link
                                 : h.kind == net::LinkKind::sip_link ? t.sip_link
                                                                     : t.ipcq;
          EXPECT_EQ(h.bandwidth_gbps, spec.bandwidth_gbps);
        });
      }
    // Every link some route uses; mesh edges out of the grid are never used, nor, on a ring
    // of two, the backward links (both ways are one hop; ties go forward).
    const std::int64_t mesh_edges = 2 * (t.cube_rows * (t.cube_cols - 1) + t.cube_cols * (t.cube_rows - 1)) * t.sips;
    const std::int64_t unused_sip = k == SipTopology::ring && sips == 2 ? 2 : 0;
    EXPECT_EQ(static_cast<std::int64_t>(used.size()), 2 * t.total_pes() + mesh_edges + net::sip_link_count(t) - unused_sip);
  }
}

// hop_count is the number of hops for_each_hop visits, on every kind of SIP topology, on
// grids and rings of several shapes (odd and even rings: ties go forward), for every pair.
TEST(Network, HopCountIsTheRoutesLength) {
  std::int64_t pairs = 0;
  for (SipTopology k : {SipTopology::ring, SipTopology::fully_connected, SipTopology::switch_})
    for (std::int64_t sips : {2, 3, 5, 8})
      for (std::int64_t rows : {1, 2, 3})
        for (std::int64_t cols : {1, 4}) {
          TopologySpec t = machine(k, sips);
          t.cube_rows = rows, t.cube_cols = cols;
          for (std::int64_t a = 0; a < t.total_pes(); ++a)
            for (std::int64_t b = 0; b < t.total_pes(); ++b) {
              if (a == b) continue;
              std::int64_t walked = 0;
              net::for_each_hop(t, node_of(t, a), node_of(t, b), [&](const net::Hop&) { ++walked; });
              ASSERT_EQ(net::hop_count(t, node_of(t, a), node_of(t, b)), walked) << a << " -> " << b << " on " << sips << " SIPs";
              ++pairs;
            }
        }
  EXPECT_GT(pairs, 10000);
}

}  // namespace
}  // namespace kb
