// The allreduce model's fast path without the op graph, for every algorithm: the transfers of
// one level are walked as coll_schedule lists them, and each op the model would emit into the
// device simulator (allreduce_model.h, Sim::send and Sim::receive: the same ops on the same
// resources, with the same issuers and issue indices) is served at once by the rule of the
// simulator's first pass (src/device/sim/fast_rule.h), in id order except where a group's
// sends share an arbitrated resource: their ops are then served in the order of their claims.
// The walk is the first pass where that pass certifies its schedule, and takes more (docs/
// model.md sections 11.8 and 11.10). Where its order fails the certificate, a second try
// serves in claim order across groups too (the HBM writes of sums wait, pending, until an
// op needs them); where that fails as well, or a table is full, the model builds the ops and
// runs the simulator. What it
// keeps: per link and per rank the resource's state, per piece when it was last written.
// Pure KB_HD code: fixed arrays, no allocation.
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/network.h"
#include "../../common/units.h"
#include "../../sim/arbitration.h"
#include "../../sim/fast_rule.h"
#include "allreduce_ring.h"
#include "collective.h"
#include "../vector.h"

namespace kb {
namespace ar_detail {

template <class Caps>
struct GeneralWalkT {
  static constexpr std::int32_t kSlots = Caps::kSlots;     // links, by open addressing on their ids
  static constexpr std::int32_t kMaxLinks = Caps::kLinks;  // distinct links of one level; more: the simulator runs
  // Distinct (sender, receiver) pairs of one level, and their hops: each route's hops are ops
  // of at least one transfer, and allreduce_check holds a level to kCollMaxOps ops, so with the
  // full capacities these never fill (the walk checks anyway).
  static constexpr std::int32_t kRoutes = Caps::kRoutes;
  static constexpr std::int32_t kPool = Caps::kPool;
  static constexpr std::int32_t kRanks = Caps::kRanks;
  static constexpr std::int32_t kGroup = 2 * kRanks;

  // An arbitrated resource: its fast-path state and the claim it served last (ready < 0: none).
  struct Arb {
    sim::FastRes f;
    sim::Claim last;
  };
  struct Link {
    Arb a;
    ps_t lat;
    std::int64_t bandwidth_gbps;
    net::LinkKind kind;
    std::int32_t seen;        // the last group with a send over it
    std::int64_t memo_bytes;  // the last transfer's size over it, and its busy time
    ps_t memo_busy;
  };
  // A route between two ranks: its links (pool[begin .. begin + len)), and with HBM buffers
  // the last transfer's size over it and its chain's busy time.
  struct Route {
    std::int32_t begin, len;
    std::int64_t memo_bytes;
    ps_t memo_chain;
  };
  // A rank's DMA queue and vector engine (in order) and HBM write port (arbitrated).
  struct Rank {
    sim::FastRes dma, vec;
    Arb port;
    std::int32_t issued;  // ops it has issued: the next one's issue index
    std::int32_t seen;    // the last group with a send into its HBM write port
  };

