// Batched allreduce model: the timing of a collective (collective.h) without an op graph or
// allocation. A collective is all communication, and who waits for whom on a shared link
// depends on when each message becomes ready, so no closed form holds in general (ADR 0007:
// "a closed form must state when its links are contended"). The model therefore expands the
// config's transfers into its own fixed-size list of ops and simulates them with the rules of
// ADR 0007: in-order engines, arbitration rounds on links and ports (ready first, then the
// issuing PE, then its issue order), cut-through hops, chains with an HBM end held for their
// slowest hop, HBM shares per cube. It shares with the reference engine the transfer list,
// the routes and the unit helpers, never the op expansion or the simulation
// (docs/adr/0009-collective-schedules.md).
#pragma once

#include <cstdint>

#include "../common/hw.h"
#include "../common/kb_hd.h"
#include "../common/network.h"
#include "../common/units.h"
#include "collective.h"
#include "vector.h"

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
};

// Pareto costs a sweep can trade latency against (1-based; 0: none).
enum AllreduceCost : std::int32_t { kArCostRanks = 1, kArCostLinkBytes, kArCostHbm };

namespace ar_detail {

constexpr std::int32_t kOps = static_cast<std::int32_t>(kCollMaxOps);
constexpr std::int32_t kEdges = 4 * kOps;
constexpr std::int32_t kEvents = 3 * kOps + 8;
constexpr std::int32_t kHash = 2 * kOps;  // resource table (open addressing, a power of two)
constexpr std::int32_t kGroup = 2 * static_cast<std::int32_t>(kCollMaxRanks);

enum Ev : std::uint32_t { kComplete = 0, kHead = 1, kRelease = 2, kArbitrate = 3 };

// The ops of one config and their simulation. Every array is sized for kCollMaxOps
// (allreduce_check refuses a config with more ops).
struct Sim {
  const AllreduceConfig* c;    // the collective simulated: one level (a phase, for hier)
  const AllreduceConfig* top;  // the config asked for (c itself, or the hier config)
  std::int64_t leader_pe = 0, leader_cube = 0;  // hier: the leader PE of a cube, the leader cube of a SIP
  bool hier = false;
  std::int8_t hier_port[2 * kCollMaxHierRanks];  // hier: per hier rank, HBM ports used in the whole launch
  ps_t done[kCollMaxRanks];  // per rank: when its last op, or the last transfer into it, ends
  bool store;
  std::int32_t status = kArOk;
  // ops
  std::int32_t n = 0;
  std::int64_t edges = 0;
  ps_t busy[kOps], lat[kOps], ready_t[kOps];
  std::int64_t bytes[kOps];
  std::int32_t res[kOps], key[kOps], issue[kOps], remaining[kOps], head_next[kOps], next_in_res[kOps];
  std::int32_t who[kOps], land[kOps];  // the issuing rank; the rank a transfer's last hop lands on (or -1)
  std::int32_t hbm[kOps];    // global cube * 2 + port of an HBM access, or -1
  std::int32_t chain[kOps];  // on a chain's first op: its length; else 0
  std::int32_t dep_begin[kOps + 1], dependents[kEdges];
  std::int32_t edge_op[kEdges], edge_dep[kEdges];
  // resources
  std::int32_t nres = 0;
  // resource keys to ids: an open-addressing hash table (key -1: empty)
  std::int64_t res_hash_key[kHash];
  std::int32_t res_hash_id[kHash];
  std::int32_t res_arb[kOps], res_busy[kOps], res_qhead[kOps], res_qtail[kOps], res_wait[kOps], res_arbitrating[kOps];
  std::int32_t res_vector[kOps];
  std::int32_t pending[kOps], npending = 0, round_[kOps];
  bool round_scheduled = false;
  // events: a binary min-heap on (time, order)
  struct Event {
    ps_t time;
    std::uint32_t order;  // type << 28 | sequence
    std::int32_t op;
  };
  Event ev[kEvents];
  std::int32_t nev = 0;
  std::uint32_t seq = 0;
  ps_t now = 0;
  // schedule state
  std::int32_t writer[kCollMaxPieces];  // per (rank, chunk, piece): the op that last wrote it
  std::int32_t issued[kCollMaxRanks];
  std::int8_t port_used[2 * kCollMaxRanks];
  CollXfer group[kGroup];
  std::int64_t group_chunk[kGroup];
  std::int32_t ngroup = 0, arrival[kGroup];
  AllreduceResult out{};

