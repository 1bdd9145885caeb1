// The device simulator's fast path, replayed with new busy times (host code): a model that
// evaluates many configs of one structure (the same ops on the same resources with the same
// dependencies, only their sizes differ: a sweep of message sizes) builds the op graph of the
// first into an EventSim, runs it, and keeps the graph here with the order its run served
// the ops in; for each next config it computes only the ops' busy times and serves the ops
// in that order by the rule of serve_flat (fast_rule.h): the simulator's pass in a fixed
// order, without depths. The replay is the model's answer where its certificate holds: every
// arbitrated resource meets its claims in goes_first order, and every op holds its resource
// a while (docs/model.md section 11.11 gives the conditions and why they suffice). Otherwise
// the model evaluates the config as it would have. Where the caller knows groups of costs to
// be equal (pieces of one size), the ops are served by classes whose times are provably alike
// (ReplayClasses): a level's ranks mostly do the same thing at the same time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "../common/units.h"
#include "arbitration.h"
#include "fast_rule.h"
#include "transfer.h"

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
  void size(std::int32_t nbusy, std::int32_t n) {
    busy.resize(static_cast<std::size_t>(nbusy));
    for (std::vector<ps_t>* v : {&ready, &start, &held, &end}) v->resize(static_cast<std::size_t>(n));
  }
};

// Whether a replay of n ops, each holding its resource one of `costs` (ncosts of them) and
// at most `most_lat` latency, may be taken: every busy time is above 0 (serve_flat's
// condition: every op holds its resource a while), and every end is within the int64 guard
// (fast_rule.h, overflows): an end is at most the sum of the busy times and latencies of the
// ops served up to it (its start is an earlier op's end, head time or release), so n times
// the largest of each suffices.
inline bool replay_fits(const ps_t* costs, std::int32_t ncosts, ps_t most_lat, std::int32_t n) {
  ps_t most = 0;
  for (std::int32_t j = 0; j < ncosts; ++j) {
    if (costs[j] <= 0) return false;
    most = imax(most, costs[j]);
  }
  return most <= kTimeLimitPs && most_lat <= kTimeLimitPs && most + most_lat <= kTimeLimitPs / (n + 1);
}

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
  const std::int32_t n = p.n;
  if (!replay_fits(costs, ncosts, p.most_lat, n)) return false;
  s.size(n, n);
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
  for (const std::int16_t i : p.chains) xfer::stream(busy + i, chain_len[i]);
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

// An order's ops merged into classes whose times are equal for every busy time, where ops of
// one cost group cost alike (the caller's grouping of the costs: by what their values depend
// on, where a config's pieces all have one size): two ops are in one class where they take the
// same busy time (the slowest of the same groups: one group, or a chain's), have the same
// latency, head latency and classes of head predecessor, of the op before them on their
// resource and of what they wait for (as a set: a ready time is a max). Then the rule of the
// replay gives them the same ready time, start, release and end, and their claims' checks are
// those of their classes. Served class by class, in the order of each class's first op.
struct ReplayClasses {
  struct Step {
    ps_t lat, head_lat;
    std::int32_t pred_begin;  // what it waits for: preds[pred_begin .. pred_end[class])
    std::int16_t busy;        // its busy time: an index into busy_groups' sets
    std::int16_t prev, head;  // classes (-1: none)
  };
  struct Check {
    std::int16_t prev, at;     // a claim of class `at` must go after one of class `prev`
    std::int8_t after_at_tie;  // where both are ready at one time: whether it does
  };
  struct Mark {
    std::int16_t mark, cls;  // the mark's last end is at least the class's end
  };
  std::int32_t n = 0;  // the graph's ops (the int64 guard counts them)
  std::vector<Step> steps;
  std::vector<std::int32_t> pred_end;
  std::vector<std::int16_t> preds;
  // Per busy time, the groups whose slowest it takes (CSR), and how many vector-class ops take it.
  std::vector<std::int32_t> busy_begin;
  std::vector<std::int16_t> busy_groups;
  std::vector<std::int64_t> vector_ops;
  std::vector<Check> checks;
  std::vector<Mark> marks;
};

