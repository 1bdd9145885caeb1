// Batched allreduce model: the timing of a collective (collective.h) without an op graph or
// allocation. A collective is all communication, and who waits for whom on a shared link
// depends on when each message becomes ready, so no closed form holds in general (ADR 0007:
// "a closed form must state when its links are contended"). The model therefore expands the
// config's transfers into ops of the device simulator (src/device/sim/event_sim.h), which
// holds ADR 0007's rules for the device side and takes its fast path wherever it can prove
// no arbitration choice arises (docs/adr/0018-device-simulator.md). Two walks come first and
// skip the ops where they can: the ring's closed form (allreduce_ring.h), and the general
// walk (allreduce_walk.h), which is the simulator's first pass served as the ops would be
// emitted. It shares with the reference engine the transfer list, the routes and the unit
// helpers, never the op expansion or the simulation (docs/adr/0009-collective-schedules.md).
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/network.h"
#include "../../common/units.h"
#include "../../sim/event_sim.h"
#include "../../sim/transfer.h"
#include "allreduce_check.h"
#include "allreduce_replay.h"
#include "allreduce_ring.h"
#include "allreduce_walk.h"
#include "../../common/energy.h"
#include "collective.h"
#include "../vector.h"

namespace kb {

struct AllreduceResult {
  std::int32_t status;
  std::int32_t reserved;  // explicit, zeroed padding: results compare bytewise
  ps_t latency_ps;
  std::int64_t link_bytes_pe, link_bytes_cube, link_bytes_sip;  // bytes over links, per level
  std::int64_t copies_pe, copies_cube, copies_sip;              // link traversals, per level
  std::int64_t hbm_read_bytes, hbm_write_bytes;
  ps_t vector_busy_ps;     // vector engines' busy time, summed
  std::int64_t transfers;  // messages between ranks
  // Counted actions (docs/model.md section 14.3): the adds' element-ops, and SRAM bytes (an
  // SRAM transfer reads its source and writes its destination, an add reads two operands and
  // writes one; HBM buffers stream and touch no SRAM).
  std::int64_t vector_ops, sram_read_bytes, sram_write_bytes;
};

// Pareto costs a sweep can trade latency against (1-based; 0: none).
enum AllreduceCost : std::int32_t { kArCostRanks = 1, kArCostLinkBytes, kArCostHbm };

// The evaluators of one level, in the order they are tried (docs/model.md section 11.13):
// the host's replay of a recorded structure, the ring's closed form, the general walk
// (without depths first: flat), and the simulator (its certificate passes: fast, else its
// events). A scratch's `Paths` names those it may take; the simulator is always there.
enum ArPath : int { kArPathReplay = 1, kArPathRing = 2, kArPathGeneral = 4, kArPathFlat = 8, kArPathFast = 16 };
constexpr int kArAllPaths = kArPathReplay | kArPathRing | kArPathGeneral | kArPathFlat | kArPathFast;
constexpr int kArNoReplay = kArAllPaths & ~kArPathReplay;
constexpr int kArSimulatorOnly = kArPathRing | kArPathFast;  // no replay, no general walk: the ops built
constexpr int kArEventsOnly = 0;                             // the simulator's events alone

namespace ar_detail {

// The simulator of one level: ops, 4 dependency edges per op, a mark per rank.
template <class Caps>
using EngineOf = sim::EventSim<Caps::kOps, 4 * Caps::kOps, static_cast<std::int32_t>(kCollMaxRanks)>;
using Engine = EngineOf<ArFullCaps>;
// The small scratch has no simulator: a level no walk takes is deferred.
struct NoEngine {};
constexpr int kVectorClass = 1;  // the resource class whose busy time is the vector engines'

// Turns one config's transfers into ops of the device simulator (src/device/sim/), with the
// rules of ADR 0007: a sender's half (an HBM read, the route's hops cut-through, an HBM
// write) and a receiver's half (an add on the vector engine, or streamed from HBM through
// it). Every array is sized for kCollMaxOps (allreduce_check refuses a config with more).
// `Caps` (allreduce_ring.h): how much it holds; the small scratch builds no ops (its arrays
// for them have one element). `Paths` (ArPath bits): the evaluators a level may take, a
// type's constant (every one in production; tests compare them by leaving some out).
template <class Caps, int Paths = kArAllPaths>
struct SimT {
  static constexpr int kPaths = Paths;
  static constexpr std::int32_t kRanks = Caps::kRanks;
  static constexpr std::int32_t kGroup = Caps::kEvents ? 2 * kRanks : 1;
  static constexpr std::int32_t kWriters = Caps::kEvents ? Caps::kPieces : 1;
  const AllreduceConfig* c;    // the collective simulated: one level (a phase, for hier)
  const AllreduceConfig* top;  // the config asked for (c itself, or the hier config)
  std::int64_t leader_pe = 0, leader_cube = 0;  // hier: the leader PE of a cube, the leader cube of a SIP
  CollHier dims;                                // hier: the launch's dims
  bool hier = false;
  // Levels evaluated, those the simulator's events decided, those the ring's closed form took
  // (allreduce_ring.h), and those the general walk (allreduce_walk.h) took, refused (its
  // certificate failed) or could not hold.
  std::int32_t levels = 0, event_levels = 0, walked_levels = 0, general_levels = 0, general_refused = 0, general_full = 0;
  std::int32_t flat_levels = 0;  // levels the general walk took without depths
  // Host: levels replayed from the thread's recording of their structure, and levels recorded
  // (allreduce_replay.h).
  std::int32_t replayed_levels = 0, recorded_levels = 0;
  std::int32_t hw_place = -1;  // the launch's hardware's place in the thread's table (-1: not looked up)
  // HBM buffers: per rank of the config (hier: of the whole launch), the HBM ports it uses;
  // ports_marked: whether they are (the host marks them for the first level it does not replay).
  std::int8_t port[2 * Caps::kHierRanks];
  bool ports_marked = false;
  std::int16_t writer[kWriters];  // per (rank, chunk, piece): the op that last wrote it
  std::int32_t issued[kRanks];
  CollXfer group[kGroup];
  std::int64_t group_chunk[kGroup];
  std::int32_t ngroup = 0, arrival[kGroup];
  AllreduceResult out{};
  // The ring's walk, the general walk and the simulator: one level uses one after the other
  // (where a walk cannot take it), so they share their storage. Whichever evaluates a level
  // is set up by it (ring_walk, general_walk, Engine::reset): the constructor initialises none.
  union {
    RingWalkT<Caps> walk;
    GeneralWalkT<Caps> general;
    typename std::conditional<Caps::kEvents, EngineOf<Caps>, NoEngine>::type e;
  };
  // The last level's: per rank, the end of its last op or of the last transfer into it (a
  // single level the host's replay took leaves it as it was: only hier reads it).
  ps_t mark_done[kRanks];
  ArRecord* rec = nullptr;  // build() records the level into it (allreduce_replay.h); null: not
  KB_HD SimT() {}

