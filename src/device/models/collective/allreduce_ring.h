// A closed form of the allreduce model (allreduce_model.h) on the domain where the device
// simulator could make no choice: the ring allreduce at one level (pe, cube or sip), on
// either buffer kind. docs/model.md section 11.9 proves it equal to the simulation there
// whenever the claims on every arbitrated resource (each link, used by one sender only, and
// with HBM buffers each rank's HBM write port, used by the send into it and by its own adds)
// become ready in the walk's order, strictly later one after another (or, for an SRAM
// sender's first hop, together at time 0, before anything ran): each arbitrated resource then
// serves first in, first out, and every other resource is a queue in program order. The
// schedule is then one walk over the transfers: no ops, edges or events. The walk checks that
// order as it goes and gives up (the simulator then runs) wherever it does not hold, or a time
// would pass the int64 guard. Pure KB_HD code: fixed arrays, no allocation.
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/network.h"
#include "../../common/units.h"
#include "../../sim/arbitration.h"
#include "../../sim/transfer.h"
#include "collective.h"
#include "../vector.h"

namespace kb {
namespace ar_detail {

struct AllreduceFigures {
  ps_t latency_ps;
  std::int64_t link_bytes_pe, link_bytes_cube, link_bytes_sip;
  std::int64_t copies_pe, copies_cube, copies_sip;
  ps_t vector_busy_ps;
  std::int64_t transfers;
  std::int64_t vector_ops, sram_read_bytes, sram_write_bytes;
  std::int64_t hbm_read_bytes, hbm_write_bytes;
};

// How much the allreduce model's scratch holds (allreduce_model.h, ar_detail::SimT): ranks of a
// level, pieces (ranks x chunks x ranks), the ring walk's hops, the general walk's links,
// routes and route hops (its slots: a power of two above its links), pieces whose first value
// it tabulates, and ranks of a launch (hier: its PEs). The full scratch holds any config
// allreduce_check accepts and builds ops for the simulator where no walk can take a level.
// The small one has no simulator and fits 16 KiB: a config or level beyond it is deferred
// (kStatusDeferred), to be evaluated again with the full scratch (docs/adr/0023-two-stage-evaluation.md).
// The nested one is smaller still, for a model that calls this one in its own first stage.
struct ArFullCaps {
  static constexpr std::int32_t kOps = static_cast<std::int32_t>(kCollMaxOps);  // the simulator's
  static constexpr std::int32_t kRanks = static_cast<std::int32_t>(kCollMaxRanks);
  static constexpr std::int32_t kPieces = static_cast<std::int32_t>(kCollMaxPieces);
  static constexpr std::int32_t kRingHops = 256;
  static constexpr std::int32_t kSlots = 512, kLinks = 384;
  static constexpr std::int32_t kRoutes = kOps;
  static constexpr std::int32_t kPool = kOps;
  static constexpr std::int32_t kPieceTable = 1024;
  static constexpr std::int32_t kHierRanks = static_cast<std::int32_t>(kCollMaxHierRanks);
  static constexpr std::int32_t kPending = 2 * kRanks;  // the general walk's pending writes (allreduce_walk.h)
  static constexpr bool kEvents = true;
};
// The host's, for a level of channels beyond the full state (coll_max_ops): about 4 times
// its size, allocated once per thread; the device defers such a config to the host.
struct ArBigCaps : ArFullCaps {
  static constexpr std::int32_t kOps = static_cast<std::int32_t>(kCollMaxChannelOps);
  static constexpr std::int32_t kRoutes = kOps;
  static constexpr std::int32_t kPool = kOps;
};
struct ArSmallCaps {
  static constexpr std::int32_t kOps = 1;  // no simulator
  static constexpr std::int32_t kRanks = 16;
  static constexpr std::int32_t kPieces = 256;
  static constexpr std::int32_t kRingHops = 48;
  static constexpr std::int32_t kSlots = 64, kLinks = 36;
  static constexpr std::int32_t kRoutes = 64;
  static constexpr std::int32_t kPool = 128;
  static constexpr std::int32_t kPieceTable = 64;
  static constexpr std::int32_t kHierRanks = 256;
  static constexpr std::int32_t kPending = 8;
  static constexpr bool kEvents = false;
};
// Smaller still: the allreduce nested in another model's first stage (llm_model.h), whose own
// state shares the 16 KiB. Up to 8 ranks a level.
struct ArNestedCaps {
  static constexpr std::int32_t kOps = 1;  // no simulator
  static constexpr std::int32_t kRanks = 8;
  static constexpr std::int32_t kPieces = 64;
  static constexpr std::int32_t kRingHops = 24;
  static constexpr std::int32_t kSlots = 32, kLinks = 24;
  static constexpr std::int32_t kRoutes = 32;
  static constexpr std::int32_t kPool = 64;
  static constexpr std::int32_t kPieceTable = 32;
  static constexpr std::int32_t kHierRanks = 64;
  static constexpr std::int32_t kPending = 0;  // no second try: the nested state has no room for it
  static constexpr bool kEvents = false;
};

// The scratch of the walk: when each piece (rank, chunk, piece) was last written (-1: never),
// each rank's vector engine is free, and each hop of each rank's route (its link's figures,
// when it is free, and the last send's ready time on it); with HBM buffers, when each rank's
// DMA queue and HBM write port are free, and the last claim's ready time on that port.
template <class Caps>
struct RingWalkT {
  static constexpr std::int32_t kMaxHops = Caps::kRingHops;  // over every rank's route; more: the simulator runs
  static constexpr std::int32_t kRanks = Caps::kRanks;
  struct Hop {
    std::int64_t link;  // its net link id (tests check that no two hops share one)
    net::LinkKind kind;
    std::int64_t bandwidth_gbps;
    ps_t latency, free, last_ready;
    bool last_unblocked;  // the last send on it waited for nothing (ready at 0 before anything ran)
    std::int64_t memo_bytes;  // the last transfer's size over it, and its busy time
    ps_t memo_busy;
    KB_HD ps_t busy(std::int64_t nb) {
      if (nb != memo_bytes) memo_bytes = nb, memo_busy = transfer_ps(nb, bandwidth_gbps);
      return memo_busy;
    }
  };
  // Per rank, the last send's and the last add's costs, by their size (pieces mostly have one
  // size): a send's chain (HBM), an add's busy time and its chain (HBM).
  std::int64_t send_bytes[kRanks], add_values[kRanks];
  ps_t send_chain[kRanks], add_busy[kRanks], add_chain[kRanks];
  ps_t written[Caps::kPieces];
  ps_t vec_free[kRanks], landed[kRanks];
  ps_t mark_done[kRanks];  // per rank, the end of its last op or of the last transfer into it (as EventSim's marks)
  ps_t dma_free[kRanks], port_free[kRanks], port_last[kRanks];
  std::int32_t route[kRanks + 1];  // rank r's hops: hops[route[r] .. route[r + 1])
  Hop hops[kMaxHops];
  std::int64_t piece_lo[Caps::kPieceTable];  // piece_table's, where the level's pieces fit it
};
using RingWalk = RingWalkT<ArFullCaps>;

// A copy of `nb` bytes over one hop of kind `k`, counted at its level into `o` (figures or a
// result: the fields are named alike). A sender's out-port counts nothing: the copy is
// counted at the in-port.
template <class Out>
KB_HD void count_copy(Out& o, net::LinkKind k, std::int64_t nb) {
  switch (k) {
    case net::LinkKind::ipcq_in: o.link_bytes_pe += nb, ++o.copies_pe; break;
    case net::LinkKind::cube_link: o.link_bytes_cube += nb, ++o.copies_cube; break;
    case net::LinkKind::sip_link: o.link_bytes_sip += nb, ++o.copies_sip; break;
    default: break;
  }
}

// A transfer's figures but its copies, as a sender's half (send_figures) and a receiver's add
// (add_figures) count them: Sim::send and Sim::receive, the walks, and a replayed level.
template <class Out>
KB_HD void send_figures(Out& o, bool hbm, std::int64_t nb) {
  if (hbm) o.hbm_read_bytes += nb, o.hbm_write_bytes += nb;
  else o.sram_read_bytes += nb, o.sram_write_bytes += nb;
  ++o.transfers;
}
template <class Out>
KB_HD void add_figures(Out& o, bool hbm, std::int64_t nb) {
  const std::int64_t values = nb / 2;
  o.vector_ops += vector_element_ops(VecOp::add, 1, values);
  if (hbm) {
    o.hbm_read_bytes += 2 * nb, o.hbm_write_bytes += nb;
  } else {
    const SramBytes sb = vector_sram(VecOp::add, 1, values, 2, 2);
    o.sram_read_bytes += sb.read, o.sram_write_bytes += sb.write;
  }
}

// Where each piece of each chunk begins (coll_piece_lo of chunk ch, piece k at
// table[ch * (ranks + 1) + k]), where the level's (ranks + 1) · chunks boundaries fit `cap`
// entries: false where they do not (the walk then divides per transfer). A walk reads a
// transfer's size many times, and each coll_piece_lo takes three divisions.
KB_HD inline bool piece_table(const AllreduceConfig& c, std::int64_t* table, std::int64_t cap) {
  const std::int64_t n = coll_vranks(c);  // pieces of a chunk
  if ((n + 1) * c.chunks > cap) return false;
  // coll_piece_lo's floors, carried as remainders (EvenParts): one division per chunk and level.
  EvenParts chunks(coll_values(c), c.chunks);
  for (std::int64_t ch = 0; ch < c.chunks; ++ch) {
    const Span chunk = chunks.next();
    EvenParts pieces(chunk.hi - chunk.lo, n);
    std::int64_t* row = table + ch * (n + 1);
    for (std::int64_t k = 0; k < n; ++k) row[k] = chunk.lo + pieces.next().lo;
    row[n] = chunk.hi;
  }
  return true;
}
// The first value of piece k of chunk ch: from `table` where piece_table filled it (`tabled`).
KB_HD inline std::int64_t piece_lo_at(const AllreduceConfig& c, const std::int64_t* table, bool tabled, std::int64_t ch,
                                      std::int64_t k) {
  return tabled ? table[ch * (coll_vranks(c) + 1) + k] : coll_piece_lo(c, ch, k);
}

// Whether the closed form covers a config (coll_check has accepted it): one channel (channels
// share their links, which the closed form does not arbitrate).
KB_HD inline bool ring_walk_domain(const AllreduceConfig& c) {
  return c.level != static_cast<std::int64_t>(CollLevel::hier) && c.algo == static_cast<std::int64_t>(CollAlgo::ring) &&
         c.op == static_cast<std::int64_t>(CollOp::allreduce) && c.channels == 1;
}

// The ring allreduce of `c` (ring_walk_domain) walked transfer by transfer, as the model's
// ops would run: false when the walk cannot vouch for the simulation's schedule. Rank r sits
// at nodes[r] (coll_node, or for a hier phase its group 0's PE), and with HBM buffers
// sharers[r] HBM ports share its cube (the model's static share).
template <class Caps>
struct RingWalker {
  using Walk = RingWalkT<Caps>;
  const AllreduceConfig& c;
  Walk& w;
  const std::int64_t* sharers;
  std::int64_t p, C;
  bool hbm, table;
  ps_t L;
  AllreduceFigures f{};