  // Where rank r is: its level's node, or for a hier phase its group 0's PE.
  KB_HD net::Node node(std::int64_t r) const {
    return hier ? coll_node(*top, coll_hier_rank(*top, *c, 0, r, leader_pe, leader_cube)) : coll_node(*c, r);
  }
  KB_HD std::int32_t global_pe_of(std::int64_t r) const { return static_cast<std::int32_t>(net::global_pe(c->hw, node(r))); }
  KB_HD std::int32_t piece_slot(std::int64_t r, std::int64_t ch, std::int64_t k) const {
    return static_cast<std::int32_t>((r * c->chunks + ch) * c->ranks + k);
  }

  // A resource by key (net link ids, then 3 per PE: vector, DMA queue, HBM write port).
  KB_HD KB_NOINLINE std::int32_t resource(std::int64_t k, bool arbitrated, bool vector) {
    std::uint64_t h = static_cast<std::uint64_t>(k) * UINT64_C(0x9E3779B97F4A7C15);
    std::int32_t i = static_cast<std::int32_t>(h >> 40) & (kHash - 1);
    while (res_hash_key[i] != -1 && res_hash_key[i] != k) i = (i + 1) & (kHash - 1);
    if (res_hash_key[i] == k) return res_hash_id[i];
    res_hash_key[i] = k;
    res_hash_id[i] = nres;
    res_arb[nres] = arbitrated;
    res_vector[nres] = vector;
    res_busy[nres] = 0;
    res_qhead[nres] = res_qtail[nres] = res_wait[nres] = -1;
    res_arbitrating[nres] = 0;
    return nres++;
  }
  KB_HD std::int64_t engine_key(std::int64_t rank, std::int64_t which) const {
    return net::link_count(c->hw) + 3 * static_cast<std::int64_t>(global_pe_of(rank)) + which;
  }