  // Per rank of the level, set by run_level(): its node, its global PE, and how many HBM ports
  // its cube's bandwidth is shared by.
  net::Node nodes[kRanks];
  std::int64_t pe_of[kRanks], sharers[kRanks];
  std::int64_t links = 0;  // net::link_count: the first key after the links

  // Where rank r is: its level's node, or for a hier phase its group 0's PE.
  KB_HD net::Node node_of(std::int64_t r) const {
    return hier ? coll_hier_node(dims, coll_hier_rank(dims, *c, 0, r, leader_pe, leader_cube)) : coll_node(*c, r);
  }
  KB_HD const net::Node& node(std::int64_t r) const { return nodes[r]; }
  KB_HD std::int64_t global_pe_of(std::int64_t r) const { return pe_of[r]; }
  KB_HD std::int32_t piece_slot(std::int64_t r, std::int64_t ch, std::int64_t k) const {
    return static_cast<std::int32_t>((r * c->chunks + ch) * coll_vranks(*c) + k);
  }
  // Resource keys: net link ids, then 3 per PE: vector engine, DMA queue, HBM write port.
  KB_HD std::int64_t engine_key(std::int64_t rank, std::int64_t which) const {
    return links + 3 * global_pe_of(rank) + which;
  }
  KB_HD std::int32_t vector_of(std::int64_t rank) { return e.resource(engine_key(rank, 0), false, 0, kVectorClass); }
  KB_HD std::int32_t dma_of(std::int64_t rank) { return e.resource(engine_key(rank, 1), false, hbm_latency(), 0); }
  KB_HD std::int32_t hbm_in_of(std::int64_t rank) { return e.resource(engine_key(rank, 2), true, hbm_latency(), 0); }

  // An op issued by rank `by` (in its program order) on resource `r`.
  KB_HD std::int32_t op(std::int64_t by, std::int32_t r, ps_t b) {
    return e.op(global_pe_of(by), issued[by]++, r, b, static_cast<std::int32_t>(by));
  }
  // The distinct ops that last wrote pieces [k0, k1) of a chunk on rank r, as deps of `op`.
  KB_HD void range_deps(std::int32_t o, std::int64_t r, std::int64_t ch, std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) e.dep(o, writer[piece_slot(r, ch, k)]);
  }
  KB_HD void wrote(std::int32_t o, std::int64_t r, std::int64_t ch, std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) writer[piece_slot(r, ch, k)] = static_cast<std::int16_t>(o);
  }