  std::int32_t slot_key[kSlots];  // the link id in each slot (-1: empty)
  std::int16_t slot_link[kSlots];
  std::int32_t nlinks, nroutes, npool;
  Link links[kMaxLinks];
  std::int16_t pair_route[kRanks * kRanks];  // per (sender, receiver): its route (-1: none yet)
  Route routes[kRoutes];
  std::int16_t pool[kPool];
  Rank ranks[kRanks];
  ps_t written_t[Caps::kPieces];  // per (rank, chunk, piece): the end of its last writer (-1: never)
  std::int16_t written_d[Caps::kPieces];
  ps_t mark_done[kRanks];  // per rank, as the simulator's marks
  CollXfer group[kGroup];
  std::int32_t group_chunk[kGroup];
  std::int64_t group_bytes[kGroup];  // each transfer's size
  // While a group's sends are served: each one's next op (when it is ready, its issue index,
  // which of its ops), its route and its chain's busy time, and the sends ordered by the claim
  // of their next op (a binary heap). Then: when each transfer landed.
  sim::Stamp arrival[kGroup];
  std::int32_t group_issue[kGroup];
  ps_t group_chain[kGroup];
  // The walk's second try: in claim order across groups. The HBM write of a receive's sum
  // then waits in the heap (a pending write) until an op needs its pieces, the level ends or
  // the pool of pending writes is full (the least op in the heap is served to make room).
  static constexpr std::int32_t kPending = Caps::kPending > 0 ? Caps::kPending : 1;
  static constexpr bool kLazy = Caps::kPending > 0;
  struct Pending {
    sim::Stamp ready;
    ps_t chain;
    std::int32_t issue;
    std::int16_t dst, ch, k0, k1;
  };
  Pending pending[kPending];
  std::int16_t pending_free[kPending];
  std::int32_t npending_free, nheap, scans;
  std::int16_t group_stage[kGroup], group_route[kGroup], heap[kGroup + kPending];
  // Where each piece of each chunk begins (coll_piece_lo), where the level has at most
  // kPieceTable of them (else each is computed when asked for).
  static constexpr std::int32_t kPieceTable = Caps::kPieceTable;
  std::int64_t piece_lo[kPieceTable];
  bool piece_table;
  std::int32_t ngroup, groups;  // groups: those walked so far
};
using GeneralWalk = GeneralWalkT<ArFullCaps>;

// One level walked: the config (one level, or a hier phase), where each rank is, its global
// PE (the issuer's key in a claim) and its HBM share. kFlat: without depths (sim::serve_flat);
// where an op would need them, the walk stops (`deep`) and the level is walked again with them.
template <class Caps, bool kFlat>
struct LevelWalk {
  using GeneralWalk = GeneralWalkT<Caps>;
  GeneralWalk* w;
  const AllreduceConfig* c;
  const net::Node* nodes;
  const std::int64_t* pe_of;
  const std::int64_t* sharers;
  AllreduceFigures f{};
  bool ok = true;
  bool full = false;  // what failed was a table's size, not the certificate
  bool lazy = false;  // the second try: claim order across groups
  bool deep = false;  // kFlat: an op needed depths (WalkOutcome::deep)
  // The last add's cost, by its values (and with HBM buffers the receiver's share): a level's
  // pieces mostly have one size, and each cost takes several divisions.
  std::int64_t add_values = -1, chain_values = -1, chain_sharers = -1;
  ps_t add_cost = 0, chain_cost = 0;

  KB_HD bool hbm() const { return c->buffer == static_cast<std::int64_t>(CollBuffer::hbm); }
  KB_HD ps_t hbm_lat() const { return c->hw.hbm_latency_ns * kPsPerNs; }
  KB_HD std::int32_t slot(std::int64_t r, std::int64_t ch, std::int64_t k) const {
    return static_cast<std::int32_t>((r * c->chunks + ch) * coll_vranks(*c) + k);
  }

  // The link of hop `h` (its state created on first use), or -1 where the table is full.
  KB_HD std::int32_t link_of(const net::Hop& h) {
    const std::int32_t id = static_cast<std::int32_t>(h.link);
    std::int32_t i = static_cast<std::int32_t>((static_cast<std::uint32_t>(id) * 2654435761u) >> 23) & (GeneralWalk::kSlots - 1);
    while (w->slot_key[i] != -1 && w->slot_key[i] != id) i = (i + 1) & (GeneralWalk::kSlots - 1);
    if (w->slot_key[i] == id) return w->slot_link[i];
    if (w->nlinks >= GeneralWalk::kMaxLinks) return -1;
    w->slot_key[i] = id;
    w->slot_link[i] = static_cast<std::int16_t>(w->nlinks);
    typename GeneralWalk::Link& l = w->links[w->nlinks];
    l.a.f = sim::FastRes{};
    l.a.last = sim::Claim{-1, 0, 0};
    l.lat = h.latency_ns * kPsPerNs;
    l.bandwidth_gbps = h.bandwidth_gbps;
    l.kind = h.kind;
    l.memo_bytes = -1;
    l.seen = 0;
    return w->nlinks++;
  }