// The classes of `p`'s ops in order `o`, op i's cost p.cost[i] in group group[p.cost[i]].
inline void classes_of(const Replay& p, const ReplayOrder& o, const std::int16_t* group, ReplayClasses& out) {
  const std::size_t n = static_cast<std::size_t>(p.n);
  // Each op's busy time: the set of groups it takes the slowest of.
  std::vector<std::int32_t> chain_of(n, -1);
  for (const std::int16_t i : p.chains)
    for (std::int32_t k = i; k < i + p.chain_len[static_cast<std::size_t>(i)]; ++k) chain_of[static_cast<std::size_t>(k)] = i;
  std::map<std::vector<std::int16_t>, std::int16_t> busy_ids;
  std::vector<std::int16_t> busy_of(n);
  out.busy_begin.assign(1, 0);
  out.busy_groups.clear();
  out.vector_ops.clear();
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int16_t> set;
    const std::int32_t c = chain_of[i];
    if (c < 0) set.push_back(group[p.cost[i]]);
    for (std::int32_t k = c; c >= 0 && k < c + p.chain_len[static_cast<std::size_t>(c)]; ++k)
      set.push_back(group[p.cost[static_cast<std::size_t>(k)]]);
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    const auto at = busy_ids.emplace(set, static_cast<std::int16_t>(busy_ids.size()));
    if (at.second) {
      out.busy_groups.insert(out.busy_groups.end(), set.begin(), set.end());
      out.busy_begin.push_back(static_cast<std::int32_t>(out.busy_groups.size()));
      out.vector_ops.push_back(0);
    }
    busy_of[i] = at.first->second;
  }
  // The classes, position by position: a key of what decides its times, classes of earlier
  // positions only.
  std::map<std::vector<std::int64_t>, std::int16_t> ids;
  std::vector<std::int16_t> cls(n);
  std::map<std::vector<std::int64_t>, bool> checks, marks;
  out.n = p.n;
  out.steps.clear(), out.pred_end.clear(), out.preds.clear(), out.checks.clear(), out.marks.clear();
  for (std::size_t q = 0; q < n; ++q) {
    const ReplayStep& st = o.steps[q];
    const std::size_t i = static_cast<std::size_t>(st.op);
    std::vector<std::int64_t> key{busy_of[i], st.lat, st.head_lat, st.head >= 0 ? cls[static_cast<std::size_t>(st.head)] : -1,
                                  st.prev >= 0 ? cls[static_cast<std::size_t>(st.prev)] : -1};
    const std::size_t fixed = key.size();
    for (std::int32_t k = st.pred_begin; k < o.pred_end[q]; ++k) key.push_back(cls[static_cast<std::size_t>(o.preds[static_cast<std::size_t>(k)])]);
    std::sort(key.begin() + static_cast<std::ptrdiff_t>(fixed), key.end());
    key.erase(std::unique(key.begin() + static_cast<std::ptrdiff_t>(fixed), key.end()), key.end());
    const auto at = ids.emplace(key, static_cast<std::int16_t>(ids.size()));
    cls[q] = at.first->second;
    if (at.second) {
      ReplayClasses::Step s;
      s.lat = st.lat, s.head_lat = st.head_lat, s.busy = busy_of[i];
      s.head = static_cast<std::int16_t>(key[3]), s.prev = static_cast<std::int16_t>(key[4]);
      s.pred_begin = static_cast<std::int32_t>(out.preds.size());
      for (std::size_t k = fixed; k < key.size(); ++k) out.preds.push_back(static_cast<std::int16_t>(key[k]));
      out.pred_end.push_back(static_cast<std::int32_t>(out.preds.size()));
      out.steps.push_back(s);
    }
    if (p.res_class[static_cast<std::size_t>(p.res[i])] > 0) ++out.vector_ops[static_cast<std::size_t>(busy_of[i])];
    if (st.check && checks.emplace(std::vector<std::int64_t>{cls[static_cast<std::size_t>(st.prev)], cls[q], st.after_at_tie}, true).second)
      out.checks.push_back(ReplayClasses::Check{cls[static_cast<std::size_t>(st.prev)], cls[q], st.after_at_tie});
    for (const std::int8_t m : {p.mark_a[i], p.mark_b[i]})
      if (m >= 0 && marks.emplace(std::vector<std::int64_t>{m, cls[q]}, true).second)
        out.marks.push_back(ReplayClasses::Mark{m, cls[q]});
  }
  // A mark's last end is that of a class no other class of the mark comes after: a class ends
  // after everything it waits for (busy times are above 0) and after the op before it on its
  // resource (the same latency, its start no earlier than that op's release). What each class
  // comes after, transitively, as bits.
  const std::size_t nc = out.steps.size(), words = (nc + 63) / 64;
  std::vector<std::uint64_t> after(nc * words, 0);  // after[c]: the classes c comes after
  for (std::size_t c = 0; c < nc; ++c) {
    std::uint64_t* row = after.data() + c * words;
    auto take = [&](std::int32_t d) {
      if (d < 0) return;
      const std::uint64_t* from = after.data() + static_cast<std::size_t>(d) * words;
      for (std::size_t w = 0; w < words; ++w) row[w] |= from[w];
      row[static_cast<std::size_t>(d) / 64] |= std::uint64_t{1} << (d % 64);
    };
    take(out.steps[c].prev);
    for (std::int32_t k = out.steps[c].pred_begin; k < out.pred_end[c]; ++k) take(out.preds[static_cast<std::size_t>(k)]);
  }
  std::vector<ReplayClasses::Mark> kept;
  for (const ReplayClasses::Mark& m : out.marks) {
    bool last = true;
    for (const ReplayClasses::Mark& o : out.marks)
      if (o.mark == m.mark && o.cls != m.cls &&
          (after[static_cast<std::size_t>(o.cls) * words + static_cast<std::size_t>(m.cls) / 64] >> (m.cls % 64)) & 1)
        last = false;
    if (last) kept.push_back(m);
  }
  out.marks.swap(kept);
}