  KB_HD bool hbm_mode() const { return c->buffer == static_cast<std::int64_t>(CollBuffer::hbm); }
  KB_HD ps_t hbm_latency() const { return c->hw.hbm_latency_ns * kPsPerNs; }
  KB_HD std::int64_t xfer_bytes(std::int64_t ch, const CollXfer& x) const {
    return 2 * (coll_piece_lo(*c, ch, x.k1) - coll_piece_lo(*c, ch, x.k0));
  }
  // HBM shares (ADR 0007 rule 6): a cube's bandwidth over its PEs' HBM ports used in the
  // launch. The ranks of the pe level share cube 0; every other rank has a cube of its own;
  // hier counts the ports of the cube's PEs over the whole hier launch.
  KB_HD std::int64_t hbm_sharers_of(std::int64_t rank) const {
    auto used = [&](std::int64_t g) { return port[2 * g] + port[2 * g + 1]; };
    std::int64_t s = 0;
    if (hier || c->level == static_cast<std::int64_t>(CollLevel::hier)) {  // a phase, or a hier launch as one level
      const CollHier& d = dims;
      const net::Node& nd = node(rank);
      for (std::int64_t pe = 0; pe < d.pes; ++pe) s += used((nd.sip * d.cubes + nd.cube) * d.pes + pe);
    } else if (c->level != static_cast<std::int64_t>(CollLevel::pe) && c->channels == 1) {
      s = used(rank);
    } else if (c->level != static_cast<std::int64_t>(CollLevel::pe)) {
      s = channel_sharers_of(rank);
    } else {
      for (std::int64_t r = 0; r < c->ranks; ++r) s += used(r);
    }
    return s;
  }
  // With channels: the ports of every channel's PE on the rank's cube.
  KB_HD KB_COLD std::int64_t channel_sharers_of(std::int64_t rank) const {
    const net::Node& nd = node(rank);
    std::int64_t s = 0;
    for (std::int64_t r = 0; r < coll_vranks(*c); ++r)
      if (node(r).sip == nd.sip && node(r).cube == nd.cube) s += port[2 * r] + port[2 * r + 1];
    return s;
  }
  // An op of cost kind `kind` (ar_op_cost: its busy time `cost`) moving `mult` times the
  // bytes of pieces [x.k0, x.k1) of chunk ch, issued by `by` on resource `r`.
  KB_HD std::int32_t cost_op(std::int64_t by, std::int32_t r, std::int32_t kind, std::int64_t param, std::int64_t ch,
                             const CollXfer& x, std::int32_t mult, ps_t cost) {
    const std::int32_t o = op(by, r, cost);
    if (rec)
      rec->note(o, ArCost{param, static_cast<std::int16_t>(ch), static_cast<std::int16_t>(x.k0),
                          static_cast<std::int16_t>(x.k1), static_cast<std::int8_t>(kind), static_cast<std::int8_t>(mult)});
    return o;
  }

  // The transfer agent's policy (src/device/sim/transfer.h) that builds a transfer's ops
  // into the simulator, each at its own time (the simulator streams the chain: EventSim::
  // streams), with the head dependencies of a cut-through route and the recording's costs.
  struct Build {
    SimT& s;
    std::int64_t ch;
    const CollXfer& x;
    std::int64_t nb;
    std::int32_t first = -1, prev = -1;
    ArXferShape shape;
    std::int32_t chain_at = -1;  // a streamed add's first op
    KB_HD void add(std::int32_t o) {
      if (prev < 0) {
        first = o;
        s.range_deps(o, x.src, ch, x.k0, x.k1);
      } else {
        s.e.head(o, prev);
      }
      prev = o;
    }
    KB_HD ps_t own_ps(const xfer::Step& st) const {
      return xfer::hbm_ps(s.c->hw, nb, s.sharers[st.role == xfer::Role::read ? x.src : x.dst]);
    }
    KB_HD ps_t own_ps(const xfer::Step&, const net::Hop& h) const { return xfer::hop_ps(nb, h.bandwidth_gbps); }
    KB_HD xfer::Go serve(const xfer::Step& st, ps_t busy) {  // the HBM read, or the write into x.dst
      const bool rd = st.role == xfer::Role::read;
      add(s.cost_op(x.src, rd ? s.dma_of(x.src) : s.hbm_in_of(x.dst), kArOpHbm, s.sharers[rd ? x.src : x.dst], ch, x, 1,
                    busy));
      return xfer::Go::on;
    }
    KB_HD xfer::Go serve(const xfer::Step&, const net::Hop& h, ps_t busy) {
      add(s.cost_op(x.src, s.e.resource(h.link, true, h.latency_ns * kPsPerNs, 0), kArOpLink, h.bandwidth_gbps, ch, x, 1,
                    busy));
      count_copy(s.out, h.kind, nb);
      if (h.kind == net::LinkKind::ipcq_in) ++shape.hops[0];  // the copies count_copy counts, per level
      else if (h.kind == net::LinkKind::cube_link) ++shape.hops[1];
      else if (h.kind == net::LinkKind::sip_link) ++shape.hops[2];
      return xfer::Go::on;
    }
    // The receiver's add (xfer::reduce, at own times): read both operands (DMA queue), add
    // (vector engine), write the sum (HBM write port); or with SRAM ends the add alone.
    KB_HD xfer::Go serve_add(const xfer::Step& st, ps_t busy) {
      const std::int64_t d = x.dst;
      std::int32_t o;
      if (st.role == xfer::Role::read) o = chain_at = s.cost_op(d, s.dma_of(d), kArOpHbm, s.sharers[d], ch, x, 2, busy);
      else if (st.role == xfer::Role::hop) o = s.cost_op(d, s.vector_of(d), kArOpAdd, 0, ch, x, 1, busy);
      else o = s.cost_op(d, s.hbm_in_of(d), kArOpHbm, s.sharers[d], ch, x, 1, busy);
      if (st.role == xfer::Role::read || !s.hbm_mode()) {
        s.e.dep(o, first);  // `first`: the op the data landed with
        s.range_deps(o, d, ch, x.k0, x.k1);
      } else {
        s.e.head(o, prev);
      }
      prev = o;
      return xfer::Go::on;
    }
  };

