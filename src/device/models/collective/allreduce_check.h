// The collective's validity check: a config's fields and memory (coll_check), and whether
// the batched model can hold its ops: the ops a level expands into, counted by walking its
// transfers or in closed form, against kCollMaxOps a channel (coll_max_ops). Both engines
// use it (a config beyond it is too_large on both).
#pragma once

#include <cstdint>

#include "../../common/kb_hd.h"
#include "../../common/network.h"
#include "../../common/units.h"
#include "collective.h"

namespace kb {
namespace ar_detail {

// Ops of one single-level collective as the model expands it (against kCollMaxOps), by
// walking its transfers.
KB_HD inline std::int64_t count_ops_by_schedule(const AllreduceConfig& c) {
  struct Count {
    const AllreduceConfig* c;
    std::int64_t ops = 0;
    KB_HD void xfer(std::int64_t, const CollXfer& x) {
      const bool hbm = c->buffer == static_cast<std::int64_t>(CollBuffer::hbm);
      ops += net::hop_count(c->hw, coll_node(*c, x.src), coll_node(*c, x.dst)) + (hbm ? 2 : 0);
      if (x.reduce) ops += hbm ? 3 : 1;
    }
    KB_HD void flush() {}
  } count{&c};
  coll_schedule(c, count);
  return count.ops;
}

// The transfers of one single-level collective (`all`) and those that add (`adds`), in
// closed form: what coll_schedule emits, algorithm by algorithm (p ranks, C chunks, a
// rows x cols grid for mesh2d and root). Every step emits once per chunk, so each count is C
// times one chunk's. A binomial tree's reduce and its broadcast each move p - 1 transfers
// (rank i > 0 sends, or receives, once: at the step of its lowest set bit); a ring over
// groups of m ranks runs m - 1 steps of p transfers; halving-doubling runs log2 p steps of p
// each way; a reduce's gather sends from every rank but the root; root's chains cross each
// row's cols - 1 links and the root column's rows - 1, inward to reduce, outward to broadcast.
KB_HD inline void count_transfers(const AllreduceConfig& c, std::int64_t* all, std::int64_t* adds) {
  const std::int64_t p = c.ranks, C = c.chunks, rows = coll_rows(c), cols = coll_cols(c);
  const auto op = static_cast<CollOp>(c.op);
  const auto algo = static_cast<CollAlgo>(c.algo);
  std::int64_t sum = 0, rest = 0;  // per chunk: transfers that add, and the others
  // The single-level ops of their own: a ring runs p - 1 steps of p transfers, halving or
  // doubling log2 p steps of p, pairwise exchange p - 1 steps of p.
  const std::int64_t steps = algo == CollAlgo::hd ? ceil_log2(p) : p - 1;
  if (op == CollOp::bcast) {
    rest = algo == CollAlgo::root ? rows * (cols - 1) + rows - 1 : p - 1;
  } else if (op == CollOp::reducescatter) {
    sum = steps * p;
  } else if (op == CollOp::allgather || op == CollOp::alltoall) {
    rest = steps * p;
  } else {
    const bool both = op == CollOp::allreduce;
    const std::int64_t gather = p - 1;
    switch (algo) {
      case CollAlgo::ring: sum = (p - 1) * p, rest = both ? sum : gather; break;
      case CollAlgo::hd: sum = ceil_log2(p) * p, rest = both ? sum : gather; break;
      case CollAlgo::tree: sum = p - 1, rest = both ? p - 1 : 0; break;
      case CollAlgo::mesh2d: sum = (cols - 1 + rows - 1) * rows * cols, rest = both ? sum : gather; break;
      case CollAlgo::root: sum = rows * (cols - 1) + rows - 1, rest = both ? sum : 0; break;
      case CollAlgo::pairwise: break;  // not an allreduce's (coll_check refuses it)
    }
  }
  *adds = C * c.channels * sum;  // channels: each transfer once per channel
  *all = C * c.channels * (sum + rest);
}

// At least the hops of the route between any two ranks of a single-level collective: 2
// within a cube (out of one copy queue, into another); across the used part of the cube
// grid, its rows and columns apart; across SIPs, 1 fully connected, 2 through the switch,
// half the ring the shorter way round (net::hop_count).
KB_HD inline std::int64_t max_hops(const AllreduceConfig& c) {
  if (c.level == static_cast<std::int64_t>(CollLevel::pe)) return 2;
  const HwConfig& h = c.hw;
  if (c.level == static_cast<std::int64_t>(CollLevel::cube)) {
    const std::int64_t cols = imin(c.ranks, h.cube_cols), rows = ceil_div(c.ranks, h.cube_cols);
    return (rows - 1) + (cols - 1);
  }
  if (h.sip_topology == SipTopology::fully_connected) return 1;
  if (h.sip_topology == SipTopology::switch_) return 2;
  return h.sips / 2;
}

// At least count_ops_by_schedule (every transfer over the longest route), and equal to it
// at the pe level, where every route has 2 hops.
KB_HD inline std::int64_t count_ops_bound(const AllreduceConfig& c) {
  const bool hbm = c.buffer == static_cast<std::int64_t>(CollBuffer::hbm);
  std::int64_t all = 0, adds = 0;
  count_transfers(c, &all, &adds);
  return all * (max_hops(c) + (hbm ? 2 : 0)) + adds * (hbm ? 3 : 1);
}

// The same count; for the ring allreduce in closed form: each of its 2 (p - 1) rounds of
// every chunk sends once from every rank over that rank's route (and, on HBM, a read and a
// write), and each reduce-scatter round adds once on every rank (HBM: read, add, write).
KB_HD inline std::int64_t count_ops(const AllreduceConfig& c) {
  if (c.algo != static_cast<std::int64_t>(CollAlgo::ring) || c.op != static_cast<std::int64_t>(CollOp::allreduce))
    return count_ops_by_schedule(c);
  const std::int64_t p = c.ranks;
  const bool hbm = c.buffer == static_cast<std::int64_t>(CollBuffer::hbm);
  std::int64_t sends = hbm ? 2 * p : 0;  // one round's send ops
  for (std::int64_t i = 0; i < p; ++i) sends += net::hop_count(c.hw, coll_node(c, i), coll_node(c, (i + 1) % p));
  // Channel g's ranks sit on channel 0's cubes and SIPs: the same routes, once per channel.
  return c.channels * (p - 1) * c.chunks * (2 * sends + p * (hbm ? 3 : 1));
}

// What the check needs: the count where `exact` (a caller that reports it); else the bound
// where it is within `limit` (the count is then too) or equals the count (the pe level),
// and the count otherwise. Compared with `limit`, it gives the status the count gives.
KB_HD inline std::int64_t count_ops_to_check(const AllreduceConfig& c, bool exact, std::int64_t limit) {
  // A hier launch as one level: its routes cross every level, which max_hops does not bound.
  if (exact || c.level == static_cast<std::int64_t>(CollLevel::hier)) return count_ops(c);
  const std::int64_t bound = count_ops_bound(c);
  return bound <= limit || c.level == static_cast<std::int64_t>(CollLevel::pe) ? bound : count_ops(c);
}

// Whether a level of `c` (accepted by the check) has more than `cap` ops.
KB_HD KB_COLD inline bool beyond_ops(const AllreduceConfig& c, std::int64_t cap) {
  return count_ops_to_check(c, false, cap) > cap;
}

}  // namespace ar_detail

// The status of the validity check alone (both engines use it): the config's fields, its
// memory, and whether the model can hold its ops (hier: each phase's). `ops` gets the
// model's op count (hier: the largest phase's).
KB_HD KB_NOINLINE inline std::int32_t allreduce_check(const AllreduceConfig& c, std::int64_t* ops = nullptr) {
  const std::int32_t s = coll_check(c);
  if (s != kArOk) return s;
  std::int64_t most = 0;
  if (!coll_one_level(c)) {
    CollPhase ph;  // one at a time: the check's frame nests in another model's (llm_model.h)
    const int n = coll_hier_phases(c, nullptr, nullptr, nullptr, kCollMaxPhases);
    for (int k = 0; k < n; ++k) {
      coll_hier_phases(c, &ph, nullptr, nullptr, k);
      most = imax(most, ar_detail::count_ops_to_check(ph.sub, ops != nullptr, kCollMaxOps));
    }
  } else {
    most = ar_detail::count_ops_to_check(c, ops != nullptr, coll_max_ops(c));
  }
  if (ops) *ops = most;
  return most > coll_max_ops(c) ? kArTooLarge : kArOk;
}

}  // namespace kb
