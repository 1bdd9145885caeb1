// ADR 0007's arbitration rule, written once for the device side. The reference engine has
// its own (src/host/engine/engine.cpp); parity compares the two. On the device the event
// simulator (event_sim.h) and its fast rule (fast_rule.h), the host replay (replay.h), the
// collective's general walk (allreduce_walk.h) and the closed forms of the models where every
// claim on a queue is known before it is served (decode's merge trees, GEMM's split-K partial
// sums) call these. The ring's closed form (allreduce_ring.h) calls neither: it takes a level
// only where every link has one sender whose claims come strictly later one after another,
// so no choice arises, and leaves the rest to the simulator.
#pragma once

#include <cstdint>

#include "../common/kb_hd.h"
#include "../common/units.h"

namespace kb {
namespace sim {

// An op's claim on an arbitrated resource: when it became ready, the issuing PE (its global
// (sip, cube, pe) index) and its place in that PE's program.
struct Claim {
  ps_t ready;
  std::int64_t pe, issue;
};

// Ready first, then the issuing PE, then its issue order. Strict: two claims of one op never
// meet, and two ops of one PE never share an issue index, so the order is total.
KB_HD inline bool goes_first(const Claim& a, const Claim& b) {
  if (a.ready != b.ready) return a.ready < b.ready;
  if (a.pe != b.pe) return a.pe < b.pe;
  return a.issue < b.issue;
}

// The serve step: an op ready at `ready` starts once its server (free from `free`) is,
// and holds it for `busy`; returns its start.
KB_HD inline ps_t take(ps_t& free, ps_t ready, ps_t busy) {
  const ps_t start = ready > free ? ready : free;
  free = start + busy;
  return start;
}
// One server: an op starts once it is ready and the server is free, and holds the server
// for its busy time.
struct Server {
  ps_t free = 0;
  KB_HD ps_t take(ps_t ready, ps_t busy) { return sim::take(free, ready, busy); }
};

// A single-server queue whose claims are all known before the first is served: served in
// goes_first order. `M` has `claim()` and `busy`; each message's `ready` is set to its end
// plus `latency` (when it lands). Insertion sort: queues here hold a handful of messages.
// `busy(m[i])` gives a message's busy time (the overload below: its member `busy`).
template <class M, class Busy>
KB_HD void serve_all(M* m, int n, ps_t latency, const Busy& busy) {
  if (n == 1) {  // the server is free from 0: the message starts as it is ready (times are never negative)
    m[0].ready += busy(m[0]) + latency;
    return;
  }
  for (int i = 1; i < n; ++i) {
    const M x = m[i];
    int j = i - 1;
    while (j >= 0 && goes_first(x.claim(), m[j].claim())) {
      m[j + 1] = m[j];
      --j;
    }
    m[j + 1] = x;
  }
  Server s;
  for (int i = 0; i < n; ++i) {
    const ps_t b = busy(m[i]);
    m[i].ready = s.take(m[i].ready, b) + b + latency;
  }
}
template <class M>
KB_HD void serve_all(M* m, int n, ps_t latency) {
  serve_all(m, n, latency, [](const M& x) { return x.busy; });
}

}  // namespace sim
}  // namespace kb