  // The sender's half of a transfer: its ops, in its program order; returns the last (the
  // data has landed when it completes).
  KB_HD KB_NOINLINE std::int32_t send(std::int64_t ch, const CollXfer& x) {
    const std::int64_t nb = xfer_bytes(ch, x);
    const bool hbm_end = hbm_mode();
    Build b{*this, ch, x, nb, -1, -1,
            ArXferShape{static_cast<std::int16_t>(ch), static_cast<std::int16_t>(x.k0), static_cast<std::int16_t>(x.k1),
                        static_cast<std::int8_t>(x.reduce), {0, 0, 0}}};
    const net::Node &a = node(x.src), &z = node(x.dst);
    xfer::send(b, xfer::WalkedRoute{c->hw, a, z}, static_cast<std::int32_t>(net::hop_count(c->hw, a, z)), hbm_end,
               xfer::kOwn);
    if (hbm_end) e.chain(b.first, b.prev - b.first + 1);
    send_figures(out, hbm_end, nb);
    e.mark(b.prev, x.dst);
    if (rec) {
      if (rec->nxfers < kCollMaxOps) rec->xfers[rec->nxfers++] = b.shape;
      else rec->full = true;
    }
    return b.prev;
  }

  // The receiver's half: it adds the values in (on its vector engine, or streamed from HBM
  // through it) or takes them as they landed.
  KB_HD KB_NOINLINE void receive(std::int64_t ch, const CollXfer& x, std::int32_t landed) {
    if (!x.reduce) {
      wrote(landed, x.dst, ch, x.k0, x.k1);
      return;
    }
    const std::int64_t nb = xfer_bytes(ch, x);
    add_figures(out, hbm_mode(), nb);
    Build b{*this, ch, x, nb, landed, -1, ArXferShape{}};
    xfer::reduce(b, c->hw, nb / 2, hbm_mode(), sharers[x.dst], true);
    if (hbm_mode()) e.chain(b.chain_at, 3);
    wrote(b.prev, x.dst, ch, x.k0, x.k1);
  }

  // Sink of coll_schedule.
  KB_HD void xfer(std::int64_t ch, const CollXfer& x) {
    group[ngroup] = x;
    group_chunk[ngroup] = ch;
    ++ngroup;
  }
  KB_HD KB_NOINLINE void flush() {
    for (std::int32_t i = 0; i < ngroup; ++i) arrival[i] = send(group_chunk[i], group[i]);
    for (std::int32_t i = 0; i < ngroup; ++i) receive(group_chunk[i], group[i], arrival[i]);
    ngroup = 0;
  }

  // Sink of coll_schedule that marks the HBM ports each rank uses (the sender's DMA read, the
  // receiver's HBM write, and the read of both operands of a streamed add).
  struct Ports {
    std::int8_t* port;
    KB_HD void flush() {}
    KB_HD void xfer(std::int64_t, const CollXfer& x) {
      port[2 * x.src] = 1;
      port[2 * x.dst + 1] = 1;
      if (x.reduce) port[2 * x.dst] = 1;
    }
  };

  // Whether every rank of a single-level collective (of at least 2 ranks) uses both its
  // ports, without walking its transfers: an allreduce's every rank sends and receives (each
  // algorithm's reduce and broadcast halves between them reach every rank, the root
  // included), and a ring, halving-doubling or mesh2d reduce opens with a reduce-scatter in
  // which every rank sends and adds. (A tree's or root's reduce, and a broadcast, leave some
  // ranks a port unused.)
  KB_HD static bool every_port(const AllreduceConfig& c) {
    const auto algo = static_cast<CollAlgo>(c.algo);
    // So does every rank of a reduce-scatter, an all-gather (in a ring or halving-doubling)
    // and an all-to-all.
    if (c.op != static_cast<std::int64_t>(CollOp::reduce) && c.op != static_cast<std::int64_t>(CollOp::bcast)) return true;
    return c.op == static_cast<std::int64_t>(CollOp::reduce) &&
           (algo == CollAlgo::ring || algo == CollAlgo::hd || algo == CollAlgo::mesh2d);
  }

  // Marks every port the launch uses (the static share needs them all before the first op).
  // A hier phase's groups are alike: the same sub-collective, its ranks mapped to the launch's
  // by coll_hier_rank, exactly as coll_schedule_all maps each transfer. So group 0's
  // transfers are walked once, in the phase's own ranks, and their ports marked for every
  // group.
  KB_HD KB_NOINLINE void mark_ports(const AllreduceConfig& launch) {
    const bool single = coll_one_level(launch);
    const std::int8_t all = single && every_port(launch) ? 1 : 0;
    for (std::int64_t i = 0; i < 2 * coll_vranks(launch); ++i) port[i] = all;
    if (single) {
      if (all) return;
      Ports marks{port};
      coll_schedule(launch, marks);
      return;
    }
    CollPhase ph;  // one at a time
    std::int64_t leader_pe = 0, leader_cube = 0;
    const int n = coll_hier_phases(launch, &ph, &leader_pe, &leader_cube, 0);
    const CollHier& d = dims;  // run_checked sets it first
    for (int k = 0; k < n; ++k) {
      coll_hier_phases(launch, &ph, nullptr, nullptr, k);
      std::int8_t local[2 * kCollMaxRanks];
      const std::int8_t every = every_port(ph.sub) ? 1 : 0;
      for (std::int64_t i = 0; i < 2 * ph.sub.ranks; ++i) local[i] = every;
      Ports marks{local};
      if (!every) coll_schedule(ph.sub, marks);
      for (std::int64_t g = 0; g < ph.groups; ++g)
        for (std::int64_t r = 0; r < ph.sub.ranks; ++r) {
          const std::int64_t at = coll_hier_rank(d, ph.sub, g, r, leader_pe, leader_cube);
          port[2 * at] = static_cast<std::int8_t>(port[2 * at] | local[2 * r]);
          port[2 * at + 1] = static_cast<std::int8_t>(port[2 * at + 1] | local[2 * r + 1]);
        }
    }
  }