// Each busy time of `p` (the slowest of its groups' costs) into busy[], and the vector-class
// ops' busy times summed.
inline ps_t busy_times(const ReplayClasses& p, const ps_t* costs, ps_t* busy) {
  ps_t vector_busy = 0;
  for (std::size_t b = 0; b < p.vector_ops.size(); ++b) {
    ps_t slowest = 0;
    for (std::int32_t k = p.busy_begin[b]; k < p.busy_begin[b + 1]; ++k)
      slowest = imax(slowest, costs[p.busy_groups[static_cast<std::size_t>(k)]]);
    busy[b] = slowest;
    vector_busy += p.vector_ops[b] * slowest;
  }
  return vector_busy;
}

// replay() on the classes: the same results, where every cost of group g costs costs[g]
// (ngroups groups) and `most_lat` is the graph's largest latency.
inline bool replay_classes(const ReplayClasses& p, const ps_t* costs, std::int32_t ngroups, ps_t most_lat,
                           ReplayState& s, ps_t* mark_done, std::int32_t marks) {
  if (!replay_fits(costs, ngroups, most_lat, p.n)) return false;
  const std::int32_t n = static_cast<std::int32_t>(p.steps.size()), nbusy = static_cast<std::int32_t>(p.vector_ops.size());
  s.size(nbusy, n);
  ps_t* const busy = s.busy.data();
  ps_t *const ready_at = s.ready.data(), *const start = s.start.data(), *const held = s.held.data();
  ps_t* const end = s.end.data();
  const ps_t vector_busy = busy_times(p, costs, busy);
  const ReplayClasses::Step* const steps = p.steps.data();
  const std::int32_t* const pred_end = p.pred_end.data();
  const std::int16_t* const preds = p.preds.data();
  ps_t latency = 0;
  for (std::int32_t q = 0; q < n; ++q) {
    const ReplayClasses::Step& st = steps[q];
    ps_t ready = st.head >= 0 ? start[st.head] + st.head_lat : 0;
    for (std::int32_t k = st.pred_begin; k < pred_end[q]; ++k) ready = imax(ready, end[preds[k]]);
    const ps_t b = busy[st.busy], at = imax(ready, st.prev >= 0 ? held[st.prev] : 0), e = at + b + st.lat;
    ready_at[q] = ready, start[q] = at, held[q] = at + b, end[q] = e;
    latency = imax(latency, e);
  }
  for (const ReplayClasses::Check& c : p.checks)
    if (ready_at[c.prev] > ready_at[c.at] || (ready_at[c.prev] == ready_at[c.at] && !c.after_at_tie)) return false;
  s.latency = latency, s.class_busy[0] = 0, s.class_busy[1] = vector_busy;
  if (mark_done) {
    for (std::int32_t m = 0; m < marks; ++m) mark_done[m] = 0;
    for (const ReplayClasses::Mark& m : p.marks) mark_done[m.mark] = imax(mark_done[m.mark], end[m.cls]);
  }
  return true;
}

