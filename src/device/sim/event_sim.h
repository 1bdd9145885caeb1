// The device-side simulator: a bounded discrete-event simulator in the reference engine's
// vocabulary (ops on resources, dependencies, head dependencies of cut-through chains,
// chains that stream at their slowest hop), with ADR 0007's rules written once for the
// device side: in-order resources serve in program order, arbitrated ones in rounds by
// `goes_first` (arbitration.h). The reference engine (src/host/engine/) is the other,
// independent place those rules live; parity compares the two.
//
// A model emits its ops (each with the issuing PE and its place in that PE's program), then
// calls run(). run() first tries the fast path: every op in id order, each starting when it
// is ready and its resource is free. The simulator takes that schedule only with a
// certificate that no arbitrated resource ever had a choice the schedule could have got
// wrong (docs/model.md section 11.8 proves that the event simulation then gives the same
// schedule); otherwise it simulates events. Pure KB_HD code: fixed arrays, no allocation.
#pragma once

#include <cstdint>

#include "../common/kb_hd.h"
#include "../common/units.h"
#include "arbitration.h"
#include "fast_rule.h"
#include "transfer.h"

namespace kb {
namespace sim {

enum SimStatus : std::int32_t { kSimOk = 0, kSimTooLarge = 1, kSimTimeOverflow = 2 };

// What run() did: the fast path's schedule, or the event simulation (tests ask for the
// latter to compare).
enum class Path : std::int32_t { fast = 0, events = 1 };

// kOps ops (a power of two), kEdges dependency edges, kMarks marks (a model's ranks: each op
// may carry two, and the simulator reports when the last op of each mark ended).
template <std::int32_t kOps, std::int32_t kEdges, std::int32_t kMarks>
struct EventSim {
  static_assert(kOps > 0 && (kOps & (kOps - 1)) == 0, "kOps is a power of two");
  static_assert(kOps < 32767 && kEdges < 32767, "op and edge ids are 16-bit");
  static_assert(kMarks <= 127, "marks are 8-bit");
  using Id = std::int16_t;
  static constexpr std::int32_t kHash = 2 * kOps;  // resource keys to ids (open addressing)
  static constexpr std::int32_t kEvents = 3 * kOps + 8;
  static constexpr int kClasses = 2;                // resource classes whose busy time is summed (0: none)
  // Passes in the claims' order after a misordered first pass, and the misordered ops of the
  // second below which a third is tried. A pass costs about half the event simulation; a graph
  // with few misordered ops is most often certified one pass later, one with many seldom
  // within a few (allreduce's halving-doubling on HBM: docs/PERFORMANCE.md).
  static constexpr int kOrderPasses = 2, kNearlyOrdered = 2;

  // ---- results ----
  std::int32_t status = kSimOk;
  Path path = Path::fast;
  bool first_pass = false;      // the fast path's first pass (in id order) alone certified the schedule
  std::int32_t passes = 0;      // the passes the fast path ran (0: none)
  std::int32_t misordered = 0;  // the last pass's ops against the certificate (up to its tolerance + 1)
  ps_t latency = 0;             // the last op's end
  ps_t class_busy[kClasses];    // busy time summed per resource class
  ps_t mark_done[kMarks];       // per mark: when its last op ended

  // ---- ops ----
  std::int32_t n = 0, edges = 0;
  bool ordered = true;  // every dependency on an earlier op (the fast path walks ids in order)
  ps_t busy[kOps], ready_t[kOps], end_t[kOps];
  std::int32_t key[kOps];  // the issuing PE
  Id res[kOps], issue[kOps], remaining[kOps], head_next[kOps], next_in_res[kOps], chain_len[kOps];
  Id dep_begin[kOps + 1];
  std::int8_t mark_a[kOps], mark_b[kOps];
  Id depth[kOps];  // the fast path: the round depth of an op's ready time
  Id order_next[kOps], indeg[kOps + 1], queue[kOps];  // the fast path's passes in the claims' order
  Id edge_op[kEdges], edge_dep[kEdges], dependents[kEdges];