  KB_HD KB_NOINLINE void build() {
    const std::int64_t n = coll_vranks(*c);
    for (std::int64_t i = 0; i < n * c->chunks * n; ++i) writer[i] = -1;
    for (std::int64_t i = 0; i < n; ++i) issued[i] = 0;
    links = net::link_count(c->hw);
    coll_schedule(*c, *this);
  }
};
using Sim = SimT<ArFullCaps>;
// The host's state for a level beyond the full one (channels: up to kCollMaxChannelOps ops).
using BigSim = SimT<ArBigCaps>;
// The full scratch with only the evaluators `P` names (ArPath), to compare them.
template <int P>
using SimWith = SimT<ArFullCaps, P>;

using SmallSim = SimT<ArSmallCaps>;
using NestedSim = SimT<ArNestedCaps>;

// The simulator: the level's ops built and simulated (its certificate passes where `Paths`
// has kArPathFast, else its events).
template <class Caps, int P>
KB_HD inline std::int32_t run_events(SimT<Caps, P>& sim) {
  sim.e.reset();
  sim.build();
  sim.e.run((P & kArPathFast) == 0);
  ++sim.levels;
  if (sim.e.path == sim::Path::events) ++sim.event_levels;
  if (sim.e.status != sim::kSimOk) return sim.e.status == sim::kSimTimeOverflow ? kArTimeOverflow : kArTooLarge;
  sim.out.latency_ps = sim.e.latency;
  sim.out.vector_busy_ps = sim.e.class_busy[kVectorClass];
  for (std::int64_t r = 0; r < kCollMaxRanks; ++r) sim.mark_done[r] = sim.e.mark_done[r];
  return kArOk;
}

// A level's evaluation in progress: the figures of the evaluator that took it, whether the
// replay took it (its marks are in place then), whether the general walk took it without
// depths (flat: a structure the replay may record), and the recording's plan.
struct LevelTake {
  AllreduceFigures f;
  const ps_t* marks = nullptr;
  bool walked = false, replayed = false, flat = false;
#if !defined(__CUDA_ARCH__)
  ArRecordPlan plan;
#endif
};

// Where each rank of the level is, its global PE, and its HBM share: the walks and build()
// read them.
template <class Caps, int P>
KB_HD void place_ranks(SimT<Caps, P>& sim, const AllreduceConfig& c, const AllreduceConfig& top) {
  const std::int64_t n = coll_vranks(c);
  for (std::int64_t r = 0; r < n; ++r) {
    sim.nodes[r] = sim.node_of(r);
    sim.pe_of[r] = net::global_pe(c.hw, sim.nodes[r]);
  }
  if (c.buffer == static_cast<std::int64_t>(CollBuffer::hbm)) {
    if (!sim.ports_marked) sim.mark_ports(top), sim.ports_marked = true;
    for (std::int64_t r = 0; r < n; ++r) sim.sharers[r] = sim.hbm_sharers_of(r);
  }
}

// 1. Host: a level of a structure the thread has recorded is replayed (allreduce_replay.h).
template <class Caps, int P>
KB_HD void try_replay(SimT<Caps, P>& sim, const AllreduceConfig& c, const AllreduceConfig& top, LevelTake& t) {
#if !defined(__CUDA_ARCH__)
  if constexpr (Caps::kEvents && (P & kArPathReplay) && (P & kArPathGeneral)) {
    if (sim.hw_place < 0)  // once a launch
      sim.hw_place = static_cast<std::int32_t>(hw_place(replay_cache(), top.hw));
    if (replay_level(c, top, sim.hw_place, &t.f, sim.hier ? sim.mark_done : nullptr, &t.plan)) {
      t.walked = t.replayed = true;  // a hier phase's marks are in mark_done
      ++sim.replayed_levels;
    }
  }
#else
  (void)sim, (void)c, (void)top, (void)t;
#endif
}