  // Serves rank `by`'s next op (in its program order) on a resource, ready at `ready`, and
  // counts its end for the latency and `by`'s mark (and `also`'s, if not negative). Returns
  // false where the certificate fails.
  KB_HD bool serve(sim::FastRes& fr, typename GeneralWalk::Arb* arb, ps_t lat, std::int64_t by, const sim::Stamp& ready,
                   ps_t busy, sim::Served* s, std::int64_t also = -1) {
    return serve_at(fr, arb, lat, by, w->ranks[by].issued++, ready, busy, s, also);
  }
  // The same for the op of `by` whose issue index is `issue`.
  KB_HD KB_INLINE bool serve_at(sim::FastRes& fr, typename GeneralWalk::Arb* arb, ps_t lat, std::int64_t by, std::int32_t issue,
                      const sim::Stamp& ready, ps_t busy, sim::Served* s, std::int64_t also = -1) {
    const sim::Claim claim{ready.t, pe_of[by], issue};
    const sim::Claim* last = arb && arb->last.ready >= 0 ? &arb->last : nullptr;
    if constexpr (kFlat) {
      // An op that holds its resource for no time releases it at its start's instant, at a
      // depth (none does today: every piece holds a value, and every duration rounds up).
      if (busy == 0) {
        deep = true;
        return false;
      }
      if (sim::serve_flat(fr, arb != nullptr, lat, last, claim, busy, s) != sim::Serve::ok) return false;
    } else if (sim::serve_fast(fr, arb != nullptr, lat, last, claim, ready.d, busy, s) != sim::Serve::ok) {
      return false;
    }
    if (arb) arb->last = claim;
    f.latency_ps = imax(f.latency_ps, s->end);
    w->mark_done[by] = imax(w->mark_done[by], s->end);
    if (also >= 0) w->mark_done[also] = imax(w->mark_done[also], s->end);
    return true;
  }
  // What waits for op `s` through a head dependency: ready once its head has crossed.
  KB_HD static sim::Stamp head_of(const sim::Served& s, ps_t lat) {
    sim::Stamp h;
    if constexpr (kFlat) h.t = s.start + lat;
    else h.join(s.start + lat, lat == 0 ? s.at : 0);
    return h;
  }
  KB_HD static sim::Stamp end_of(const sim::Served& s) {
    sim::Stamp e;
    e.join(s.end, s.end_depth);
    return e;
  }
  // Ready once pieces [k0, k1) of a chunk on rank r have been written (joined into `at`).
  KB_HD void pieces_ready(sim::Stamp& at, std::int64_t r, std::int64_t ch, std::int64_t k0, std::int64_t k1) const {
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int32_t i = slot(r, ch, k);
      if constexpr (kFlat) at.t = imax(at.t, w->written_t[i]);
      else if (w->written_t[i] >= 0) at.join(w->written_t[i], w->written_d[i]);
    }
  }
  KB_HD void write_pieces(const sim::Stamp& s, std::int64_t r, std::int64_t ch, std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int32_t i = slot(r, ch, k);
      w->written_t[i] = s.t;
      if constexpr (!kFlat) w->written_d[i] = static_cast<std::int16_t>(s.d);
    }
  }

  // The route from rank `src` to rank `dst` (found once per level), or null where a table is full.
  KB_HD typename GeneralWalk::Route* route_of(std::int64_t src, std::int64_t dst) {
    std::int16_t& at = w->pair_route[src * coll_vranks(*c) + dst];
    if (at >= 0) return &w->routes[at];
    if (w->nroutes >= GeneralWalk::kRoutes) return nullptr;
    typename GeneralWalk::Route& r = w->routes[w->nroutes];
    r.begin = w->npool, r.len = 0, r.memo_bytes = -1;
    bool fits = true;
    net::for_each_hop(c->hw, nodes[src], nodes[dst], [&](const net::Hop& hop) {
      const std::int32_t l = fits && w->npool < GeneralWalk::kPool ? link_of(hop) : -1;
      if (l < 0) {
        fits = false;
        return;
      }
      w->pool[w->npool++] = static_cast<std::int16_t>(l);
      ++r.len;
    });
    if (!fits) return nullptr;
    at = static_cast<std::int16_t>(w->nroutes++);
    return &r;
  }
  KB_HD static ps_t link_busy(typename GeneralWalk::Link& l, std::int64_t nb) {
    if (l.memo_bytes != nb) l.memo_bytes = nb, l.memo_busy = transfer_ps(nb, l.bandwidth_gbps);
    return l.memo_busy;
  }

  // Heap entries: i, send i's next op; kWrite + p, pending write p.
  static constexpr std::int32_t kWrite = GeneralWalk::kGroup;
  // The claim of an entry's op.
  KB_HD sim::Claim next_claim(std::int32_t e) const {
    if (e >= kWrite) {
      const typename GeneralWalk::Pending& p = w->pending[e - kWrite];
      return sim::Claim{p.ready.t, pe_of[p.dst], p.issue};
    }
    return sim::Claim{w->arrival[e].t, pe_of[w->group[e].src], w->group_issue[e]};
  }
  KB_HD void heap_push(std::int32_t i, std::int32_t& m) {
    std::int32_t at = m++;
    while (at > 0 && sim::goes_first(next_claim(i), next_claim(w->heap[(at - 1) / 2]))) {
      w->heap[at] = w->heap[(at - 1) / 2];
      at = (at - 1) / 2;
    }
    w->heap[at] = static_cast<std::int16_t>(i);
  }
  KB_HD std::int32_t heap_pop(std::int32_t& m) {
    const std::int32_t top = w->heap[0], last = w->heap[--m];
    std::int32_t at = 0;
    for (std::int32_t l = 1; l < m; l = 2 * at + 1) {
      const std::int32_t k = l + 1 < m && sim::goes_first(next_claim(w->heap[l + 1]), next_claim(w->heap[l])) ? l + 1 : l;
      if (!sim::goes_first(next_claim(w->heap[k]), next_claim(last))) break;
      w->heap[at] = w->heap[k];
      at = k;
    }
    w->heap[at] = static_cast<std::int16_t>(last);
    return top;
  }