  KB_HD RingWalker(const AllreduceConfig& config, Walk& walk, const std::int64_t* s)
      : c(config), w(walk), sharers(s), p(config.ranks), C(config.chunks),
        hbm(config.buffer == static_cast<std::int64_t>(CollBuffer::hbm)), table(false),
        L(config.hw.hbm_latency_ns * kPsPerNs) {}

  // Each rank's route to the next, and where its hops sit; the state cleared. False where
  // the routes do not fit the walk's table.
  KB_HD bool start(const net::Node* nodes) {
    std::int32_t nh = 0;
    bool fits = true;
    for (std::int64_t r = 0; r < p; ++r) {
      w.route[r] = nh;
      net::for_each_hop(c.hw, nodes[r], nodes[(r + 1) % p], [&](const net::Hop& h) {
        if (nh >= Walk::kMaxHops) {
          fits = false;
          return;
        }
        w.hops[nh++] = typename Walk::Hop{h.link, h.kind, h.bandwidth_gbps, h.latency_ns * kPsPerNs, 0, -1, false, -1, 0};
      });
      if (!fits) return false;
    }
    w.route[p] = nh;
    for (std::int64_t i = 0; i < p * C * p; ++i) w.written[i] = -1;
    for (std::int64_t r = 0; r < Caps::kRanks; ++r)
      w.vec_free[r] = 0, w.mark_done[r] = 0, w.dma_free[r] = 0, w.port_free[r] = 0, w.port_last[r] = -1,
      w.send_bytes[r] = -1, w.add_values[r] = -1;
    table = piece_table(c, w.piece_lo, Caps::kPieceTable);
    return true;
  }
  // An op of rank r that ends at `end`: the latency, r's mark, the int64 guard.
  KB_HD bool ended(std::int64_t r, ps_t end) {
    f.latency_ps = imax(f.latency_ps, end);
    w.mark_done[r] = imax(w.mark_done[r], end);
    return end <= kTimeLimitPs;
  }
  // A claim on rank r's HBM write port ready at `ready`, holding it `busy`: its start, or -1
  // where it is not strictly later than the port's last claim (the walk gives up).
  KB_HD ps_t port(std::int64_t r, ps_t ready, ps_t busy) {
    if (ready <= w.port_last[r]) return -1;
    w.port_last[r] = ready;
    const ps_t start = sim::take(w.port_free[r], ready, busy);
    return start;
  }
  KB_HD std::int64_t slot(std::int64_t r, std::int64_t ch, std::int64_t k) const { return (r * C + ch) * p + k; }
  // Values of piece j of chunk ch; the next rank; the piece rank i sends at step s (i - s or
  // i + 1 - s, mod p: both within one wrap of [0, p)).
  KB_HD std::int64_t values_of(std::int64_t ch, std::int64_t j) const {
    return piece_lo_at(c, w.piece_lo, table, ch, j + 1) - piece_lo_at(c, w.piece_lo, table, ch, j);
  }
  KB_HD std::int64_t next(std::int64_t i) const { return i + 1 == p ? 0 : i + 1; }
  KB_HD std::int64_t piece_at(bool rs, std::int64_t i, std::int64_t s) const {
    const std::int64_t j = rs ? i - s : i + 1 - s;
    return j < 0 ? j + p : j >= p ? j - p : j;
  }

