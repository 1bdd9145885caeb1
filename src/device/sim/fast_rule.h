// The device simulator's fast path, one op at a time: serving an op on a resource in a fixed
// order, with the certificate of docs/model.md section 11.8 checked as it goes. EventSim's
// passes over a built op graph (event_sim.h) use it, and so does the allreduce model's
// general walk, which serves each op as the transfers are walked (models/allreduce_walk.h).
// The arbitration rule itself is arbitration.h.
#pragma once

#include <cstdint>

#include "../common/kb_hd.h"
#include "../common/units.h"
#include "arbitration.h"

namespace kb {
namespace sim {

constexpr std::int32_t kMaxDepth = 30000;  // rounds in one instant the fast path follows

KB_HD inline bool overflows(ps_t b, ps_t l, ps_t end) {
  return b > kTimeLimitPs || l > kTimeLimitPs || end > kTimeLimitPs;
}

// A time and its depth: the arbitration rounds of its instant before it is processed.
struct Stamp {
  ps_t t = 0;
  std::int32_t d = 0;
  // An op is ready at the latest of what it waits for; at one instant, at the deepest.
  KB_HD void join(ps_t time, std::int32_t depth) {
    if (time > t) t = time, d = depth;
    else if (time == t && depth > d) d = depth;
  }
};

// A resource in the fast path's schedule: when its last op released it (and the depth of
// that release at its instant), and for an arbitrated one, the ready time of its current run
// of ops ready at one instant and the least ready depth the next of them may have.
struct FastRes {
  ps_t free = 0, run_ready = -1;
  std::int16_t free_depth = 0, run_need = 0;
};

enum class Serve { ok, misordered, failed };

struct Served {
  ps_t start, end;
  std::int32_t at;         // the depth of the start, and of its zero-delay consequences
  std::int32_t end_depth;  // the depth of the end (0 unless busy and latency are both 0)
};

// Serves op `c` (ready at c.ready, at depth d) next on resource `r` (arbitrated or in order,
// latency `lat`), holding it `busy` ps. `last`: the claim of the op r served before, if r is
// arbitrated and has served one. misordered: the certificate does not hold for this op (a
// pass may go on, to learn the claims that order the next); failed: a time passes the int64
// guard or the depth its bound.
KB_HD inline Serve serve_fast(FastRes& r, bool arb, ps_t lat, const Claim* last, const Claim& c, std::int32_t d,
                              ps_t busy, Served* s) {
  const ps_t start = imax(c.ready, r.free);
  const std::int32_t d_free = r.free == start ? r.free_depth : 0;
  bool misordered = false;
  std::int32_t at;
  if (arb) {
    if (last && !goes_first(*last, c)) misordered = true;
    if (c.ready != r.run_ready) r.run_ready = c.ready, r.run_need = 0;
    if (d < r.run_need) misordered = true;  // ready in an earlier round than an op chosen before it
    const bool waited = start > c.ready;
    if (!waited && d_free < d) r.run_need = static_cast<std::int16_t>(d);
    at = (waited ? d_free : imax(d, d_free)) + 1;  // the round that chooses it
  } else {
    at = static_cast<std::int32_t>(imax(start == c.ready ? d : 0, start == r.free ? d_free : 0));
  }
  const ps_t end = start + busy + lat;
  if (overflows(busy, lat, end) || at >= kMaxDepth) return Serve::failed;
  r.free = start + busy;
  r.free_depth = static_cast<std::int16_t>(busy == 0 ? at : 0);
  s->start = start, s->end = end, s->at = at;
  s->end_depth = busy + lat == 0 ? at : 0;
  return misordered ? Serve::misordered : Serve::ok;
}

// serve_fast without depths, for a caller that knows every claim on the resource has one ready
// depth and the resource is always free from depth 0: the ops it serves hold their resources a
// while (busy > 0), and the head of an arbitrated op over a zero latency leads only to a
// resource every claim on which comes that way (docs/model.md section 11.10). Condition 2 of
// the certificate cannot fail then, and serve_fast would give the same times and the same
// answer. The depths of the start and the end are left 0: such a caller reads neither.
KB_HD inline Serve serve_flat(FastRes& r, bool arb, ps_t lat, const Claim* last, const Claim& c, ps_t busy, Served* s) {
  const ps_t start = imax(c.ready, r.free);
  const ps_t end = start + busy + lat;
  if (overflows(busy, lat, end)) return Serve::failed;
  r.free = start + busy;
  s->start = start, s->end = end, s->at = 0, s->end_depth = 0;
  return arb && last && !goes_first(*last, c) ? Serve::misordered : Serve::ok;
}

}  // namespace sim
}  // namespace kb