  // ---- resources ----
  std::int32_t nres = 0;
  std::int64_t hash_key[kHash];
  Id hash_id[kHash];
  ps_t res_lat[kOps];
  std::int8_t res_arb[kOps], res_class[kOps], res_busy[kOps], res_arbitrating[kOps];
  FastRes fres[kOps];  // the fast path's state of each resource (fast_rule.h)
  Id res_qhead[kOps], res_qtail[kOps], res_wait[kOps];

  // ---- events: a binary min-heap on (time, order) ----
  enum Ev : std::uint32_t { kComplete = 0, kHead = 1, kRelease = 2, kArbitrate = 3 };
  struct Event {
    ps_t time;
    std::uint32_t order;  // type << 28 | sequence
    std::int32_t op;
  };
  Event ev[kEvents];
  std::int32_t nev = 0, npending = 0;
  std::uint32_t seq = 0;
  bool round_scheduled = false;
  ps_t now = 0;
  Id pending[kOps], round_[kOps];

  // ---- building ----

  KB_HD void reset() {
    status = kSimOk;
    path = Path::fast;
    n = 0, edges = 0, nres = 0;
    ordered = true;
    for (std::int32_t i = 0; i < kHash; ++i) hash_key[i] = -1;
  }
  KB_HD bool full(std::int32_t id) const { return id < 0 || id >= kOps; }

  // The resource of key `k` (created on first use): arbitrated or in order, the latency its
  // ops add after their busy time, the class its busy time is summed into.
  KB_HD KB_NOINLINE std::int32_t resource(std::int64_t k, bool arbitrated, ps_t lat, int cls) {
    const std::uint64_t h = static_cast<std::uint64_t>(k) * UINT64_C(0x9E3779B97F4A7C15);
    std::int32_t i = static_cast<std::int32_t>(h >> 40) & (kHash - 1);
    while (hash_key[i] != -1 && hash_key[i] != k) i = (i + 1) & (kHash - 1);
    if (hash_key[i] == k) return hash_id[i];
    if (nres >= kOps) {  // unreachable while every op makes at most one resource
      status = kSimTooLarge;
      return 0;
    }
    hash_key[i] = k;
    hash_id[i] = static_cast<Id>(nres);
    res_arb[nres] = arbitrated;
    res_class[nres] = static_cast<std::int8_t>(cls);
    res_lat[nres] = lat;
    res_qhead[nres] = res_qtail[nres] = -1;
    return nres++;
  }

  // An op on resource `r`, issued by PE `pe` as the `issue`-th op of its program, holding
  // the resource `b` ps; it counts for mark `mark` (-1: none).
  KB_HD KB_NOINLINE std::int32_t op(std::int64_t pe, std::int64_t iss, std::int32_t r, ps_t b, std::int32_t mark) {
    const std::int32_t id = n++;
    if (full(id)) {
      status = kSimTooLarge;
      return id;
    }
    busy[id] = b;
    key[id] = static_cast<std::int32_t>(pe), issue[id] = static_cast<Id>(iss);
    res[id] = static_cast<Id>(r);
    mark_a[id] = static_cast<std::int8_t>(mark), mark_b[id] = -1;
    head_next[id] = -1, next_in_res[id] = -1, chain_len[id] = 0;
    if (!res_arb[r]) {  // in order: queued in program order
      if (res_qtail[r] >= 0) next_in_res[res_qtail[r]] = static_cast<Id>(id);
      else res_qhead[r] = static_cast<Id>(id);
      res_qtail[r] = static_cast<Id>(id);
    }
    return id;
  }
  // `o` waits for `d` to complete (d < 0: nothing). The same dependency twice counts once.
  KB_HD void dep(std::int32_t o, std::int32_t d) {
    if (d < 0 || full(o) || full(d)) return;
    for (std::int32_t e = edges - 1; e >= 0 && edge_op[e] == o; --e)
      if (edge_dep[e] == d) return;
    if (edges >= kEdges) {
      status = kSimTooLarge;
      return;
    }
    if (d >= o) ordered = false;
    edge_op[edges] = static_cast<Id>(o);
    edge_dep[edges] = static_cast<Id>(d);
    ++edges;
  }
  // `next` may start once `prev`'s head has crossed its resource (prev's start + latency).
  KB_HD void head(std::int32_t next, std::int32_t prev) {
    if (full(next) || full(prev)) return;
    if (next <= prev) ordered = false;
    head_next[prev] = static_cast<Id>(next);
  }
  // Ops first..first+len-1 are one chain with an HBM end: it streams at its slowest hop.
  KB_HD void chain(std::int32_t first, std::int32_t len) {
    if (!full(first)) chain_len[first] = static_cast<Id>(len);
  }
  // `o` also counts for mark `m` (where a transfer lands).
  KB_HD void mark(std::int32_t o, std::int32_t m) {
    if (!full(o)) mark_b[o] = static_cast<std::int8_t>(m);
  }