// 2. The ring's closed form (allreduce_ring.h), on its domain.
template <class Caps, int P>
KB_HD void try_ring(SimT<Caps, P>& sim, const AllreduceConfig& c, LevelTake& t) {
  if constexpr ((P & kArPathRing) != 0) {
    if (!ring_walk_domain(c)) return;  // a hier phase too: its top, an allreduce
    t.walked = ring_walk(c, sim.walk, sim.nodes, sim.sharers, &t.f);
    if (!t.walked) return;
    ++sim.walked_levels;
    t.marks = sim.walk.mark_done;
#if !defined(__CUDA_ARCH__)
    // A ring the walk took is recorded where the general walk takes it without depths too
    // (what a recording asks of its structure: section 11.11), with the same figures.
    if constexpr (Caps::kEvents) {
      if (t.plan.record) {  // plan.record: never without the replay
        AllreduceFigures g;
        t.flat = general_walk(c, sim.general, sim.nodes, sim.pe_of, sim.sharers, &g, false, true) == WalkOutcome::taken &&
                 std::memcmp(&t.f, &g, sizeof t.f) == 0;
      }
    }
#endif
  }
}

// 3. The general walk (allreduce_walk.h): each try first without depths (sim::serve_flat),
// and where an op needs them, with them; a second try in claim order across groups where the
// state has room.
template <class Caps, int P>
KB_HD void try_general(SimT<Caps, P>& sim, const AllreduceConfig& c, LevelTake& t) {
  if constexpr ((P & kArPathGeneral) != 0) {
    auto walk = [&](bool lazy) {
      WalkOutcome o = (P & kArPathFlat) == 0
                          ? WalkOutcome::deep
                          : general_walk(c, sim.general, sim.nodes, sim.pe_of, sim.sharers, &t.f, lazy, true);
      if (o == WalkOutcome::taken) ++sim.flat_levels, t.flat = true;
      return o == WalkOutcome::deep ? general_walk(c, sim.general, sim.nodes, sim.pe_of, sim.sharers, &t.f, lazy) : o;
    };
    WalkOutcome how = walk(false);
    if (how == WalkOutcome::refused && GeneralWalkT<Caps>::kLazy) how = walk(true);
    t.walked = how == WalkOutcome::taken;
    if (t.walked) t.marks = sim.general.mark_done;
    ++(t.walked ? sim.general_levels : how == WalkOutcome::full ? sim.general_full : sim.general_refused);
  }
}

// A level a replay or walk took: its figures into the result, its marks, and (host) its
// recording where its structure was met before and walked without depths.
template <class Caps, int P>
KB_HD void take_walked(SimT<Caps, P>& sim, const AllreduceConfig& c, const LevelTake& t) {
  AllreduceResult& o = sim.out;
  const AllreduceFigures& f = t.f;
  o.latency_ps = f.latency_ps, o.vector_busy_ps = f.vector_busy_ps, o.transfers = f.transfers;
  o.link_bytes_pe = f.link_bytes_pe, o.link_bytes_cube = f.link_bytes_cube, o.link_bytes_sip = f.link_bytes_sip;
  o.copies_pe = f.copies_pe, o.copies_cube = f.copies_cube, o.copies_sip = f.copies_sip;
  o.vector_ops = f.vector_ops, o.sram_read_bytes = f.sram_read_bytes, o.sram_write_bytes = f.sram_write_bytes;
  o.hbm_read_bytes = f.hbm_read_bytes, o.hbm_write_bytes = f.hbm_write_bytes;
  if (!t.replayed)
    for (std::int64_t r = 0; r < Caps::kRanks; ++r) sim.mark_done[r] = t.marks[r];
  ++sim.levels;
#if !defined(__CUDA_ARCH__)
  if constexpr (Caps::kEvents) {
    if (t.flat && t.plan.record) {  // a structure met before on this thread, taken without depths: recorded
      const AllreduceResult kept = sim.out;
      sim.recorded_levels += record_level(sim, c, t.plan, f, sim.mark_done);
      sim.out = kept;
    }
  }
#else
  (void)c;
#endif
}

// One single-level collective on the scratch: its figures, and per rank (the simulator's
// marks) when its last op, or the last transfer into it, ended. The evaluators are tried in
// order (ArPath), the first that takes the level times it; the small scratch defers a level
// beyond its capacities, or one no walk takes.
template <class Caps, int P>
KB_HD std::int32_t run_level(SimT<Caps, P>& sim, const AllreduceConfig& c, const AllreduceConfig& top) {
  if (coll_vranks(c) > Caps::kRanks) return kStatusDeferred;
  sim.c = &c;
  sim.top = &top;
  sim.ngroup = 0;
  sim.out = AllreduceResult{};
  LevelTake t;
  try_replay(sim, c, top, t);
  if (!t.walked) place_ranks(sim, c, top);
  if (!t.walked) try_ring(sim, c, t);
  if (!t.walked) try_general(sim, c, t);
  if (t.walked) {
    take_walked(sim, c, t);
    return kArOk;
  }
  if constexpr (!Caps::kEvents) {
    return kStatusDeferred;
  } else {
    return run_events(sim);
  }
}