  // Send i's route (null where a table is full: `full` is then set) and, with HBM buffers,
  // its chain's busy time (every op of the chain holds its resource for the slowest's time).
  KB_HD typename GeneralWalk::Route* route_chain(std::int32_t i, ps_t* chain) {
    const CollXfer& x = w->group[i];
    const std::int64_t nb = w->group_bytes[i];
    typename GeneralWalk::Route* route = route_of(x.src, x.dst);
    *chain = 0;
    if (!route) {
      full = true;
      return nullptr;
    }
    if (hbm()) {
      if (route->memo_bytes != nb) {
        const std::int16_t* hops = w->pool + route->begin;
        route->memo_bytes = nb;
        route->memo_chain = xfer::chain_ps(c->hw, nb, sharers[x.src], sharers[x.dst], [&](auto&& visit) {
          for (std::int32_t k = 0; k < route->len; ++k) visit(link_busy(w->links[hops[k]], nb));
        });
      }
      *chain = route->memo_chain;
    }
    return route;
  }

  // A send not started yet (group_stage; started: its next op's index; landed: -1).
  static constexpr std::int16_t kNotStarted = -2;
  // Send i's route and chain, and its ops' issue indices (its HBM read, its hops and its HBM
  // write, in the model's order); null where a table is full.
  KB_HD const typename GeneralWalk::Route* prepare_send(std::int32_t i) {
    ps_t chain = 0;
    const typename GeneralWalk::Route* route = route_chain(i, &chain);
    if (!route) return nullptr;
    std::int32_t& issued = w->ranks[w->group[i].src].issued;
    w->group_route[i] = static_cast<std::int16_t>(route - w->routes);
    w->group_chain[i] = chain;
    w->group_issue[i] = issued;
    issued += route->len + (hbm() ? 2 : 0);
    w->group_stage[i] = kNotStarted;
    return route;
  }
  // The transfer agent's policy (src/device/sim/transfer.h) for send i: each op served at
  // once by the fast rule, from the state the walk keeps. Its HBM read pauses the send (the
  // group serves every read first); with !kAll so does each hop but the last (the heap then
  // picks the send whose next op has the least claim).
  template <bool kAll>
  struct Serve {
    LevelWalk& lw;
    std::int32_t i;
    std::int64_t src, dst, nb;
    std::int32_t issue;
    sim::Stamp at;
    sim::Served s{};
    KB_HD ps_t own_ps(const xfer::Step&) const { return 0; }  // unused: HBM ends give the chain
    KB_HD ps_t own_ps(const xfer::Step&, typename GeneralWalk::Link& l) const { return link_busy(l, nb); }
    KB_HD KB_INLINE xfer::Go serve(const xfer::Step& st, ps_t busy) {
      if (st.role == xfer::Role::read) {
        if (!lw.serve_at(lw.w->ranks[src].dma, nullptr, lw.hbm_lat(), src, issue++, at, busy, &s)) return xfer::Go::fail;
        at = head_of(s, lw.hbm_lat());
        lw.f.hbm_read_bytes += nb;
        return xfer::Go::pause;
      }
      typename GeneralWalk::Rank& d = lw.w->ranks[dst];  // the write into the receiver's buffer
      if (!lw.serve_at(d.port.f, &d.port, lw.hbm_lat(), src, issue++, at, busy, &s, dst)) return xfer::Go::fail;
      lw.f.hbm_write_bytes += nb;
      return xfer::Go::on;
    }
    KB_HD KB_INLINE xfer::Go serve(const xfer::Step& st, typename GeneralWalk::Link& l, ps_t busy) {
      if (!lw.serve_at(l.a.f, &l.a, l.lat, src, issue++, at, busy, &s, st.last ? dst : -1)) return xfer::Go::fail;
      count_copy(lw.f, l.kind, nb);
      if (st.last) {
        lw.f.sram_read_bytes += nb, lw.f.sram_write_bytes += nb;
        return xfer::Go::on;
      }
      // The next hop ready in a later round of this instant: at depth 1 where it is a
      // copy-queue in-port, every claim on which comes so (its out-port starts in round 1).
      if (kFlat && l.lat == 0 && l.kind != net::LinkKind::ipcq_out) {
        lw.deep = true;
        return xfer::Go::fail;
      }
      at = head_of(s, l.lat);
      return kAll ? xfer::Go::on : xfer::Go::pause;
    }
  };
  // Send i's ops from its stage on (group_stage: the route's hop; the route's length: the
  // HBM write) through the agent.
  template <bool kAll>
  KB_HD xfer::Go send_from(Serve<kAll>& p, std::int32_t stage) {
    const typename GeneralWalk::Route& route = w->routes[w->group_route[p.i]];
    const std::int16_t* hops = w->pool + route.begin;
    const bool h = hbm();
    return xfer::send(
        p,
        [&](std::int32_t k0, auto&& visit) {
          for (std::int32_t k = k0; k < route.len; ++k)
            if (!visit(k, w->links[hops[k]])) return;
        },
        route.len, h, h ? w->group_chain[p.i] : xfer::kOwn, stage < 0 ? 0 : stage + (h ? 1 : 0));
  }