  // The transfer agent's policy (src/device/sim/transfer.h) for rank i's send to the next
  // rank: each op served as it comes. The read on the sender's DMA queue in its program order;
  // each hop of one sender per link, whose claims must come strictly later one after another
  // (or both at 0 unblocked), else the walk gives up; the write at the receiver's HBM port,
  // which its own adds write through too.
  struct Send {
    RingWalker& r;
    std::int64_t i, dst, nb;
    ps_t ready, end = 0;
    bool unblocked;
    KB_HD ps_t own_ps(const xfer::Step&) const { return 0; }  // unused: HBM ends give the chain
    KB_HD ps_t own_ps(const xfer::Step&, typename Walk::Hop& h) const { return h.busy(nb); }
    KB_HD KB_INLINE xfer::Go serve(const xfer::Step& st, ps_t busy) {
      if (st.role == xfer::Role::read) {
        const ps_t start = sim::take(r.w.dma_free[i], ready, busy);
        if (!r.ended(i, start + busy + r.L)) return xfer::Go::fail;
        ready = start + r.L, unblocked = false;
        r.f.hbm_read_bytes += nb;
        return xfer::Go::on;
      }
      const ps_t start = r.port(dst, ready, busy);
      if (start < 0) return xfer::Go::fail;
      end = start + busy + r.L;
      if (!r.ended(i, end)) return xfer::Go::fail;
      r.f.hbm_write_bytes += nb;
      return xfer::Go::on;
    }
    KB_HD KB_INLINE xfer::Go serve(const xfer::Step&, typename Walk::Hop& h, ps_t busy) {
      if (ready < h.last_ready || (ready == h.last_ready && !(unblocked && h.last_unblocked))) return xfer::Go::fail;
      h.last_ready = ready, h.last_unblocked = unblocked;
      const ps_t start = sim::take(h.free, ready, busy);
      end = start + busy + h.latency;
      if (!r.ended(i, end)) return xfer::Go::fail;
      count_copy(r.f, h.kind, nb);
      ready = start + h.latency, unblocked = false;  // the next hop: once the head has crossed
      return xfer::Go::on;
    }
  };
  // Rank i's send of step s, chunk ch. HBM: one chain from the sender's HBM to the receiver's
  // (ADR 0007 rule 5), its busy time memoised per sender and size.
  KB_HD bool send(bool rs, std::int64_t s, std::int64_t ch, std::int64_t i) {
    const std::int64_t j = piece_at(rs, i, s);
    const std::int64_t nb = 2 * values_of(ch, j);
    const std::int64_t dst = next(i);
    const ps_t ready = w.written[slot(i, ch, j)];
    Send p{*this, i, dst, nb, ready < 0 ? 0 : ready, 0, ready < 0};
    const std::int32_t k0 = w.route[i], hops = w.route[i + 1] - k0;
    if (hbm && nb != w.send_bytes[i]) {
      w.send_bytes[i] = nb;
      w.send_chain[i] = xfer::chain_ps(c.hw, nb, sharers[i], sharers[dst], [&](auto&& visit) {
        for (std::int32_t k = 0; k < hops; ++k) visit(w.hops[k0 + k].busy(nb));
      });
    }
    const auto route = [&](std::int32_t h0, auto&& visit) {
      for (std::int32_t k = h0; k < hops; ++k)
        if (!visit(k, w.hops[k0 + k])) return;
    };
    if (xfer::send(p, route, hops, hbm, hbm ? w.send_chain[i] : xfer::kOwn) != xfer::Go::on) return false;
    if (!hbm) f.sram_read_bytes += nb, f.sram_write_bytes += nb;
    w.landed[i] = p.end;
    w.mark_done[dst] = imax(w.mark_done[dst], p.end);
    ++f.transfers;
    return true;
  }