  // ---- running ----

  // Simulates the ops (events only: skip the fast path).
  KB_HD KB_NOINLINE void run(bool events_only = false) {
    first_pass = false;
    passes = 0;
    if (status != kSimOk) return;
    streams();
    csr();
    if (!events_only && ordered && fast()) {
      path = Path::fast;
      return;
    }
    path = Path::events;
    simulate();
  }

 private:
  KB_HD void clear_results() {
    latency = 0;
    for (int k = 0; k < kClasses; ++k) class_busy[k] = 0;
    for (std::int32_t m = 0; m < kMarks; ++m) mark_done[m] = 0;
  }
  // ADR 0007 rule 5: a chain with an HBM end holds every hop for its slowest hop's time.
  KB_HD void streams() {
    for (std::int32_t i = 0; i < n; ++i) {
      if (chain_len[i] != 0) xfer::stream(busy + i, chain_len[i]);
    }
  }
  // Dependents of each op (CSR, by the op depended on), and what each op waits for.
  KB_HD void csr() {
    for (std::int32_t i = 0; i <= n; ++i) dep_begin[i] = 0;
    for (std::int32_t i = 0; i < n; ++i) remaining[i] = 0;
    for (std::int32_t e = 0; e < edges; ++e) ++dep_begin[edge_dep[e] + 1], ++remaining[edge_op[e]];
    for (std::int32_t i = 0; i < n; ++i)
      if (head_next[i] >= 0) ++remaining[head_next[i]];
    for (std::int32_t i = 0; i < n; ++i) dep_begin[i + 1] = static_cast<Id>(dep_begin[i + 1] + dep_begin[i]);
    for (std::int32_t i = 0; i < n; ++i) end_t[i] = dep_begin[i];  // fill cursors
    for (std::int32_t e = 0; e < edges; ++e) dependents[end_t[edge_dep[e]]++] = edge_op[e];
  }
  KB_HD void account(std::int32_t id, ps_t end) {
    if (res_class[res[id]] > 0) class_busy[res_class[res[id]]] += busy[id];
    if (end > latency) latency = end;
    if (mark_a[id] >= 0) mark_done[mark_a[id]] = imax(mark_done[mark_a[id]], end);
    if (mark_b[id] >= 0) mark_done[mark_b[id]] = imax(mark_done[mark_b[id]], end);
  }

  // The fast path: a schedule in which every resource serves its ops in a fixed order, each
  // op starting at max(ready, the previous op's release). Taken only with the certificate of
  // docs/model.md section 11.8: on every arbitrated resource the order is goes_first order,
  // and among ops ready at one instant, none becomes ready in an earlier arbitration round
  // of that instant than an op before it that found the resource free. An event's depth is
  // the round after which it is processed: 0 for one scheduled before its instant began, k
  // for a zero-delay consequence of an op started in round k (an in-order op starts between
  // rounds, at its trigger's depth). The first pass serves in id order (a topological order
  // when `ordered`); if only the order failed, a further pass serves each arbitrated resource
  // in the goes_first order of the claims of the pass before, walking ops topologically: a
  // second pass always, a third only where the second misordered at most kNearlyOrdered ops
  // (the second stops beyond that many, the third at its first). False: the certificate
  // failed (or a time or depth overflowed), and nothing of it is kept.
  KB_HD KB_NOINLINE bool fast() {
    Pass p = pass(false, kOps);
    passes = 1;
    first_pass = p == Pass::ok;
    while (p == Pass::misordered && passes <= kOrderPasses) {
      order_by_claims();
      ++passes;
      p = pass(true, passes <= kOrderPasses ? kNearlyOrdered : 0);
    }
    return p == Pass::ok;
  }