  // Starts send i once its pieces are written: its HBM read; then its next op is ready
  // (arrival[i]), or with nothing to cross it has landed (group_stage[i] = -1).
  KB_HD bool start_send(std::int32_t i) {
    const CollXfer& x = w->group[i];
    const std::int64_t nb = w->group_bytes[i];
    const bool h = hbm();
    Serve<false> p{*this, i, x.src, x.dst, nb, w->group_issue[i], sim::Stamp{}};
    pieces_ready(p.at, x.src, w->group_chunk[i], x.k0, x.k1);
    if (h && send_from(p, -1) == xfer::Go::fail) return false;
    w->group_issue[i] = p.issue;
    w->arrival[i] = p.at;
    w->group_stage[i] = 0;
    if (w->routes[w->group_route[i]].len + (h ? 1 : 0) == 0) {  // nothing to cross: landed at once
      w->arrival[i] = end_of(sim::Served{});
      f.sram_read_bytes += nb, f.sram_write_bytes += nb;
      ++f.transfers;
      w->group_stage[i] = -1;
    }
    return true;
  }

  // Serves send i's next op (a hop of its route, or the HBM write), or with kAll every op it
  // has left: false where the certificate fails. `more`: the send has ops left.
  template <bool kAll>
  KB_HD bool send_ops(std::int32_t i, bool* more) {
    const std::int32_t stage = w->group_stage[i], issue = w->group_issue[i];
    Serve<kAll> p{*this, i, w->group[i].src, w->group[i].dst, w->group_bytes[i], issue, w->arrival[i]};
    const xfer::Go g = send_from(p, stage);
    *more = g == xfer::Go::pause;
    if (g == xfer::Go::fail) return false;
    w->group_stage[i] = static_cast<std::int16_t>(stage + (p.issue - issue));
    w->group_issue[i] = p.issue;
    if (*more) {
      w->arrival[i] = p.at;
      return true;
    }
    ++f.transfers;
    w->arrival[i] = end_of(p.s);
    return true;
  }

  // The senders' halves of a group (Sim::send: each transfer an HBM read, the route's hops
  // cut-through, an HBM write), with the ops in the model's issue order. First every send's
  // HBM read: its rank's DMA queue serves in program order, and no other op of the group
  // touches it. The later ops are all on arbitrated resources. Where no two sends of the
  // group share one, each send's are served in turn (the order of the group's ops on a
  // resource does not arise). Otherwise one at a time, always the one with the least claim
  // among the sends' next ops (docs/model.md section 11.10): an op's successor is ready no
  // earlier than it, so every resource meets the group's claims in goes_first order wherever
  // the events allow it; where they do not, the certificate fails here.
  KB_HD bool send_group(std::int32_t n) {
    const std::int32_t gen = ++w->groups;
    bool shared = false;
    for (std::int32_t i = 0; i < n; ++i) {
      const typename GeneralWalk::Route* route = prepare_send(i);
      if (!route) return false;
      const std::int16_t* hops = w->pool + route->begin;
      for (std::int32_t k = 0; k < route->len; ++k) {
        typename GeneralWalk::Link& l = w->links[hops[k]];
        shared |= l.seen == gen;
        l.seen = gen;
      }
      if (hbm()) {
        typename GeneralWalk::Rank& d = w->ranks[w->group[i].dst];
        shared |= d.seen == gen;
        d.seen = gen;
      }
      if (!start_send(i)) return false;
    }
    bool more = false;
    if (!shared) {
      for (std::int32_t i = 0; i < n; ++i) {
        if (w->group_stage[i] < 0) continue;
        if (!send_ops<true>(i, &more)) return false;
      }
      return true;
    }
    // The heap of the second try, with no pending write in it: serve_least serves sends alone.
    for (std::int32_t i = 0; i < n; ++i)
      if (w->group_stage[i] >= 0) heap_push(i, w->nheap);
    std::int32_t landed = 0;
    while (w->nheap > 0)
      if (!serve_least(&landed)) return false;
    return true;
  }