// The model on a config allreduce_check has accepted.
template <class Caps, int P>
KB_HD KB_NOINLINE AllreduceResult run_checked(const AllreduceConfig& c, SimT<Caps, P>& sim) {
  AllreduceResult r{};
  sim.levels = sim.event_levels = sim.walked_levels = sim.general_levels = sim.general_refused = sim.general_full =
      sim.flat_levels = sim.replayed_levels = sim.recorded_levels = 0;
  if (c.ranks > Caps::kHierRanks) {
    r.status = kStatusDeferred;
    return r;
  }
  if (c.level == static_cast<std::int64_t>(CollLevel::hier)) coll_hier_dims(c, &sim.dims);
  // The static HBM share needs every port the launch uses before the first op (the host marks
  // them where a level is not replayed: a replay's costs come with its recording).
  sim.ports_marked = false, sim.hw_place = -1;
#if defined(__CUDA_ARCH__)
  if (c.buffer == static_cast<std::int64_t>(CollBuffer::hbm)) sim.mark_ports(c), sim.ports_marked = true;
#endif
  if (coll_one_level(c)) {
    sim.hier = false;
    const std::int32_t s = ar_detail::run_level(sim, c, c);
    r = sim.out;
    r.status = s;
  } else {
    // Phase by phase (ADR 0009): the groups of a phase are alike and start together, and a
    // rank starts a phase once everything it did in the one before is done, so the whole
    // run is the phases one after another, each from the time its ranks are free.
    CollPhase ph;  // one at a time: the frame holds one phase's config, not five
    std::int64_t leader_pe = 0, leader_cube = 0;
    const int n = coll_hier_phases(c, &ph, &leader_pe, &leader_cube, 0);
    sim.hier = true, sim.leader_pe = leader_pe, sim.leader_cube = leader_cube;
    ps_t start = 0;
    r.status = kArOk;
    for (int k = 0; k < n && r.status == kArOk; ++k) {
      coll_hier_phases(c, &ph, nullptr, nullptr, k);
      const std::int32_t s = ar_detail::run_level(sim, ph.sub, c);
      if (s != kArOk) {
        r.status = s;
        break;
      }
      const AllreduceResult& o = sim.out;
      const std::int64_t g = ph.groups;
      r.latency_ps = imax(r.latency_ps, start + o.latency_ps);
      r.link_bytes_pe += g * o.link_bytes_pe, r.link_bytes_cube += g * o.link_bytes_cube;
      r.link_bytes_sip += g * o.link_bytes_sip;
      r.copies_pe += g * o.copies_pe, r.copies_cube += g * o.copies_cube, r.copies_sip += g * o.copies_sip;
      r.hbm_read_bytes += g * o.hbm_read_bytes, r.hbm_write_bytes += g * o.hbm_write_bytes;
      r.vector_busy_ps += g * o.vector_busy_ps;
      r.transfers += g * o.transfers;
      r.vector_ops += g * o.vector_ops;
      r.sram_read_bytes += g * o.sram_read_bytes, r.sram_write_bytes += g * o.sram_write_bytes;
      ps_t next = 0;
      if (ph.up) {
        next = sim.mark_done[coll_root(ph.sub)];
      } else {
        for (std::int64_t i = 0; i < ph.sub.ranks; ++i) next = imax(next, sim.mark_done[i]);
      }
      start += next;
      if (start > kTimeLimitPs) r.status = kArTimeOverflow;
    }
  }
  if (r.status != kArOk) {
    const std::int32_t s = r.status;
    r = AllreduceResult{};
    r.status = s;
  }
  return r;
}

// The small scratch in a frame of its own, apart from the check's (the device reserves the
// deepest chain of frames, so the check is not nested under the scratch).
KB_HD KB_NOINLINE inline AllreduceResult run_small(const AllreduceConfig& c) {
  SmallSim sim;
  return run_checked(c, sim);
}
KB_HD KB_NOINLINE inline AllreduceResult run_nested(const AllreduceConfig& c) {
  NestedSim sim;
  return run_checked(c, sim);
}

}  // namespace ar_detail

// The model. `sim` is scratch for one evaluation (the full one is large: keep one per
// thread). With the small scratch (ar_detail::SmallSim), the status is kStatusDeferred where
// it cannot hold the config; the result is otherwise the full scratch's.
template <class Caps, int P>
KB_HD AllreduceResult allreduce_model(const AllreduceConfig& c, ar_detail::SimT<Caps, P>& sim) {
  AllreduceResult r{};
  r.status = allreduce_check(c);
  // A level of channels beyond the simulator's ops (coll_max_ops): the host's larger state's.
  if constexpr (Caps::kEvents && Caps::kOps < kCollMaxChannelOps) {
    if (r.status == kArOk && c.channels > 1 && ar_detail::beyond_ops(c, Caps::kOps)) {
      r.status = kStatusDeferred;
      return r;
    }
  }
  if (r.status == kArOk) return ar_detail::run_checked(c, sim);
  sim.levels = sim.event_levels = sim.walked_levels = sim.general_levels = sim.general_refused = sim.general_full =
      sim.flat_levels = sim.replayed_levels = sim.recorded_levels = 0;
  return r;
}

// `channels` auto (0): each count 1, 2, 4, ... 16 the level takes, evaluated by `eval`, and
// the one of least latency (ties: fewer channels) into *channels; its result. Where none is
// valid, 1 channel's. A deferred evaluation (a small state) defers the whole search.
template <class Eval>
KB_HD AllreduceResult coll_best_channels(const AllreduceConfig& c, std::int64_t* channels, const Eval& eval) {
  AllreduceConfig one = c;
  one.channels = 1;
  AllreduceResult best = eval(one);
  *channels = 1;
  if (best.status == kStatusDeferred) return best;
  for (std::int64_t g = 2; g <= kCollMaxChannels; g *= 2) {
    if (!coll_channels_fit(c.hw, c.level, g)) continue;
    AllreduceConfig cc = c;
    cc.channels = g;
    const AllreduceResult r = eval(cc);
    if (r.status == kStatusDeferred) return r;
    if (r.status == kArOk && (best.status != kArOk || r.latency_ps < best.latency_ps)) best = r, *channels = g;
  }
  return best;
}