  enum class Pass { ok, misordered, failed };

  // One pass of the fast path: in id order, or (`by_order`) topologically over dependencies,
  // program order on in-order resources and `order_next` on arbitrated ones. Up to `tolerate`
  // misordered ops do not end the pass, whose claims then order the next one.
  KB_HD Pass pass(bool by_order, std::int32_t tolerate) {
    clear_results();
    for (std::int32_t i = 0; i < n; ++i) ready_t[i] = 0, depth[i] = 0;
    for (std::int32_t r = 0; r < nres; ++r) fres[r] = FastRes{}, res_wait[r] = -1;  // res_wait: r's last op so far
    auto reach = [&](std::int32_t j, ps_t t, std::int32_t d) {  // j is ready no earlier than t (depth d)
      if (t > ready_t[j]) ready_t[j] = t, depth[j] = static_cast<Id>(d);
      else if (t == ready_t[j] && d > depth[j]) depth[j] = static_cast<Id>(d);
    };
    std::int32_t head = 0, tail = 0;  // by_order: the queue of ops whose predecessors are done
    if (by_order) {
      for (std::int32_t i = 0; i < n; ++i) indeg[i] = remaining[i];
      for (std::int32_t i = 0; i < n; ++i) {
        const std::int32_t nx = res_arb[res[i]] ? order_next[i] : next_in_res[i];
        if (nx >= 0) ++indeg[nx];
      }
      for (std::int32_t i = 0; i < n; ++i)
        if (indeg[i] == 0) queue[tail++] = static_cast<Id>(i);
    }
    auto done = [&](std::int32_t j) {
      if (by_order && --indeg[j] == 0) queue[tail++] = static_cast<Id>(j);
    };
    misordered = 0;
    for (std::int32_t step = 0; step < n; ++step) {
      if (by_order && head == tail) return Pass::failed;  // the orders and dependencies form a cycle
      const std::int32_t i = by_order ? queue[head++] : step;
      const std::int32_t r = res[i];
      const Claim c{ready_t[i], key[i], issue[i]};
      Claim last;
      const bool has_last = res_arb[r] && res_wait[r] >= 0;
      if (has_last) last = claim(res_wait[r]);
      Served sv;
      const Serve how = serve_fast(fres[r], res_arb[r], res_lat[r], has_last ? &last : nullptr, c, depth[i], busy[i], &sv);
      if (how == Serve::failed || (how == Serve::misordered && ++misordered > tolerate)) return Pass::failed;
      const ps_t start = sv.start, end = sv.end, lat = res_lat[r];
      const std::int32_t at = sv.at;
      end_t[i] = end;
      res_wait[r] = static_cast<Id>(i);
      account(i, end);
      for (std::int32_t k = dep_begin[i]; k < dep_begin[i + 1]; ++k) {
        reach(dependents[k], end, sv.end_depth);
        done(dependents[k]);
      }
      if (head_next[i] >= 0) {
        reach(head_next[i], start + lat, lat == 0 ? at : 0);
        done(head_next[i]);
      }
      const std::int32_t nx = res_arb[r] ? order_next[i] : next_in_res[i];
      if (nx >= 0) done(nx);
    }
    return misordered > 0 ? Pass::misordered : Pass::ok;
  }

  // order_next: each arbitrated resource's ops in the goes_first order of the claims of the
  // last pass (ties, which goes_first never leaves, by id).
  KB_HD void order_by_claims() {
    for (std::int32_t r = 0; r <= nres; ++r) indeg[r] = 0;  // per resource: where its ops begin
    for (std::int32_t i = 0; i < n; ++i) ++indeg[res[i] + 1];
    for (std::int32_t r = 0; r < nres; ++r) indeg[r + 1] = static_cast<Id>(indeg[r + 1] + indeg[r]);
    for (std::int32_t i = 0; i < n; ++i) queue[indeg[res[i]]++] = static_cast<Id>(i);  // indeg[r]: r's end
    for (std::int32_t r = 0, lo = 0; r < nres; lo = indeg[r++]) {
      const std::int32_t hi = indeg[r];
      if (!res_arb[r]) continue;
      for (std::int32_t k = lo + 1; k < hi; ++k) {  // insertion sort by claim
        const Id x = queue[k];
        std::int32_t j = k - 1;
        while (j >= lo && goes_first(claim(x), claim(queue[j]))) {
          queue[j + 1] = queue[j];
          --j;
        }
        queue[j + 1] = x;
      }
      for (std::int32_t k = lo; k < hi; ++k) order_next[queue[k]] = k + 1 < hi ? queue[k + 1] : static_cast<Id>(-1);
    }
  }

