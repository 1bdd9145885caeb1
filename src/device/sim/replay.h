// The device simulator's fast path, replayed with new busy times (host code): a model that
// evaluates many configs of one structure (the same ops on the same resources with the same
// dependencies, only their sizes differ: a sweep of message sizes) builds the op graph of the
// first into an EventSim, runs it, and keeps the graph here with the order its run served
// the ops in; for each next config it computes only the ops' busy times and serves the ops
// in that order by the rule of serve_flat (fast_rule.h): the simulator's pass in a fixed
// order, without depths. The replay is the model's answer where its certificate holds: every
// arbitrated resource meets its claims in goes_first order, and every op holds its resource
// a while (docs/model.md section 11.11 gives the conditions and why they suffice). Otherwise
// the model evaluates the config as it would have.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../common/units.h"
#include "arbitration.h"
#include "fast_rule.h"

namespace kb {
namespace sim {

// An order to serve a recorded graph's ops in, as the replay reads it: per position, the op
// and what the replay needs of it, its predecessors given by their positions.
struct ReplayStep {
  ps_t lat, head_lat;             // its resource's latency, and its head predecessor's
  std::int32_t pred_begin;        // its predecessors: preds[pred_begin .. pred_end[position])
  std::int16_t op;                // the op
  std::int16_t prev;              // the position of the op served before it on its resource (-1: none)
  std::int16_t head;              // its head predecessor's position (-1: none)
  std::int8_t check;              // its resource is arbitrated and `prev` is an op: its claim must go after prev's
  std::int8_t after_at_tie;       // where the two are ready at one time: whether its (PE, issue) goes after prev's
  std::int8_t vector;             // its resource's busy time is summed (class 1)
};
struct ReplayOrder {
  std::vector<ReplayStep> steps;
  std::vector<std::int32_t> pred_end;  // per position, where its predecessors end
  std::vector<std::int16_t> preds;     // positions
};

// A recorded op graph: per op its resource, issuer (claim key and issue index), marks, the
// ops whose ends it waits for (CSR) and whose head, its chain, and which busy time it takes
// (an index into the caller's table of costs).
struct Replay {
  std::int32_t n = 0, nres = 0;
  std::vector<std::int16_t> res, issue, head_prev, chain_len, cost;
  std::vector<std::int64_t> key;  // the issuer's claim key (EventSim's: its global PE, below 2^24)
  std::vector<std::int32_t> pred_begin;
  std::vector<std::int16_t> preds;  // per op, the ops whose ends it waits for
  std::vector<std::int8_t> mark_a, mark_b;
  std::vector<ps_t> res_lat;
  std::vector<std::int8_t> res_arb, res_class;
  std::vector<std::int16_t> chains;  // each chain's first op (chain_len: its ops)
  ps_t most_lat = 0;                 // the largest latency of a resource

  // Keeps the graph of EventSim `e` (built), with op i's busy time costs[cost_of[i]] on
  // replay.
  template <class E>
  void record(const E& e, const std::int16_t* cost_of) {
    n = e.n, nres = e.nres;
    res.assign(e.res, e.res + n);
    issue.assign(e.issue, e.issue + n);
    chain_len.assign(e.chain_len, e.chain_len + n);
    cost.assign(cost_of, cost_of + n);
    key.assign(e.key, e.key + n);
    mark_a.assign(e.mark_a, e.mark_a + n);
    mark_b.assign(e.mark_b, e.mark_b + n);
    head_prev.assign(static_cast<std::size_t>(n), -1);
    for (std::int32_t i = 0; i < n; ++i)
      if (e.head_next[i] >= 0) head_prev[static_cast<std::size_t>(e.head_next[i])] = static_cast<std::int16_t>(i);
    // The edges in CSR by the op that waits (EventSim keeps them in the order they were added).
    pred_begin.assign(static_cast<std::size_t>(n) + 1, 0);
    for (std::int32_t k = 0; k < e.edges; ++k) ++pred_begin[static_cast<std::size_t>(e.edge_op[k]) + 1];
    for (std::int32_t i = 0; i < n; ++i) pred_begin[i + 1] += pred_begin[i];
    preds.assign(static_cast<std::size_t>(e.edges), 0);
    std::vector<std::int32_t> at(pred_begin.begin(), pred_begin.end() - 1);
    for (std::int32_t k = 0; k < e.edges; ++k) preds[static_cast<std::size_t>(at[e.edge_op[k]]++)] = e.edge_dep[k];
    res_lat.assign(e.res_lat, e.res_lat + nres);
    res_arb.assign(e.res_arb, e.res_arb + nres);
    res_class.assign(e.res_class, e.res_class + nres);
    chains.clear();
    for (std::int32_t i = 0; i < n; ++i)
      if (chain_len[static_cast<std::size_t>(i)] > 0) chains.push_back(static_cast<std::int16_t>(i));
    most_lat = 0;
    for (std::int32_t r = 0; r < nres; ++r) most_lat = imax(most_lat, res_lat[static_cast<std::size_t>(r)]);
  }