  // The receiver's half (Sim::receive): take the values as they landed, or add them in (on
  // the vector engine, or streamed from HBM through it). With HBM buffers the chain's last
  // op, the write of the sum, is left to the caller: `waits` says so, and arrival[i],
  // group_issue[i] and group_chain[i] then hold its ready time, issue index and busy time.
  KB_HD bool receive_head(std::int32_t i, bool* waits) {
    const std::int64_t ch = w->group_chunk[i], nb = w->group_bytes[i];
    const CollXfer& x = w->group[i];
    *waits = false;
    if (!x.reduce) {
      write_pieces(w->arrival[i], x.dst, ch, x.k0, x.k1);
      return true;
    }
    const std::int64_t values = nb / 2;
    add_figures(f, hbm(), nb);
    ps_t busy;
    if (!hbm()) {
      if (values != add_values) add_values = values, add_cost = xfer::add_ps(c->hw, values);
      busy = add_cost;
    } else {
      if (values != chain_values || sharers[x.dst] != chain_sharers)
        chain_values = values, chain_sharers = sharers[x.dst], chain_cost = xfer::add_chain_ps(c->hw, values, chain_sharers);
      busy = chain_cost;
    }
    Add p{*this, i, ch, x, w->arrival[i]};
    pieces_ready(p.ready, x.dst, ch, x.k0, x.k1);
    if (xfer::reduce_at(p, hbm(), busy) == xfer::Go::fail) return false;
    *waits = p.waits;
    return true;
  }
  // The agent's policy for a receiver's add (xfer::reduce_at): with SRAM ends the add on its
  // vector engine; with HBM ends the read of both operands (DMA queue) and the add, served at
  // once, and the write of the sum left to the caller: arrival[i], group_issue[i] and
  // group_chain[i] then hold its ready time, issue index and busy time (`waits`).
  struct Add {
    LevelWalk& lw;
    std::int32_t i;
    std::int64_t ch;
    const CollXfer& x;
    sim::Stamp ready;
    bool waits = false;
    sim::Served s{};
    KB_HD KB_INLINE xfer::Go serve_add(const xfer::Step& st, ps_t busy) {
      typename GeneralWalk::Rank& d = lw.w->ranks[x.dst];
      if (st.role == xfer::Role::read) {
        if (!lw.serve(d.dma, nullptr, lw.hbm_lat(), x.dst, ready, busy, &s)) return xfer::Go::fail;
        ready = head_of(s, lw.hbm_lat());
        return xfer::Go::on;
      }
      if (st.role == xfer::Role::hop) {
        if (!lw.serve(d.vec, nullptr, 0, x.dst, ready, busy, &s)) return xfer::Go::fail;
        lw.f.vector_busy_ps += busy;
        if (st.last) lw.write_pieces(end_of(s), x.dst, ch, x.k0, x.k1);
        else ready = head_of(s, 0);
        return xfer::Go::on;
      }
      lw.w->arrival[i] = ready;
      lw.w->group_issue[i] = d.issued++;
      lw.w->group_chain[i] = busy;
      waits = true;
      return xfer::Go::pause;
    }
  };
  // The write of a sum into rank `dst`'s HBM (its pieces [k0, k1) of chunk ch).
  KB_HD bool write_sum(std::int64_t dst, std::int64_t ch, std::int64_t k0, std::int64_t k1, const sim::Stamp& ready,
                       std::int32_t issue, ps_t chain) {
    typename GeneralWalk::Rank& d = w->ranks[dst];
    sim::Served s{};
    if (!serve_at(d.port.f, &d.port, hbm_lat(), dst, issue, ready, chain, &s)) return false;
    write_pieces(end_of(s), dst, ch, k0, k1);
    return true;
  }
  KB_HD bool receive(std::int32_t i) {
    bool waits = false;
    if (!receive_head(i, &waits)) return false;
    const CollXfer& x = w->group[i];
    return !waits || write_sum(x.dst, w->group_chunk[i], x.k0, x.k1, w->arrival[i], w->group_issue[i], w->group_chain[i]);
  }