  // ---- the event simulation ----

  // Without branches: in the heap's sift-down which child is less is a coin toss, and a
  // branch on it mispredicts half the time (the halving-doubling allreduce on HBM, whose
  // levels most often run here, took 20 % less time).
  KB_HD static bool before(const Event& a, const Event& b) {
    return (a.time < b.time) | ((a.time == b.time) & (a.order < b.order));
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
  // Takes the least event: the hole moves down to a leaf along the lesser children (one
  // comparison a level), then the last event, which most often belongs near the bottom,
  // rises from there. Keys are unique (the sequence is in them), so the heap's shape never
  // decides which event comes first.
  KB_HD KB_NOINLINE void pop() {
    const Event last = ev[--nev];
    std::int32_t i = 0;
    for (std::int32_t l = 1; l < nev; l = 2 * i + 1) {
      const std::int32_t m = l + 1 < nev && before(ev[l + 1], ev[l]) ? l + 1 : l;
      ev[i] = ev[m];
      i = m;
    }
    while (i > 0 && before(last, ev[(i - 1) / 2])) {
      ev[i] = ev[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    ev[i] = last;
  }
  KB_HD KB_NOINLINE void start_op(std::int32_t id) {
    const ps_t lat = res_lat[res[id]];
    const ps_t busy_end = now + busy[id], end = busy_end + lat;
    if (overflows(busy[id], lat, end)) {
      status = kSimTimeOverflow;
      return;
    }
    res_busy[res[id]] = 1;
    end_t[id] = end;
    account(id, end);
    schedule(busy_end, kRelease, id);
    if (head_next[id] >= 0) schedule(now + lat, kHead, id);
    schedule(end, kComplete, id);
  }
  KB_HD KB_NOINLINE void try_head(std::int32_t r) {
    if (res_busy[r] || res_qhead[r] < 0) return;
    if (remaining[res_qhead[r]] == 0) start_op(res_qhead[r]);
  }
  KB_HD KB_NOINLINE void request_arbitration(std::int32_t r) {
    if (res_busy[r] || res_arbitrating[r] || res_wait[r] < 0) return;
    res_arbitrating[r] = 1;
    pending[npending++] = static_cast<Id>(r);
    if (!round_scheduled) {
      round_scheduled = true;
      schedule(now, kArbitrate, -1);
    }
  }
  KB_HD KB_NOINLINE void make_ready(std::int32_t id) {
    ready_t[id] = now;
    next_in_res[id] = res_wait[res[id]];  // arbitrated ops are never queued in order
    res_wait[res[id]] = static_cast<Id>(id);
    request_arbitration(res[id]);
  }
  KB_HD Claim claim(std::int32_t o) const { return Claim{ready_t[o], key[o], issue[o]}; }
  // Each resource of the round chooses once: the waiting op that goes first.
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
        if (goes_first(claim(o), claim(best))) best = o, best_prev = prev;
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
    clear_results();
    nev = 0, npending = 0, seq = 0, now = 0;
    round_scheduled = false;
    for (std::int32_t r = 0; r < nres; ++r) res_busy[r] = 0, res_wait[r] = -1, res_arbitrating[r] = 0;
    for (std::int32_t i = 0; i < n; ++i)
      if (remaining[i] == 0 && res_arb[res[i]]) make_ready(i);
    for (std::int32_t r = 0; r < nres; ++r) try_head(r);
    std::int32_t completed = 0;
    while (nev > 0 && status == kSimOk) {
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
    if (status == kSimOk && completed != n) status = kSimTooLarge;  // a deadlock: the models emit none
  }
};

}  // namespace sim
}  // namespace kb