// The classes' times in closed form: each a max of linear forms in the busy times
// (ReplayClasses::vector_ops.size() of them, each at least 1 ps), k + sum_b c_b busy_b. The
// replay's rule is max and plus, so every ready time, start, release and end is such a max; a
// form is dropped where another of the same max is at least it for every busy time of at
// least 1 (each coefficient at least its, and at least it where all are 1). What a config
// needs is then a few forms: the latency, each mark's last end, and the ready times of the
// checks that do not hold for every busy time (a check holds for all where each form of the
// earlier claim's ready time is below, or at a tie allowed at most, a form of the later's).
struct ReplayForms {
  struct Range {
    std::int32_t begin = 0, end = 0;  // forms [begin, end)
  };
  struct Check {
    Range prev, at;
    std::int8_t after_at_tie;
  };
  struct Mark {
    std::int16_t mark;
    Range last;
  };
  std::int32_t nbusy = 0;
  std::vector<ps_t> k;             // per form, its constant
  std::vector<std::int32_t> coef;  // per form, nbusy coefficients
  Range latency;
  std::vector<Check> checks;
  std::vector<Mark> marks;
  std::int64_t forms() const { return static_cast<std::int64_t>(k.size()); }
};

namespace replay_detail {
struct Form {
  ps_t k;
  std::vector<std::int32_t> c;
  ps_t at_one() const {
    ps_t v = k;
    for (const std::int32_t x : c) v += x;
    return v;
  }
};
using Max = std::vector<Form>;
// a >= b for every busy time of at least 1 (strict: >).
inline bool covers(const Form& a, const Form& b, bool strict) {
  for (std::size_t i = 0; i < a.c.size(); ++i)
    if (a.c[i] < b.c[i]) return false;
  return strict ? a.at_one() > b.at_one() : a.at_one() >= b.at_one();
}
// max(a, b) into a, without forms another covers.
inline void take_max(Max& a, const Max& b) {
  for (const Form& f : b) {
    bool covered = false;
    for (const Form& g : a) covered = covered || covers(g, f, false);
    if (covered) continue;
    a.erase(std::remove_if(a.begin(), a.end(), [&](const Form& g) { return covers(f, g, false); }), a.end());
    a.push_back(f);
  }
}
}  // namespace replay_detail