  // ---- the second try: claim order across groups ----
  static constexpr ps_t kPendingMark = -2;  // written_t of a piece whose write is pending
  // Serves the heap's least op: a send's next op, or a pending write.
  KB_HD bool serve_least(std::int32_t* landed) {
    const std::int32_t e = heap_pop(w->nheap);
    if (e >= kWrite) {
      const typename GeneralWalk::Pending p = w->pending[e - kWrite];
      w->pending_free[w->npending_free++] = static_cast<std::int16_t>(e - kWrite);
      return write_sum(p.dst, p.ch, p.k0, p.k1, p.ready, p.issue, p.chain);
    }
    bool more = false;
    if (!send_ops<false>(e, &more)) return false;
    if (more) heap_push(e, w->nheap);
    else ++*landed;
    return true;
  }
  // Serves the heap's least ops until no piece of [k0, k1) of chunk ch on rank r waits for
  // a pending write.
  KB_HD bool settle(std::int64_t r, std::int64_t ch, std::int64_t k0, std::int64_t k1, std::int32_t* landed) {
    while (pieces_pending(r, ch, k0, k1))
      if (w->nheap == 0 || !serve_least(landed)) return false;
    return true;
  }
  KB_HD bool pieces_pending(std::int64_t r, std::int64_t ch, std::int64_t k0, std::int64_t k1) const {
    for (std::int64_t k = k0; k < k1; ++k)
      if (w->written_t[slot(r, ch, k)] == kPendingMark) return true;
    return false;
  }
  // Starts, in emission order, every send of the group whose pieces wait for no pending write
  // and whose rank has started every send before it (its DMA queue serves in program order):
  // its HBM read, then its next op joins the heap.
  KB_HD bool start_sends(std::int32_t n, std::int32_t* landed) {
    const std::int32_t scan = ++w->scans;
    for (std::int32_t i = 0; i < n; ++i) {
      if (w->group_stage[i] != kNotStarted) continue;
      const CollXfer& x = w->group[i];
      typename GeneralWalk::Rank& from = w->ranks[x.src];
      if (from.seen == -scan) continue;  // an earlier send of its rank waits
      if (pieces_pending(x.src, w->group_chunk[i], x.k0, x.k1)) {
        from.seen = -scan;
        continue;
      }
      if (!start_send(i)) return false;
      if (w->group_stage[i] < 0) ++*landed;
      else heap_push(i, w->nheap);
    }
    return true;
  }
  KB_HD bool flush_lazy(std::int32_t n) {
    for (std::int32_t i = 0; i < n; ++i)
      if (!prepare_send(i)) return false;
    std::int32_t landed = 0, unused = 0;
    if (!start_sends(n, &landed)) return false;
    while (landed < n) {
      if (w->nheap == 0) return false;
      const bool write = w->heap[0] >= kWrite;
      if (!serve_least(&landed)) return false;
      if (write && !start_sends(n, &landed)) return false;  // its pieces may be what a send waited for
    }
    for (std::int32_t i = 0; i < n; ++i) {
      const CollXfer& x = w->group[i];
      const std::int64_t ch = w->group_chunk[i];
      if (!settle(x.dst, ch, x.k0, x.k1, &unused)) return false;
      bool waits = false;
      if (!receive_head(i, &waits)) return false;
      if (!waits) continue;
      while (w->npending_free == 0)
        if (w->nheap == 0 || !serve_least(&unused)) return false;
      const std::int32_t p = w->pending_free[--w->npending_free];
      w->pending[p] = typename GeneralWalk::Pending{w->arrival[i], w->group_chain[i], w->group_issue[i],
                                                    static_cast<std::int16_t>(x.dst), static_cast<std::int16_t>(ch),
                                                    static_cast<std::int16_t>(x.k0), static_cast<std::int16_t>(x.k1)};
      for (std::int64_t k = x.k0; k < x.k1; ++k) w->written_t[slot(x.dst, ch, k)] = kPendingMark;
      heap_push(kWrite + p, w->nheap);
    }
    return true;
  }
  // The level's end: every pending write served.
  KB_HD bool drain() {
    std::int32_t unused = 0;
    while (w->nheap > 0)
      if (!serve_least(&unused)) return false;
    return true;
  }

