// A closed form of the allreduce model (allreduce_model.h) on the domain where the device
// simulator could make no choice: the ring allreduce on SRAM buffers at one level (pe, cube
// or sip). docs/model.md section 11.9 proves it equal to the simulation there: every link is
// used by one sender only, whose sends on it become ready in program order, strictly later
// one after another (or together at time 0, before anything ran), so each arbitrated link
// serves first in, first out, and every resource is a queue in program order. The schedule is
// then one walk over the transfers: no ops, edges or events. The walk checks that order as
// it goes and gives up (the simulator then runs) wherever it does not hold, or a time would
// pass the int64 guard. Pure KB_HD code: fixed arrays, no allocation.
#pragma once

#include <cstdint>

#include "../common/hw.h"
#include "../common/kb_hd.h"
#include "../common/network.h"
#include "../common/units.h"
#include "collective.h"
#include "vector.h"

namespace kb {
namespace ar_detail {

struct AllreduceFigures {
  ps_t latency_ps;
  std::int64_t link_bytes_pe, link_bytes_cube, link_bytes_sip;
  std::int64_t copies_pe, copies_cube, copies_sip;
  ps_t vector_busy_ps;
  std::int64_t transfers;
  std::int64_t vector_ops, sram_read_bytes, sram_write_bytes;
};

// The scratch of the walk: when each piece (rank, chunk, piece) was last written (-1: never),
// each rank's vector engine is free, and each hop of each rank's route (its link's figures,
// when it is free, and the last send's ready time on it).
struct RingWalk {
  static constexpr std::int32_t kMaxHops = 256;  // over every rank's route; more: the simulator runs
  struct Hop {
    net::LinkKind kind;
    std::int64_t bandwidth_gbps;
    ps_t latency, free, last_ready;
    bool last_unblocked;  // the last send on it waited for nothing (ready at 0 before anything ran)
  };
  ps_t written[kCollMaxPieces];
  ps_t vec_free[kCollMaxRanks], landed[kCollMaxRanks];
  ps_t mark_done[kCollMaxRanks];  // per rank, the end of its last op or of the last transfer into it (as EventSim's marks)
  std::int32_t route[kCollMaxRanks + 1];  // rank r's hops: hops[route[r] .. route[r + 1])
  Hop hops[kMaxHops];
};

// Whether the closed form covers a config (coll_check has accepted it).
KB_HD inline bool ring_walk_domain(const AllreduceConfig& c) {
  return c.level != static_cast<std::int64_t>(CollLevel::hier) && c.algo == static_cast<std::int64_t>(CollAlgo::ring) &&
         c.buffer == static_cast<std::int64_t>(CollBuffer::sram) && c.op == static_cast<std::int64_t>(CollOp::allreduce);
}

// The ring allreduce of `c` (ring_walk_domain) walked transfer by transfer, as the model's
// ops would run: false when the walk cannot vouch for the simulation's schedule.
KB_HD KB_NOINLINE inline bool ring_walk(const AllreduceConfig& c, RingWalk& w, AllreduceFigures* out) {
  const std::int64_t p = c.ranks, C = c.chunks;
  AllreduceFigures f{};
  // Each rank's route to the next, and where its hops sit.
  std::int32_t nh = 0;
  bool fits = true;
  for (std::int64_t r = 0; r < p; ++r) {
    w.route[r] = nh;
    net::for_each_hop(c.hw, coll_node(c, r), coll_node(c, (r + 1) % p), [&](const net::Hop& h) {
      if (nh >= RingWalk::kMaxHops) {
        fits = false;
        return;
      }
      w.hops[nh++] = RingWalk::Hop{h.kind, h.bandwidth_gbps, h.latency_ns * kPsPerNs, 0, -1, false};
    });
    if (!fits) return false;
  }
  w.route[p] = nh;
  for (std::int64_t i = 0; i < p * C * p; ++i) w.written[i] = -1;
  for (std::int64_t r = 0; r < kCollMaxRanks; ++r) w.vec_free[r] = 0, w.mark_done[r] = 0;
  auto slot = [&](std::int64_t r, std::int64_t ch, std::int64_t k) { return (r * C + ch) * p + k; };
  // Reduce-scatter steps, then all-gather steps; in each, chunk by chunk: every rank's send,
  // then every rank's receive (coll_detail::Scheduler::ring and ar_detail::Sim::flush).
  for (int phase = 0; phase < 2; ++phase) {
    const bool rs = phase == 0;
    for (std::int64_t s = 0; s + 1 < p; ++s)
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t i = 0; i < p; ++i) {
          const std::int64_t j = coll_detail::mod(rs ? i - s : i + 1 - s, p);
          const std::int64_t nb = 2 * (coll_piece_lo(c, ch, j + 1) - coll_piece_lo(c, ch, j));
          ps_t ready = w.written[slot(i, ch, j)];
          bool unblocked = ready < 0;
          if (unblocked) ready = 0;
          ps_t end = 0;
          for (std::int32_t k = w.route[i]; k < w.route[i + 1]; ++k) {
            RingWalk::Hop& h = w.hops[k];
            // One sender per link, in program order: strictly later, or both at 0 unblocked.
            if (ready < h.last_ready || (ready == h.last_ready && !(unblocked && h.last_unblocked))) return false;
            h.last_ready = ready, h.last_unblocked = unblocked;
            const ps_t busy = transfer_ps(nb, h.bandwidth_gbps);
            const ps_t start = imax(ready, h.free);
            h.free = start + busy;
            end = start + busy + h.latency;
            if (end > kTimeLimitPs) return false;
            f.latency_ps = imax(f.latency_ps, end);
            w.mark_done[i] = imax(w.mark_done[i], end);
            switch (h.kind) {
              case net::LinkKind::ipcq_in: f.link_bytes_pe += nb, ++f.copies_pe; break;
              case net::LinkKind::cube_link: f.link_bytes_cube += nb, ++f.copies_cube; break;
              case net::LinkKind::sip_link: f.link_bytes_sip += nb, ++f.copies_sip; break;
              default: break;  // a sender's out-port: the copy is counted at the in-port
            }
            ready = start + h.latency, unblocked = false;  // the next hop: once the head has crossed
          }
          w.landed[i] = end;
          w.mark_done[(i + 1) % p] = imax(w.mark_done[(i + 1) % p], end);
          ++f.transfers;
          f.sram_read_bytes += nb, f.sram_write_bytes += nb;
        }
        for (std::int64_t i = 0; i < p; ++i) {
          const std::int64_t dst = (i + 1) % p, j = coll_detail::mod(rs ? i - s : i + 1 - s, p);
          ps_t& piece = w.written[slot(dst, ch, j)];
          if (!rs) {
            piece = w.landed[i];  // taken as it landed
            continue;
          }
          const std::int64_t values = coll_piece_lo(c, ch, j + 1) - coll_piece_lo(c, ch, j);
          const ps_t add = cycles_ps(vector_cycles(VecOp::add, 1, values, c.hw.vector_lanes), c.hw.clock_mhz);
          const ps_t start = imax(imax(w.landed[i], piece), w.vec_free[dst]);
          const ps_t end = start + add;
          if (end > kTimeLimitPs) return false;
          w.vec_free[dst] = end, piece = end;
          f.latency_ps = imax(f.latency_ps, end);
          w.mark_done[dst] = imax(w.mark_done[dst], end);
          f.vector_busy_ps += add;
          f.vector_ops += vector_element_ops(VecOp::add, 1, values);
          const SramBytes sb = vector_sram(VecOp::add, 1, values, 2, 2);
          f.sram_read_bytes += sb.read, f.sram_write_bytes += sb.write;
        }
      }
  }
  *out = f;
  return true;
}

}  // namespace ar_detail
}  // namespace kb
