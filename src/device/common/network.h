// The network, once for both engines: link ids and routes between PE ranks. The
// reference runtime creates one resource per link id and issues a copy as one op per hop
// of its route; batched models walk the same routes. Arbitration (who goes first on a
// shared link) is each engine's own; the rules are docs/adr/0007-communication-timing.md.
//
// Links, each one direction:
//   ipcq_out / ipcq_in  a PE's copy-queue ports inside its cube: a copy between two PEs of
//                       a cube leaves through the sender's out-port and enters through the
//                       receiver's in-port (so fan-out and incast both serialise);
//   cube_link           between neighbouring cubes of a SIP's mesh, per direction;
//   sip_link            ring: to the next or previous SIP; fully connected: per ordered
//                       pair of SIPs; switch: each SIP's uplink to and downlink from it.
// Routes: inside a cube, out-port then in-port; between cubes of a SIP, dimension order
// over the mesh (columns first, then rows); between SIPs, the SIP links (ring: the shorter
// way round, ties forward), entering and leaving a package at any cube directly.
#pragma once

#include <cstdint>

#include "hw.h"
#include "kb_hd.h"
#include "units.h"

namespace kb::net {

struct Node {
  std::int64_t sip, cube, pe;  // cube: index in its SIP's grid (row-major); pe: in its cube
};

enum class LinkKind : std::int32_t { ipcq_out = 0, ipcq_in, cube_link, sip_link };
constexpr int kLinkKinds = 4;

// Mesh directions out of a cube.
enum MeshDir : std::int64_t { kEast = 0, kWest = 1, kSouth = 2, kNorth = 3 };

struct Hop {
  std::int64_t link;  // dense id in 0..link_count(hw)-1
  LinkKind kind;
  std::int64_t bandwidth_gbps, latency_ns;
};

// Layout of the dense ids: ipcq out-ports, ipcq in-ports, mesh links, SIP links.
KB_HD inline std::int64_t ipcq_out_base(const HwConfig&) { return 0; }
KB_HD inline std::int64_t ipcq_in_base(const HwConfig& h) { return h.total_pes(); }
KB_HD inline std::int64_t cube_link_base(const HwConfig& h) { return 2 * h.total_pes(); }
KB_HD inline std::int64_t sip_link_base(const HwConfig& h) { return cube_link_base(h) + 4 * h.total_cubes(); }
KB_HD inline std::int64_t sip_link_count(const HwConfig& h) {
  switch (h.sip_topology) {
    case SipTopology::ring: return 2 * h.sips;
    case SipTopology::fully_connected: return h.sips * (h.sips - 1);  // ordered pairs a != b
    default: return 2 * h.sips;  // switch: uplink s, downlink sips + s
  }
}
KB_HD inline std::int64_t link_count(const HwConfig& h) { return sip_link_base(h) + sip_link_count(h); }

KB_HD inline std::int64_t global_pe(const HwConfig& h, const Node& n) {
  return (n.sip * h.cubes_per_sip() + n.cube) * h.pes_per_cube() + n.pe;
}
KB_HD inline std::int64_t mesh_link(const HwConfig& h, std::int64_t sip, std::int64_t cube, MeshDir d) {
  return cube_link_base(h) + (sip * h.cubes_per_sip() + cube) * 4 + d;
}

// A cube's place in its SIP's grid.
struct GridPos {
  std::int64_t row, col;
};
KB_HD inline GridPos cube_pos(const HwConfig& h, std::int64_t cube) {
  const std::int64_t row = div_fast(cube, h.cube_cols);
  return GridPos{row, cube - row * h.cube_cols};
}
// Steps from SIP `from` forward round a ring of `n` to SIP `to` (both in [0, n)).
KB_HD inline std::int64_t ring_ahead(std::int64_t from, std::int64_t to, std::int64_t n) {
  return to >= from ? to - from : to - from + n;
}

// Calls visit(const Hop&) for each hop of the route from `a` to `b` (a != b, both nodes of
// the machine: a SIP ring's walk relies on their SIPs being below h.sips), in order.
template <class Visit>
KB_HD void for_each_hop(const HwConfig& h, const Node& a, const Node& b, Visit&& visit) {
  if (a.sip == b.sip && a.cube == b.cube) {
    visit(Hop{ipcq_out_base(h) + global_pe(h, a), LinkKind::ipcq_out, h.ipcq.bandwidth_gbps, 0});
    visit(Hop{ipcq_in_base(h) + global_pe(h, b), LinkKind::ipcq_in, h.ipcq.bandwidth_gbps, h.ipcq.latency_ns});
    return;
  }
  if (a.sip == b.sip) {
    const GridPos from = cube_pos(h, a.cube), to = cube_pos(h, b.cube);
    std::int64_t r = from.row, c = from.col;
    const std::int64_t tr = to.row, tc = to.col;
    while (r != tr || c != tc) {
      MeshDir d;
      if (c != tc) d = tc > c ? kEast : kWest;
      else d = tr > r ? kSouth : kNorth;
      visit(Hop{mesh_link(h, a.sip, r * h.cube_cols + c, d), LinkKind::cube_link, h.cube_link.bandwidth_gbps,
                h.cube_link.latency_ns});
      if (d == kEast) ++c;
      else if (d == kWest) --c;
      else if (d == kSouth) ++r;
      else --r;
    }
    return;
  }
  const std::int64_t base = sip_link_base(h), n = h.sips;
  auto sip_hop = [&](std::int64_t id) {
    visit(Hop{base + id, LinkKind::sip_link, h.sip_link.bandwidth_gbps, h.sip_link.latency_ns});
  };
  if (h.sip_topology == SipTopology::fully_connected) {
    sip_hop(a.sip * (n - 1) + (b.sip < a.sip ? b.sip : b.sip - 1));
  } else if (h.sip_topology == SipTopology::switch_) {
    sip_hop(a.sip);      // uplink
    sip_hop(n + b.sip);  // downlink
  } else {
    const std::int64_t fwd = ring_ahead(a.sip, b.sip, n);
    const bool forward = fwd <= n - fwd;  // the shorter way round; ties go forward
    for (std::int64_t s = a.sip; s != b.sip;) {
      sip_hop(2 * s + (forward ? 0 : 1));
      s = forward ? (s + 1 == n ? 0 : s + 1) : (s == 0 ? n - 1 : s - 1);
    }
  }
}

// The number of hops of a route (for sizing, and for closed forms in batched models): what
// for_each_hop visits, counted without walking it (test_network checks the two agree).
KB_HD inline std::int64_t hop_count(const HwConfig& h, const Node& a, const Node& b) {
  if (a.sip == b.sip && a.cube == b.cube) return 2;  // out of the sender's queue, into the receiver's
  if (a.sip == b.sip) {  // dimension-ordered on the mesh: one hop per row and per column apart
    const GridPos p = cube_pos(h, a.cube), q = cube_pos(h, b.cube);
    return (q.row > p.row ? q.row - p.row : p.row - q.row) + (q.col > p.col ? q.col - p.col : p.col - q.col);
  }
  if (h.sip_topology == SipTopology::fully_connected) return 1;
  if (h.sip_topology == SipTopology::switch_) return 2;
  const std::int64_t fwd = ring_ahead(a.sip, b.sip, h.sips);
  return fwd <= h.sips - fwd ? fwd : h.sips - fwd;
}

}  // namespace kb::net