  // The first value of piece k of chunk ch.
  KB_HD std::int64_t lo(std::int64_t ch, std::int64_t k) const {
    return piece_lo_at(*c, w->piece_lo, w->piece_table, ch, k);
  }

  // Sink of coll_schedule (as Sim's): a group's sends, then its receives.
  KB_HD void xfer(std::int64_t ch, const CollXfer& x) {
    w->group[w->ngroup] = x;
    w->group_chunk[w->ngroup] = static_cast<std::int32_t>(ch);
    w->group_bytes[w->ngroup] = 2 * (lo(ch, x.k1) - lo(ch, x.k0));
    ++w->ngroup;
  }
  KB_HD KB_NOINLINE void flush() {
    const std::int32_t n = w->ngroup;
    w->ngroup = 0;
    if (!ok) return;
    if (lazy) {
      ok = flush_lazy(n);
      return;
    }
    ok = send_group(n);
    for (std::int32_t i = 0; i < n && ok; ++i) ok = receive(i);
  }
};

// deep: a walk without depths (`flat`) met an op that needs them; walked with depths, the
// level may be taken.
enum class WalkOutcome : std::int32_t { taken, refused, full, deep };

// Walks one level of `c` (not hier: a level, or a hier phase) over `w`. refused: the
// simulator's first pass would not certify its schedule (the walk is that pass, so the
// simulator's second pass or its events decide); full: a table of the walk is too small for
// the level. Either way the model builds the ops instead.
template <class Caps, bool kFlat>
KB_HD KB_NOINLINE WalkOutcome general_walk_as(const AllreduceConfig& c, GeneralWalkT<Caps>& w, const net::Node* nodes,
                                              const std::int64_t* pe_of, const std::int64_t* sharers,
                                              AllreduceFigures* out, bool lazy) {
  using GeneralWalk = GeneralWalkT<Caps>;
  const std::int64_t n = coll_vranks(c);  // ranks and pieces of a chunk, every channel's
  if (n > Caps::kRanks || n * c.chunks * n > Caps::kPieces) return WalkOutcome::full;
  for (std::int32_t i = 0; i < GeneralWalk::kSlots; ++i) w.slot_key[i] = -1;
  w.nlinks = 0, w.nroutes = 0, w.npool = 0, w.ngroup = 0, w.groups = 0;
  for (std::int64_t i = 0; i < n * n; ++i) w.pair_route[i] = -1;
  for (std::int64_t r = 0; r < n; ++r) {
    typename GeneralWalk::Rank& k = w.ranks[r];
    k.dma = sim::FastRes{}, k.vec = sim::FastRes{};
    k.port.f = sim::FastRes{}, k.port.last = sim::Claim{-1, 0, 0};
    k.issued = 0, k.seen = 0;
  }
  for (std::int64_t r = 0; r < Caps::kRanks; ++r) w.mark_done[r] = 0;
  for (std::int64_t i = 0; i < n * c.chunks * n; ++i) w.written_t[i] = -1;
  w.piece_table = piece_table(c, w.piece_lo, GeneralWalk::kPieceTable);
  w.nheap = 0, w.npending_free = GeneralWalk::kPending, w.scans = 0;
  for (std::int32_t p = 0; p < GeneralWalk::kPending; ++p) w.pending_free[p] = static_cast<std::int16_t>(p);
  LevelWalk<Caps, kFlat> lw{&w, &c, nodes, pe_of, sharers};
  lw.lazy = lazy;
  coll_schedule(c, lw);
  if (lw.ok && lazy) lw.ok = lw.drain();
  if (!lw.ok) return lw.full ? WalkOutcome::full : lw.deep ? WalkOutcome::deep : WalkOutcome::refused;
  *out = lw.f;
  return WalkOutcome::taken;
}
// `flat`: without depths (WalkOutcome::deep where an op needs them).
template <class Caps>
KB_HD WalkOutcome general_walk(const AllreduceConfig& c, GeneralWalkT<Caps>& w, const net::Node* nodes,
                               const std::int64_t* pe_of, const std::int64_t* sharers, AllreduceFigures* out,
                               bool lazy = false, bool flat = false) {
  return flat ? general_walk_as<Caps, true>(c, w, nodes, pe_of, sharers, out, lazy)
              : general_walk_as<Caps, false>(c, w, nodes, pe_of, sharers, out, lazy);
}

}  // namespace ar_detail
}  // namespace kb