// The closed form of `p` (out), or false where a time needs more than `most` forms.
inline bool forms_of(const ReplayClasses& p, std::int32_t most, ReplayForms& out) {
  using replay_detail::Form;
  using replay_detail::Max;
  const std::size_t n = p.steps.size(), nbusy = p.vector_ops.size();
  std::vector<Max> ready(n), start(n), held(n), end(n);
  Max latency;
  auto shifted = [](Max m, ps_t by, std::int32_t busy) {
    for (Form& f : m) {
      f.k += by;
      if (busy >= 0) ++f.c[static_cast<std::size_t>(busy)];
    }
    return m;
  };
  for (std::size_t q = 0; q < n; ++q) {
    const ReplayClasses::Step& st = p.steps[q];
    Max r{Form{0, std::vector<std::int32_t>(nbusy, 0)}};
    if (st.head >= 0) replay_detail::take_max(r, shifted(start[static_cast<std::size_t>(st.head)], st.head_lat, -1));
    for (std::int32_t k = st.pred_begin; k < p.pred_end[q]; ++k)
      replay_detail::take_max(r, end[static_cast<std::size_t>(p.preds[static_cast<std::size_t>(k)])]);
    Max a = r;
    if (st.prev >= 0) replay_detail::take_max(a, held[static_cast<std::size_t>(st.prev)]);
    ready[q] = std::move(r);
    start[q] = std::move(a);
    held[q] = shifted(start[q], 0, st.busy);
    end[q] = shifted(start[q], st.lat, st.busy);
    replay_detail::take_max(latency, end[q]);
    for (const Max* m : {&ready[q], &start[q], &latency})
      if (static_cast<std::int32_t>(m->size()) > most) return false;
  }
  out = ReplayForms{};
  out.nbusy = static_cast<std::int32_t>(nbusy);
  auto keep = [&](const Max& m) {
    ReplayForms::Range r;
    r.begin = static_cast<std::int32_t>(out.k.size());
    for (const Form& f : m) out.k.push_back(f.k), out.coef.insert(out.coef.end(), f.c.begin(), f.c.end());
    r.end = static_cast<std::int32_t>(out.k.size());
    return r;
  };
  out.latency = keep(latency);
  for (const ReplayClasses::Check& c : p.checks) {
    const Max &before = ready[static_cast<std::size_t>(c.prev)], &after = ready[static_cast<std::size_t>(c.at)];
    bool always = true;
    for (const Form& f : before) {
      bool below = false;
      for (const Form& g : after) below = below || replay_detail::covers(g, f, !c.after_at_tie);
      always = always && below;
    }
    if (!always) out.checks.push_back(ReplayForms::Check{keep(before), keep(after), c.after_at_tie});
  }
  std::vector<Max> last;
  std::vector<std::int16_t> mark_ids;
  for (const ReplayClasses::Mark& m : p.marks) {
    std::size_t i = 0;
    while (i < mark_ids.size() && mark_ids[i] != m.mark) ++i;
    if (i == mark_ids.size()) mark_ids.push_back(m.mark), last.emplace_back();
    replay_detail::take_max(last[i], end[static_cast<std::size_t>(m.cls)]);
  }
  for (std::size_t i = 0; i < mark_ids.size(); ++i) out.marks.push_back(ReplayForms::Mark{mark_ids[i], keep(last[i])});
  return true;
}

// replay_classes() by the closed form `f` of `p`: the same results.
inline bool replay_forms(const ReplayClasses& p, const ReplayForms& f, const ps_t* costs, std::int32_t ngroups,
                         ps_t most_lat, ReplayState& s, ps_t* mark_done, std::int32_t marks) {
  if (!replay_fits(costs, ngroups, most_lat, p.n)) return false;
  const std::int32_t nbusy = f.nbusy;
  s.size(nbusy, 0);
  ps_t* const busy = s.busy.data();
  const ps_t vector_busy = busy_times(p, costs, busy);
  const ps_t* const k = f.k.data();
  const std::int32_t* const coef = f.coef.data();
  // Each form is a path's busy times and latencies: within the guard, as the replay's times.
  auto value = [&](ReplayForms::Range r) {
    ps_t v = 0;
    for (std::int32_t i = r.begin; i < r.end; ++i) {
      ps_t x = k[i];
      for (std::int32_t b = 0; b < nbusy; ++b) x += coef[i * nbusy + b] * busy[b];
      v = imax(v, x);
    }
    return v;
  };
  for (const ReplayForms::Check& c : f.checks) {
    const ps_t before = value(c.prev), after = value(c.at);
    if (before > after || (before == after && !c.after_at_tie)) return false;
  }
  s.latency = value(f.latency), s.class_busy[0] = 0, s.class_busy[1] = vector_busy;
  if (mark_done) {
    for (std::int32_t m = 0; m < marks; ++m) mark_done[m] = 0;
    for (const ReplayForms::Mark& m : f.marks) mark_done[m.mark] = value(m.last);
  }
  return true;
}

}  // namespace sim
}  // namespace kb