  // The agent's policy for the receive of rank i's send by the next rank, added in
  // (xfer::reduce_at): with HBM ends one chain (read both operands on the DMA queue, add,
  // write the sum through the HBM port), else the add on its vector engine.
  struct Add {
    RingWalker& r;
    std::int64_t dst;
    ps_t ready, rd = 0, ad = 0;
    KB_HD KB_INLINE xfer::Go serve_add(const xfer::Step& st, ps_t busy) {
      if (st.role == xfer::Role::read) {
        rd = sim::take(r.w.dma_free[dst], ready, busy);
        return r.ended(dst, rd + busy + r.L) ? xfer::Go::on : xfer::Go::fail;
      }
      if (st.role == xfer::Role::hop) {
        ad = sim::take(r.w.vec_free[dst], st.last ? ready : rd + r.L, busy);
        if (st.last && ad + busy > kTimeLimitPs) return xfer::Go::fail;
        ready = ad + busy;
        return r.ended(dst, ad + busy) ? xfer::Go::on : xfer::Go::fail;
      }
      const ps_t wr = r.port(dst, ad, busy);
      if (wr < 0) return xfer::Go::fail;
      ready = wr + busy + r.L;
      return r.ended(dst, ready) ? xfer::Go::on : xfer::Go::fail;
    }
  };
  // The receive of rank i's send of step s, chunk ch, by the next rank: taken as it landed
  // (all-gather), or added in (reduce-scatter).
  KB_HD bool receive(bool rs, std::int64_t s, std::int64_t ch, std::int64_t i) {
    const std::int64_t dst = next(i), j = piece_at(rs, i, s);
    ps_t& piece = w.written[slot(dst, ch, j)];
    if (!rs) {
      piece = w.landed[i];
      return true;
    }
    const std::int64_t values = values_of(ch, j);
    if (values != w.add_values[dst]) {
      w.add_values[dst] = values, w.add_busy[dst] = xfer::add_ps(c.hw, values);
      if (hbm) w.add_chain[dst] = xfer::add_chain_ps(c.hw, values, sharers[dst]);
    }
    add_figures(f, hbm, 2 * values);
    const ps_t busy = hbm ? w.add_chain[dst] : w.add_busy[dst];
    Add p{*this, dst, imax(w.landed[i], piece)};
    if (xfer::reduce_at(p, hbm, busy) != xfer::Go::on) return false;
    piece = p.ready;
    f.vector_busy_ps += busy;
    return true;
  }
};

template <class Caps>
KB_HD KB_NOINLINE bool ring_walk(const AllreduceConfig& c, RingWalkT<Caps>& w, const net::Node* nodes,
                                 const std::int64_t* sharers, AllreduceFigures* out) {
  const std::int64_t p = c.ranks, C = c.chunks;
  if (p > Caps::kRanks || p * C * p > Caps::kPieces) return false;
  RingWalker<Caps> r(c, w, sharers);
  if (!r.start(nodes)) return false;
  // Reduce-scatter steps, then all-gather steps; in each, chunk by chunk: every rank's send,
  // then every rank's receive (coll_detail::Scheduler::ring and ar_detail::Sim::flush).
  for (int phase = 0; phase < 2; ++phase) {
    const bool rs = phase == 0;
    for (std::int64_t s = 0; s + 1 < p; ++s)
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t i = 0; i < p; ++i)
          if (!r.send(rs, s, ch, i)) return false;
        for (std::int64_t i = 0; i < p; ++i)
          if (!r.receive(rs, s, ch, i)) return false;
      }
  }
  *out = r.f;
  return true;
}

}  // namespace ar_detail
}  // namespace kb