  KB_HD void dep(std::int32_t op, std::int32_t d) {
    if (d < 0) return;
    if (store) {
      // The same dependency twice counts once (a range whose pieces one op wrote).
      for (std::int64_t e = edges - 1; e >= 0 && edge_op[e] == op; --e)
        if (edge_dep[e] == d) return;
      if (edges >= kEdges) {
        status = kArTooLarge;
        return;
      }
      edge_op[edges] = op;
      edge_dep[edges] = d;
    }
    ++edges;
  }
  // Adds an op issued by rank `by` on resource `r`.
  KB_HD KB_NOINLINE std::int32_t op(std::int64_t by, std::int32_t r, ps_t b, ps_t l, std::int64_t nbytes) {
    const std::int32_t id = n++;
    if (!store || id >= kOps) {
      if (store) status = kArTooLarge;
      return id;
    }
    busy[id] = b, lat[id] = l, bytes[id] = nbytes;
    res[id] = r, key[id] = global_pe_of(by), issue[id] = issued[by]++;
    who[id] = static_cast<std::int32_t>(by), land[id] = -1;
    head_next[id] = -1, next_in_res[id] = -1, hbm[id] = -1, chain[id] = 0;
    if (!res_arb[r]) {  // in-order: queued in program order
      if (res_qtail[r] >= 0) next_in_res[res_qtail[r]] = id;
      else res_qhead[r] = id;
      res_qtail[r] = id;
    }
    return id;
  }
  KB_HD void head_dep(std::int32_t next, std::int32_t prev) {
    if (store && next < kOps && prev < kOps) head_next[prev] = next;
  }
  // The distinct ops that last wrote pieces [k0, k1) of a chunk on rank r, as deps of `op`.
  KB_HD void range_deps(std::int32_t o, std::int64_t r, std::int64_t ch, std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) dep(o, writer[piece_slot(r, ch, k)]);
  }
  KB_HD void wrote(std::int32_t o, std::int64_t r, std::int64_t ch, std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) writer[piece_slot(r, ch, k)] = o;
  }

  KB_HD bool hbm_mode() const { return c->buffer == static_cast<std::int64_t>(CollBuffer::hbm); }
  KB_HD ps_t hbm_latency() const { return c->hw.hbm_latency_ns * kPsPerNs; }
  KB_HD std::int64_t xfer_bytes(std::int64_t ch, const CollXfer& x) const {
    return 2 * (coll_piece_lo(*c, ch, x.k1) - coll_piece_lo(*c, ch, x.k0));
  }
  KB_HD void hbm_access(std::int32_t o, std::int64_t rank, std::int32_t port) {
    port_used[2 * rank + port] = 1;
    if (store && o < kOps) {
      const net::Node nd = node(rank);
      hbm[o] = static_cast<std::int32_t>((nd.sip * c->hw.cubes_per_sip() + nd.cube) * 2 + port);
    }
  }
  KB_HD void mark_chain(std::int32_t first, std::int32_t len) {
    if (store && first < kOps) chain[first] = len;
  }

  // The sender's half of a transfer: its ops, in its program order; returns the last (the
  // data has landed when it completes).
  KB_HD KB_NOINLINE std::int32_t send(std::int64_t ch, const CollXfer& x) {
    const std::int64_t nb = xfer_bytes(ch, x);
    const bool hbm_end = hbm_mode();
    std::int32_t first = -1, prev = -1;
    auto add = [&](std::int32_t o) {
      if (prev < 0) {
        first = o;
        range_deps(o, x.src, ch, x.k0, x.k1);
      } else {
        head_dep(o, prev);
      }
      prev = o;
    };
    if (hbm_end) {
      const std::int32_t o = op(x.src, resource(engine_key(x.src, 1), false, false), 0, hbm_latency(), nb);
      hbm_access(o, x.src, 0);
      out.hbm_read_bytes += nb;
      add(o);
    }
    net::for_each_hop(c->hw, node(x.src), node(x.dst), [&](const net::Hop& h) {
      const std::int32_t o = op(x.src, resource(h.link, true, false), transfer_ps(nb, h.bandwidth_gbps),
                                h.latency_ns * kPsPerNs, nb);
      add(o);
      switch (h.kind) {
        case net::LinkKind::ipcq_in: out.link_bytes_pe += nb, ++out.copies_pe; break;
        case net::LinkKind::cube_link: out.link_bytes_cube += nb, ++out.copies_cube; break;
        case net::LinkKind::sip_link: out.link_bytes_sip += nb, ++out.copies_sip; break;
        default: break;  // a sender's out-port: the copy is counted at the in-port
      }
    });
    if (hbm_end) {
      const std::int32_t o = op(x.src, resource(engine_key(x.dst, 2), true, false), 0, hbm_latency(), nb);
      hbm_access(o, x.dst, 1);
      out.hbm_write_bytes += nb;
      add(o);
      mark_chain(first, prev - first + 1);
    }
    ++out.transfers;
    if (store && prev < kOps) land[prev] = x.dst;
    return prev;
  }

  // The receiver's half: it adds the values in (on its vector engine, or streamed from HBM
  // through it) or takes them as they landed.
  KB_HD KB_NOINLINE void receive(std::int64_t ch, const CollXfer& x, std::int32_t landed) {
    if (!x.reduce) {
      wrote(landed, x.dst, ch, x.k0, x.k1);
      return;
    }
    const std::int64_t nb = xfer_bytes(ch, x), values = nb / 2;
    const ps_t add_ps = cycles_ps(vector_cycles(VecOp::add, 1, values, c->hw.vector_lanes), c->hw.clock_mhz);
    const std::int32_t vec = resource(engine_key(x.dst, 0), false, true);
    if (!hbm_mode()) {
      const std::int32_t o = op(x.dst, vec, add_ps, 0, 0);
      dep(o, landed);
      range_deps(o, x.dst, ch, x.k0, x.k1);
      wrote(o, x.dst, ch, x.k0, x.k1);
      return;
    }
    // Read both operands (DMA queue), add (vector engine), write the sum (HBM write port).
    const std::int32_t rd = op(x.dst, resource(engine_key(x.dst, 1), false, false), 0, hbm_latency(), 2 * nb);
    hbm_access(rd, x.dst, 0);
    dep(rd, landed);
    range_deps(rd, x.dst, ch, x.k0, x.k1);
    const std::int32_t ad = op(x.dst, vec, add_ps, 0, 0);
    head_dep(ad, rd);
    const std::int32_t wr = op(x.dst, resource(engine_key(x.dst, 2), true, false), 0, hbm_latency(), nb);
    hbm_access(wr, x.dst, 1);
    head_dep(wr, ad);
    mark_chain(rd, 3);
    out.hbm_read_bytes += 2 * nb;
    out.hbm_write_bytes += nb;
    wrote(wr, x.dst, ch, x.k0, x.k1);
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

  KB_HD KB_NOINLINE void build() {
    for (std::int32_t i = 0; i < kHash; ++i) res_hash_key[i] = -1;
    for (std::int64_t i = 0; i < c->ranks * c->chunks * c->ranks; ++i) writer[i] = -1;
    for (std::int64_t i = 0; i < c->ranks; ++i) issued[i] = 0, port_used[2 * i] = port_used[2 * i + 1] = 0;
    coll_schedule(*c, *this);
  }

  // ---- the simulation (the rules of src/host/engine/engine.cpp, ADR 0007) ----

  KB_HD static bool before(const Event& a, const Event& b) {
    return a.time != b.time ? a.time < b.time : a.order < b.order;
  }
  KB_HD KB_NOINLINE void schedule(ps_t t, Ev type, std::int32_t o) {
    const Event e{t, (static_cast<std::uint32_t>(type) << 28) | seq++, o};
    std::int32_t i = nev++;
    while (i > 0 && before(e, ev[(i - 1) / 2])) {
      ev[i] = ev[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    ev[i] = e;
  }
  KB_HD KB_NOINLINE void pop() {
    const Event last = ev[--nev];
    std::int32_t i = 0;
    for (;;) {
      const std::int32_t l = 2 * i + 1, r = l + 1;
      std::int32_t m = -1;
      if (l < nev) m = r < nev && before(ev[r], ev[l]) ? r : l;
      if (m < 0 || !before(ev[m], last)) break;
      ev[i] = ev[m];
      i = m;
    }
    ev[i] = last;
  }

  KB_HD KB_NOINLINE void start_op(std::int32_t id) {
    const ps_t busy_end = now + busy[id], end = busy_end + lat[id];
    if (busy[id] > kTimeLimitPs || lat[id] > kTimeLimitPs || end > kTimeLimitPs) {
      status = kArTimeOverflow;
      return;
    }
    res_busy[res[id]] = 1;
    if (res_vector[res[id]]) out.vector_busy_ps += busy[id];
    if (end > out.latency_ps) out.latency_ps = end;
    done[who[id]] = imax(done[who[id]], end);
    if (land[id] >= 0) done[land[id]] = imax(done[land[id]], end);
    schedule(busy_end, kRelease, id);
    if (head_next[id] >= 0) schedule(now + lat[id], kHead, id);
    schedule(end, kComplete, id);
  }
  KB_HD KB_NOINLINE void try_head(std::int32_t r) {
    if (res_busy[r] || res_qhead[r] < 0) return;
    if (remaining[res_qhead[r]] == 0) start_op(res_qhead[r]);
  }
  KB_HD KB_NOINLINE void request_arbitration(std::int32_t r) {
    if (res_busy[r] || res_arbitrating[r] || res_wait[r] < 0) return;
    res_arbitrating[r] = 1;
    pending[npending++] = r;
    if (!round_scheduled) {
      round_scheduled = true;
      schedule(now, kArbitrate, -1);
    }
  }
  KB_HD KB_NOINLINE void make_ready(std::int32_t id) {
    ready_t[id] = now;
    next_in_res[id] = res_wait[res[id]];  // arbitrated ops are never queued in order
    res_wait[res[id]] = id;
    request_arbitration(res[id]);
  }
  // Ready first, then the issuing PE (sip, cube, pe order), then its issue order.
  KB_HD bool wins(std::int32_t a, std::int32_t b) const {
    if (ready_t[a] != ready_t[b]) return ready_t[a] < ready_t[b];
    if (key[a] != key[b]) return key[a] < key[b];
    if (issue[a] != issue[b]) return issue[a] < issue[b];
    return a < b;
  }
  KB_HD KB_NOINLINE void arbitrate_round() {
    round_scheduled = false;
    const std::int32_t m = npending;
    for (std::int32_t i = 0; i < m; ++i) round_[i] = pending[i];
    npending = 0;
    for (std::int32_t i = 0; i < m; ++i) {
      const std::int32_t r = round_[i];
      res_arbitrating[r] = 0;
      if (res_busy[r] || res_wait[r] < 0) continue;
      std::int32_t best = res_wait[r], best_prev = -1;
      for (std::int32_t prev = res_wait[r], o = next_in_res[prev]; o >= 0; prev = o, o = next_in_res[o])
        if (wins(o, best)) best = o, best_prev = prev;
      if (best_prev < 0) res_wait[r] = next_in_res[best];
      else next_in_res[best_prev] = next_in_res[best];
      start_op(best);
    }
  }
  KB_HD KB_NOINLINE void dep_done(std::int32_t d) {
    if (--remaining[d] != 0) return;
    const std::int32_t r = res[d];
    if (res_arb[r]) make_ready(d);
    else if (res_qhead[r] == d) try_head(r);
  }
  KB_HD KB_NOINLINE void release(std::int32_t id) {
    const std::int32_t r = res[id];
    res_busy[r] = 0;
    if (res_arb[r]) {
      request_arbitration(r);
      return;
    }
    res_qhead[r] = next_in_res[id];
    try_head(r);
  }

  KB_HD KB_NOINLINE void simulate() {
    // HBM shares: a cube's bandwidth over its PEs' HBM ports used in the launch (the ranks
    // of the pe level share cube 0; every other rank has a cube of its own).
    std::int64_t all_ports = 0;
    for (std::int64_t r = 0; r < c->ranks; ++r) all_ports += port_used[2 * r] + port_used[2 * r + 1];
    for (std::int32_t i = 0; i < n; ++i) {
      if (hbm[i] < 0) continue;
      std::int64_t sharers = all_ports;
      if (hier) {  // the ports of the cube's PEs over the whole hier launch
        CollHier d;
        coll_hier_dims(*top, &d);
        const std::int64_t cube = hbm[i] / 2, sip = cube / c->hw.cubes_per_sip(), q = cube % c->hw.cubes_per_sip();
        sharers = 0;
        for (std::int64_t pe = 0; pe < d.pes; ++pe) {
          const std::int64_t g = (sip * d.cubes + q) * d.pes + pe;
          sharers += hier_port[2 * g] + hier_port[2 * g + 1];
        }
      } else if (c->level != static_cast<std::int64_t>(CollLevel::pe)) {
        const net::Node nd = coll_node(*c, 0);
        const std::int64_t r = c->level == static_cast<std::int64_t>(CollLevel::cube)
                                   ? hbm[i] / 2 - nd.cube
                                   : (hbm[i] / 2) / c->hw.cubes_per_sip();
        sharers = port_used[2 * r] + port_used[2 * r + 1];
      }
      busy[i] = shared_transfer_ps(bytes[i], c->hw.dma_gbps(), c->hw.hbm_bandwidth_gbps, sharers);
    }
    // A chain with an HBM end streams at its slowest hop.
    for (std::int32_t i = 0; i < n; ++i) {
      if (chain[i] == 0) continue;
      ps_t slowest = 0;
      for (std::int32_t k = i; k < i + chain[i]; ++k) slowest = imax(slowest, busy[k]);
      for (std::int32_t k = i; k < i + chain[i]; ++k) busy[k] = slowest;
    }
    // Dependents of each op (CSR); head edges are head_next.
    for (std::int32_t i = 0; i <= n; ++i) dep_begin[i] = 0;
    for (std::int32_t i = 0; i < n; ++i) remaining[i] = 0;
    for (std::int64_t e = 0; e < edges; ++e) ++dep_begin[edge_dep[e] + 1], ++remaining[edge_op[e]];
    for (std::int32_t i = 0; i < n; ++i)
      if (head_next[i] >= 0) ++remaining[head_next[i]];
    for (std::int32_t i = 0; i < n; ++i) dep_begin[i + 1] += dep_begin[i];
    for (std::int32_t i = 0; i < n; ++i) ready_t[i] = dep_begin[i];  // fill cursors
    for (std::int64_t e = 0; e < edges; ++e) dependents[ready_t[edge_dep[e]]++] = edge_op[e];

    for (std::int32_t i = 0; i < n; ++i)
      if (remaining[i] == 0 && res_arb[res[i]]) make_ready(i);
    for (std::int32_t r = 0; r < nres; ++r) try_head(r);
    std::int32_t completed = 0;
    while (nev > 0 && status == kArOk) {
      const ps_t t = ev[0].time;
      const Ev type = static_cast<Ev>(ev[0].order >> 28);
      const std::int32_t o = ev[0].op;
      pop();
      now = t;
      switch (type) {
        case kComplete:
          ++completed;
          for (std::int32_t k = dep_begin[o]; k < dep_begin[o + 1]; ++k) dep_done(dependents[k]);
          break;
        case kHead: dep_done(head_next[o]); break;
        case kRelease: release(o); break;
        case kArbitrate: arbitrate_round(); break;
      }
    }
    if (status == kArOk && completed != n) status = kArTooLarge;  // unreachable: the schedules cannot deadlock
  }
};

}  // namespace ar_detail

namespace ar_detail {

// Ops of one single-level collective as the model expands it (against kCollMaxOps).
KB_HD inline std::int64_t count_ops(const AllreduceConfig& c) {
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

}  // namespace ar_detail

// The status of the validity check alone (both engines use it): the config's fields, its
// memory, and whether the model can hold its ops (hier: each phase's). `ops` gets the
// model's op count (hier: the largest phase's).
KB_HD KB_NOINLINE inline std::int32_t allreduce_check(const AllreduceConfig& c, std::int64_t* ops = nullptr) {
  const std::int32_t s = coll_check(c);
  if (s != kArOk) return s;
  std::int64_t most = 0;
  if (c.level == static_cast<std::int64_t>(CollLevel::hier)) {
    CollPhase ph[5];
    const int n = coll_hier_phases(c, ph);
    for (int k = 0; k < n; ++k) most = imax(most, ar_detail::count_ops(ph[k].sub));
  } else {
    most = ar_detail::count_ops(c);
  }
  if (ops) *ops = most;
  return most > kCollMaxOps ? kArTooLarge : kArOk;
}

namespace ar_detail {

// One single-level collective on the scratch: its figures, and per rank `done`.
KB_HD inline void run_level(Sim& sim, const AllreduceConfig& c, const AllreduceConfig& top) {
  sim.c = &c;
  sim.top = &top;
  sim.store = true;
  sim.status = kArOk;
  sim.n = 0, sim.edges = 0, sim.nres = 0, sim.npending = 0, sim.nev = 0, sim.seq = 0, sim.now = 0, sim.ngroup = 0;
  sim.round_scheduled = false;
  sim.out = AllreduceResult{};
  for (std::int64_t r = 0; r < c.ranks; ++r) sim.done[r] = 0;
  sim.build();
  if (sim.status == kArOk) sim.simulate();
}

// Marks the HBM ports each hier rank uses anywhere in the launch (the static HBM share).
struct PortMarks {
  const AllreduceConfig* c;
  std::int8_t* port;
  KB_HD void phase(const AllreduceConfig&) {}
  KB_HD void barrier() {}
  KB_HD void flush() {}
  KB_HD void xfer(std::int64_t, const CollXfer& x) {
    port[2 * x.src] = 1;  // the sender's DMA read
    port[2 * x.dst + 1] = 1;  // the receiver's HBM write
    if (x.reduce) port[2 * x.dst] = 1;  // its streamed add reads both operands
  }
};

}  // namespace ar_detail

// The model. `sim` is scratch for one evaluation (large: keep one per thread).
KB_HD KB_NOINLINE inline AllreduceResult allreduce_model(const AllreduceConfig& c, ar_detail::Sim& sim) {
  AllreduceResult r{};
  r.status = allreduce_check(c);
  if (r.status != kArOk) return r;
  if (c.level != static_cast<std::int64_t>(CollLevel::hier)) {
    sim.hier = false;
    ar_detail::run_level(sim, c, c);
    r = sim.out;
    r.status = sim.status;
  } else {
    // Phase by phase (ADR 0009): the groups of a phase are alike and start together, and a
    // rank starts a phase once everything it did in the one before is done, so the whole
    // run is the phases one after another, each from the time its ranks are free.
    for (std::int64_t i = 0; i < 2 * c.ranks; ++i) sim.hier_port[i] = 0;
    if (c.buffer == static_cast<std::int64_t>(CollBuffer::hbm)) {
      ar_detail::PortMarks marks{&c, sim.hier_port};
      coll_schedule_all(c, marks);
    }
    CollPhase ph[5];
    std::int64_t leader_pe = 0, leader_cube = 0;
    const int n = coll_hier_phases(c, ph, &leader_pe, &leader_cube);
    sim.hier = true, sim.leader_pe = leader_pe, sim.leader_cube = leader_cube;
    ps_t start = 0;
    r.status = kArOk;
    for (int k = 0; k < n && r.status == kArOk; ++k) {
      ar_detail::run_level(sim, ph[k].sub, c);
      if (sim.status != kArOk) {
        r.status = sim.status;
        break;
      }
      const AllreduceResult& o = sim.out;
      const std::int64_t g = ph[k].groups;
      r.latency_ps = imax(r.latency_ps, start + o.latency_ps);
      r.link_bytes_pe += g * o.link_bytes_pe, r.link_bytes_cube += g * o.link_bytes_cube;
      r.link_bytes_sip += g * o.link_bytes_sip;
      r.copies_pe += g * o.copies_pe, r.copies_cube += g * o.copies_cube, r.copies_sip += g * o.copies_sip;
      r.hbm_read_bytes += g * o.hbm_read_bytes, r.hbm_write_bytes += g * o.hbm_write_bytes;
      r.vector_busy_ps += g * o.vector_busy_ps;
      r.transfers += g * o.transfers;
      ps_t next = 0;
      if (ph[k].up) {
        next = sim.done[coll_root(ph[k].sub)];
      } else {
        for (std::int64_t i = 0; i < ph[k].sub.ranks; ++i) next = imax(next, sim.done[i]);
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

// The family as the generic sweep engine sees it (src/device/sweep/).
struct AllreduceModel {
  using Config = AllreduceConfig;
  using Result = AllreduceResult;
  static constexpr int kStatuses = kArStatusCount;
  KB_HD static void complete(Config&) {}
  // Not inlined: the scratch lives in this one frame, not in every kernel that evaluates.
  KB_HD KB_NOINLINE static Result evaluate(const Config& c) {
    ar_detail::Sim sim;
    return allreduce_model(c, sim);
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
};

}  // namespace kb
