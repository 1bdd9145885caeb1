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
  std::int64_t key;               // the issuer's claim key
  std::int32_t pred_begin;        // its predecessors: preds[pred_begin .. next step's)
  std::int16_t op, res, issue;    // the op, its resource and its issue index
  std::int16_t head, head_res;    // its head predecessor's position and resource (-1: none)
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
  std::vector<std::int64_t> key;  // the issuer's claim key (its global PE)
  std::vector<std::int32_t> pred_begin;
  std::vector<std::int16_t> preds;  // per op, the ops whose ends it waits for
  std::vector<std::int8_t> mark_a, mark_b;
  std::vector<ps_t> res_lat;
  std::vector<std::int8_t> res_arb, res_class;

  // Keeps the graph of EventSim `e` (built), with op i's busy time costs[cost_of[i]] on
  // replay and its claims keyed by keys[i] (the issuing PE, whole: EventSim keeps 32 bits of
  // it).
  template <class E>
  void record(const E& e, const std::int16_t* cost_of, const std::int64_t* keys) {
    n = e.n, nres = e.nres;
    res.assign(e.res, e.res + n);
    issue.assign(e.issue, e.issue + n);
    chain_len.assign(e.chain_len, e.chain_len + n);
    cost.assign(cost_of, cost_of + n);
    key.assign(keys, keys + n);
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
    for (std::int32_t q = 0; q < n; ++q) {
      const std::int32_t i = order[static_cast<std::size_t>(q)], h = head_prev[static_cast<std::size_t>(i)];
      ReplayStep& st = out.steps[static_cast<std::size_t>(q)];
      st.key = key[static_cast<std::size_t>(i)];
      st.pred_begin = static_cast<std::int32_t>(out.preds.size());
      for (std::int32_t k = pred_begin[static_cast<std::size_t>(i)]; k < pred_begin[static_cast<std::size_t>(i) + 1]; ++k)
        out.preds.push_back(pos[static_cast<std::size_t>(preds[static_cast<std::size_t>(k)])]);
      out.pred_end[static_cast<std::size_t>(q)] = static_cast<std::int32_t>(out.preds.size());
      st.op = static_cast<std::int16_t>(i), st.res = res[static_cast<std::size_t>(i)];
      st.issue = issue[static_cast<std::size_t>(i)];
      st.head = h >= 0 ? pos[static_cast<std::size_t>(h)] : static_cast<std::int16_t>(-1);
      st.head_res = h >= 0 ? res[static_cast<std::size_t>(h)] : static_cast<std::int16_t>(0);
    }
    return true;
  }
};

// A replay's scratch (kept by the caller from run to run) and its results.
struct ReplayState {
  std::vector<ps_t> busy, start, end;
  std::vector<ps_t> free_at, last_ready;  // per resource: when it is free; an arbitrated one's last claim
  std::vector<std::int64_t> last_key;
  std::vector<std::int32_t> last_issue;
  ps_t latency = 0;
  ps_t class_busy[2] = {0, 0};  // busy time summed per resource class (as EventSim's)
};

// Replays `p`, serving its ops in order `o` (Replay::order_of), op i holding its resource
// costs[p.cost[i]] ps (a chain with an HBM end at its slowest op's, as EventSim::streams), and
// where `mark_done` is given, each mark's last end into mark_done[0, marks). The rule is serve_flat's (fast_rule.h), with the resources'
// state in arrays of their own: start at the later of ready and free, end after the busy time
// and the latency; on an arbitrated resource the claim must go after the one served before.
// False where that fails, an op would hold its resource for no time (ncosts costs, each
// checked), or a time passes the int64 guard: the replay then says nothing.
inline bool replay(const Replay& p, const ReplayOrder& o, const ps_t* costs, std::int32_t ncosts, ReplayState& s,
                   ps_t* mark_done, std::int32_t marks) {
  for (std::int32_t j = 0; j < ncosts; ++j)
    if (costs[j] <= 0 || costs[j] > kTimeLimitPs) return false;  // serve_flat's condition: busy > 0
  const std::int32_t n = p.n, nres = p.nres;
  for (std::int32_t r = 0; r < nres; ++r)
    if (p.res_lat[r] > kTimeLimitPs) return false;
  s.busy.resize(static_cast<std::size_t>(n));
  s.start.resize(static_cast<std::size_t>(n));
  s.end.resize(static_cast<std::size_t>(n));
  s.free_at.assign(static_cast<std::size_t>(nres), 0);
  s.last_ready.assign(static_cast<std::size_t>(nres), -1);
  s.last_key.resize(static_cast<std::size_t>(nres));
  s.last_issue.resize(static_cast<std::size_t>(nres));
  // The arrays in locals: the loops below store times, which the compiler cannot otherwise
  // tell from the vectors' own pointers. busy: by op; start and end: by position.
  ps_t *const busy = s.busy.data(), *const start = s.start.data(), *const end = s.end.data();
  ps_t *const free_at = s.free_at.data(), *const last_ready = s.last_ready.data();
  std::int64_t* const last_key = s.last_key.data();
  std::int32_t* const last_issue = s.last_issue.data();
  const std::int16_t *const cost = p.cost.data(), *const chain_len = p.chain_len.data();
  const ReplayStep* const steps = o.steps.data();
  const std::int32_t* const pred_end = o.pred_end.data();
  const std::int16_t* const preds = o.preds.data();
  const ps_t* const res_lat = p.res_lat.data();
  const std::int8_t *const res_arb = p.res_arb.data(), *const res_class = p.res_class.data();
  for (std::int32_t i = 0; i < n; ++i) busy[i] = costs[cost[i]];
  for (std::int32_t i = 0; i < n; ++i) {
    if (chain_len[i] == 0) continue;
    ps_t slowest = 0;
    for (std::int32_t k = i; k < i + chain_len[i]; ++k) slowest = imax(slowest, busy[k]);
    for (std::int32_t k = i; k < i + chain_len[i]; ++k) busy[k] = slowest;
  }
  ps_t latency = 0, vector_busy = 0;
  for (std::int32_t q = 0; q < n; ++q) {
    const ReplayStep& st = steps[q];
    // Ready once what it waits for has ended, and its head predecessor's head has crossed.
    ps_t ready = st.head >= 0 ? start[st.head] + res_lat[st.head_res] : 0;
    for (std::int32_t k = st.pred_begin; k < pred_end[q]; ++k) ready = imax(ready, end[preds[k]]);
    const std::int32_t r = st.res;
    const ps_t b = busy[st.op], at = imax(ready, free_at[r]), e = at + b + res_lat[r];
    if (e > kTimeLimitPs) return false;  // the int64 guard (fast_rule.h, overflows)
    free_at[r] = at + b;
    start[q] = at, end[q] = e;
    latency = imax(latency, e);
    if (res_class[r] > 0) vector_busy += b;
    if (res_arb[r]) {
      if (last_ready[r] >= 0 && !goes_first(Claim{last_ready[r], last_key[r], last_issue[r]}, Claim{ready, st.key, st.issue}))
        return false;
      last_ready[r] = ready, last_key[r] = st.key, last_issue[r] = st.issue;
    }
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