  // An order to serve the ops in (`order`), from e's run of the graph: a topological order of
  // what they wait for in which every resource serves them as that run did (by their starts),
  // as the simulator's passes in the claims' order do (EventSim::fast). False where there is
  // none (never, for a run that completed).
  template <class E>
  bool order_of(const E& e, ReplayOrder& out) const {
    std::vector<std::int16_t> order;
    // Each resource's ops by their starts in e's run, and each op's successor on its resource.
    std::vector<std::int32_t> by_start(static_cast<std::size_t>(n)), res_next(static_cast<std::size_t>(n), -1);
    for (std::int32_t i = 0; i < n; ++i) by_start[static_cast<std::size_t>(i)] = i;
    auto start_of = [&](std::int32_t i) { return e.end_t[i] - e.busy[i] - e.res_lat[e.res[i]]; };
    std::sort(by_start.begin(), by_start.end(), [&](std::int32_t a, std::int32_t b) {
      if (e.res[a] != e.res[b]) return e.res[a] < e.res[b];
      return start_of(a) != start_of(b) ? start_of(a) < start_of(b) : a < b;
    });
    std::vector<std::int32_t> indeg(static_cast<std::size_t>(n), 0);
    for (std::int32_t k = 0; k + 1 < n; ++k) {
      const std::int32_t a = by_start[static_cast<std::size_t>(k)], b = by_start[static_cast<std::size_t>(k) + 1];
      if (e.res[a] == e.res[b]) res_next[static_cast<std::size_t>(a)] = b, ++indeg[static_cast<std::size_t>(b)];
    }
    for (std::int32_t i = 0; i < n; ++i)
      indeg[static_cast<std::size_t>(i)] += pred_begin[i + 1] - pred_begin[i] + (head_prev[static_cast<std::size_t>(i)] >= 0);
    order.clear();
    for (std::int32_t i = 0; i < n; ++i)
      if (indeg[static_cast<std::size_t>(i)] == 0) order.push_back(static_cast<std::int16_t>(i));
    auto done = [&](std::int32_t j) {
      if (--indeg[static_cast<std::size_t>(j)] == 0) order.push_back(static_cast<std::int16_t>(j));
    };
    for (std::size_t q = 0; q < order.size(); ++q) {
      const std::int32_t i = order[q];
      for (std::int32_t k = e.dep_begin[i]; k < e.dep_begin[i + 1]; ++k) done(e.dependents[k]);
      if (e.head_next[i] >= 0) done(e.head_next[i]);
      if (res_next[static_cast<std::size_t>(i)] >= 0) done(res_next[static_cast<std::size_t>(i)]);
    }
    if (static_cast<std::int32_t>(order.size()) != n) return false;  // the orders and dependencies form a cycle
    std::vector<std::int16_t> pos(static_cast<std::size_t>(n));
    for (std::int32_t q = 0; q < n; ++q) pos[static_cast<std::size_t>(order[static_cast<std::size_t>(q)])] = static_cast<std::int16_t>(q);
    out.steps.resize(static_cast<std::size_t>(n));
    out.pred_end.resize(static_cast<std::size_t>(n));
    out.preds.clear();
    std::vector<std::int16_t> last_on(static_cast<std::size_t>(nres), -1);  // per resource, its last position so far
    for (std::int32_t q = 0; q < n; ++q) {
      const std::size_t i = static_cast<std::size_t>(order[static_cast<std::size_t>(q)]);
      const std::int32_t h = head_prev[i], r = res[i];
      ReplayStep& st = out.steps[static_cast<std::size_t>(q)];
      st.pred_begin = static_cast<std::int32_t>(out.preds.size());
      for (std::int32_t k = pred_begin[i]; k < pred_begin[i + 1]; ++k)
        out.preds.push_back(pos[static_cast<std::size_t>(preds[static_cast<std::size_t>(k)])]);
      out.pred_end[static_cast<std::size_t>(q)] = static_cast<std::int32_t>(out.preds.size());
      st.op = static_cast<std::int16_t>(i);
      st.lat = res_lat[static_cast<std::size_t>(r)];
      st.head = h >= 0 ? pos[static_cast<std::size_t>(h)] : static_cast<std::int16_t>(-1);
      st.head_lat = h >= 0 ? res_lat[static_cast<std::size_t>(res[static_cast<std::size_t>(h)])] : 0;
      st.prev = last_on[static_cast<std::size_t>(r)];
      st.check = res_arb[static_cast<std::size_t>(r)] && st.prev >= 0;
      // goes_first on two claims ready at one time: by issuing PE, then issue index.
      const std::size_t j = st.prev >= 0 ? static_cast<std::size_t>(order[static_cast<std::size_t>(st.prev)]) : i;
      st.after_at_tie = goes_first(Claim{0, key[j], issue[j]}, Claim{0, key[i], issue[i]});
      st.vector = res_class[static_cast<std::size_t>(r)] > 0;
      last_on[static_cast<std::size_t>(r)] = static_cast<std::int16_t>(q);
    }
    return true;
  }
};

// A replay's scratch (kept by the caller from run to run) and its results.
struct ReplayState {
  std::vector<ps_t> busy;                     // by op
  std::vector<ps_t> ready, start, held, end;  // by position (held: start + busy, the resource's release)
  ps_t latency = 0;
  ps_t class_busy[2] = {0, 0};  // busy time summed per resource class (as EventSim's)
};

// Replays `p`, serving its ops in order `o` (Replay::order_of), op i holding its resource
// costs[p.cost[i]] ps (a chain with an HBM end at its slowest op's, as EventSim::streams), and
// where `mark_done` is given, each mark's last end into mark_done[0, marks). The rule is
// serve_flat's (fast_rule.h), each resource's state read from the op served before on it:
// start at the later of ready and that op's release, end after the busy time and the
// latency; on an arbitrated resource the claim must go after that op's (goes_first). False
// where that fails, an op would hold its resource for no time (ncosts costs, each checked),
// or a time could pass the int64 guard: the replay then says nothing.
inline bool replay(const Replay& p, const ReplayOrder& o, const ps_t* costs, std::int32_t ncosts, ReplayState& s,
                   ps_t* mark_done, std::int32_t marks) {
  // Every end is at most the sum of the busy times and latencies of the ops served up to it
  // (its start is an earlier op's end, head time or release): within the int64 guard
  // (fast_rule.h, overflows) if n times the largest of each is.
  ps_t most = 0;
  for (std::int32_t j = 0; j < ncosts; ++j) {
    if (costs[j] <= 0) return false;  // serve_flat's condition: every op holds its resource a while
    most = imax(most, costs[j]);
  }
  const std::int32_t n = p.n;
  if (most > kTimeLimitPs || p.most_lat > kTimeLimitPs || most + p.most_lat > kTimeLimitPs / (n + 1)) return false;
  s.busy.resize(static_cast<std::size_t>(n));
  s.ready.resize(static_cast<std::size_t>(n));
  s.start.resize(static_cast<std::size_t>(n));
  s.held.resize(static_cast<std::size_t>(n));
  s.end.resize(static_cast<std::size_t>(n));
  // The arrays in locals: the loops below store times, which the compiler cannot otherwise
  // tell from the vectors' own pointers.
  ps_t* const busy = s.busy.data();
  ps_t *const ready_at = s.ready.data(), *const start = s.start.data(), *const held = s.held.data();
  ps_t* const end = s.end.data();
  const std::int16_t *const cost = p.cost.data(), *const chain_len = p.chain_len.data();
  const ReplayStep* const steps = o.steps.data();
  const std::int32_t* const pred_end = o.pred_end.data();
  const std::int16_t* const preds = o.preds.data();
  for (std::int32_t i = 0; i < n; ++i) busy[i] = costs[cost[i]];
  for (const std::int16_t i : p.chains) {
    ps_t slowest = 0;
    for (std::int32_t k = i; k < i + chain_len[i]; ++k) slowest = imax(slowest, busy[k]);
    for (std::int32_t k = i; k < i + chain_len[i]; ++k) busy[k] = slowest;
  }
  ps_t latency = 0, vector_busy = 0;
  for (std::int32_t q = 0; q < n; ++q) {
    const ReplayStep& st = steps[q];
    // Ready once what it waits for has ended, and its head predecessor's head has crossed.
    ps_t ready = st.head >= 0 ? start[st.head] + st.head_lat : 0;
    for (std::int32_t k = st.pred_begin; k < pred_end[q]; ++k) ready = imax(ready, end[preds[k]]);
    const ps_t b = busy[st.op], at = imax(ready, st.prev >= 0 ? held[st.prev] : 0), e = at + b + st.lat;
    if (st.check && (ready_at[st.prev] > ready || (ready_at[st.prev] == ready && !st.after_at_tie))) return false;
    ready_at[q] = ready, start[q] = at, held[q] = at + b, end[q] = e;
    latency = imax(latency, e);
    vector_busy += st.vector ? b : 0;
  }
  s.latency = latency, s.class_busy[0] = 0, s.class_busy[1] = vector_busy;
  if (mark_done) {
    for (std::int32_t m = 0; m < marks; ++m) mark_done[m] = 0;
    for (std::int32_t q = 0; q < n; ++q) {
      const std::int32_t i = steps[q].op;
      if (p.mark_a[i] >= 0) mark_done[p.mark_a[i]] = imax(mark_done[p.mark_a[i]], end[q]);
      if (p.mark_b[i] >= 0) mark_done[p.mark_b[i]] = imax(mark_done[p.mark_b[i]], end[q]);
    }
  }
  return true;
}

}  // namespace sim
}  // namespace kb