// The family as the generic sweep engine sees it (src/device/sweep/).
struct AllreduceModel {
  using Config = AllreduceConfig;
  using Result = AllreduceResult;
  static constexpr int kStatuses = kArStatusCount;
  static constexpr bool kCounts = true;
  // Channels auto: the host puts in the count (what a config reports); the device leaves it
  // to the evaluation, which finds the same count and result.
  KB_HD static void complete(Config& c) {
#if !defined(__CUDA_ARCH__)
    if (c.channels == 0) coll_best_channels(c, &c.channels, [](const Config& x) { return evaluate(x); });
#else
    (void)c;
#endif
  }
  // Not inlined: the scratch lives in this one frame, not in every kernel that evaluates.
  // kStatusDeferred on the device for a config of channels beyond the full state
  // (evaluate_host then), never on the host.
  KB_HD KB_NOINLINE static Result evaluate(const Config& c) { return evaluate_in<true>(c); }
  // The full state alone: what a device gives (kStatusDeferred beyond it).
  KB_HD KB_NOINLINE static Result evaluate_full(const Config& c) { return evaluate_in<false>(c); }
  // `kBig`: on the host, the larger state for what the full one defers.
  template <bool kBig>
  KB_HD static Result evaluate_in(const Config& c) {
    if (c.channels == 0) return evaluate_auto(c, kBig);
    ar_detail::Sim sim;
    Result r = allreduce_model(c, sim);
#if !defined(__CUDA_ARCH__)
    if (kBig && r.status == kStatusDeferred) r = evaluate_big(c);
#endif
    return r;
  }
  // Channels auto: its own frame, off the path of a config that names its channels.
  KB_HD KB_NOINLINE static Result evaluate_auto(const Config& c, bool big) {
    ar_detail::Sim sim;
    std::int64_t g;
    Result r = coll_best_channels(c, &g, [&](const Config& x) { return allreduce_model(x, sim); });
#if !defined(__CUDA_ARCH__)
    if (big && r.status == kStatusDeferred) r = evaluate_big(c);
#else
    (void)big;
#endif
    return r;
  }
#if !defined(__CUDA_ARCH__)
  // The host's evaluation of what the device defers (two_stage.h's third stage).
  static Result evaluate_host(const Config& c) { return evaluate(c); }
  // The larger state, once per thread (about 0.9 MB).
  static Result evaluate_big(const Config& c) {
    thread_local std::unique_ptr<ar_detail::BigSim> big;
    if (!big) big = std::make_unique<ar_detail::BigSim>();
    if (c.channels != 0) return allreduce_model(c, *big);
    std::int64_t g;
    return coll_best_channels(c, &g, [&](const Config& x) { return allreduce_model(x, *big); });
  }
#endif
  // The same in at most 16 KiB of scratch, or kStatusDeferred (src/device/sweep/two_stage.h).
  KB_HD KB_NOINLINE static Result evaluate_small(const Config& c) {
    return checked_by(c, [](const Config& x) { return ar_detail::run_small(x); });
  }
  // The same in the nested state (ar_detail::ArNestedCaps), another model's first stage.
  KB_HD KB_NOINLINE static Result evaluate_nested(const Config& c) {
    return checked_by(c, [](const Config& x) { return ar_detail::run_nested(x); });
  }
  // The check, then `run` (a state in a frame of its own) on a config it accepts; channels
  // auto over every count.
  template <class Run>
  KB_HD static Result checked_by(const Config& c, const Run& run) {
    auto one = [&](const Config& x) {
      Result r{};
      r.status = allreduce_check(x);
      return r.status == kArOk ? run(x) : r;
    };
    std::int64_t g;
    return c.channels != 0 ? one(c) : coll_best_channels(c, &g, one);
  }
  // Pareto cost `kind` (AllreduceCost) of a valid config.
  KB_HD static std::int64_t cost(std::int32_t kind, const Config& c, const Result& r) {
    switch (kind) {
      case kArCostRanks: return c.ranks;
      case kArCostLinkBytes: return r.link_bytes_pe + r.link_bytes_cube + r.link_bytes_sip;
      case kArCostHbm: return r.hbm_read_bytes + r.hbm_write_bytes;
      default: return 0;
    }
  }
  KB_HD static Actions actions(const Config&, const Result& r) {
    return Actions{0,
                   r.vector_ops,
                   r.sram_read_bytes,
                   r.sram_write_bytes,
                   r.hbm_read_bytes,
                   r.hbm_write_bytes,
                   r.link_bytes_pe,
                   r.link_bytes_cube,
                   r.link_bytes_sip};
  }
  KB_HD static Energy energy(const Config& c, const Result& r) { return energy_of(c.hw, actions(c, r), r.latency_ps); }
};

}  // namespace kb
