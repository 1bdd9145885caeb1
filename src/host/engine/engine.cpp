#include "engine.h"

#include <algorithm>
#include <functional>

#include "../common/error.h"
#include "../common/thread_spare.h"
#include "event_queue.h"

namespace kb::engine {

const char* to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::no_work: return "no_work";
    case Status::deadlock: return "deadlock";
    case Status::error: return "error";
  }
  return "?";
}

namespace {

// A run's timing takes the storage of the last result destroyed on its thread (ThreadSpare,
// as a graph's per-op storage does).
using SpareTiming = std::vector<OpTiming>;
constexpr std::size_t kSpareTimings = std::size_t{1} << 18;

// Completions are handled before releases at the same instant so that the op log and
// data actions follow one fixed order; start times do not depend on it. An arbitrated
// resource chooses after both, so every op that becomes ready at an instant competes.
// A head event (an op's start plus its latency) releases the ops that follow it cut-through.
enum class EventType : std::int32_t { complete = 0, head = 1, release = 2, arbitrate = 3 };

// An op waiting on an arbitrated resource; the smallest goes first.
struct Waiting {
  ps_t ready;
  std::int32_t sip, cube, pe, issue;
  OpId op;
  bool operator>(const Waiting& o) const {
    if (ready != o.ready) return ready > o.ready;
    if (sip != o.sip) return sip > o.sip;
    if (cube != o.cube) return cube > o.cube;
    if (pe != o.pe) return pe > o.pe;
    if (issue != o.issue) return issue > o.issue;
    return op > o.op;
  }
};

// Ordered by (time, priority, insertion sequence): the key is the time (below 2^62, the
// overflow guard being 2^61) above the priority (2 bits); the queue keeps equal keys in the
// order they were scheduled (event_queue.h).
inline EventQueue::Key event_key(ps_t t, EventType type) {
  return static_cast<std::uint64_t>(t) << 2 | static_cast<std::uint64_t>(type);
}
inline ps_t event_time(EventQueue::Key k) { return static_cast<ps_t>(k >> 2); }
inline EventType event_type(EventQueue::Key k) { return static_cast<EventType>(k & 3); }

class Simulator {
 public:
  // One simulator serves many runs on a thread: its scratch keeps its capacity from run to
  // run (a sweep of reference runs allocates it once, not once a run).
  RunResult run(const Graph& g) {
    g_ = &g;
    now_ = 0;
    event_count_ = 0;
    completed_ = 0;
    error_.clear();
    time_overflow_ = false;
    round_scheduled_ = false;
    pending_.clear();
    round_.clear();
    events_.clear();
    latency_ = 0;
    RunResult r = run_graph();
    g_ = nullptr;
    timing_ = nullptr;
    // A very large graph's scratch is not kept.
    if (remaining_.size() > (std::size_t{1} << 20)) *this = Simulator();
    return r;
  }

 private:
  RunResult run_graph() {
    RunResult r;
    const auto& ops = g_->ops();
    const std::size_t n = ops.size();
    if (n == 0) {
      r.status = Status::no_work;
      r.message = "no work submitted";
      return r;
    }
    build();
    if (SpareTiming* spare = ThreadSpare<SpareTiming>::get()) r.timing.swap(*spare);
    r.timing.assign(n, OpTiming{});
    timing_ = &r.timing;

    for (std::size_t i = 0; i < n; ++i) {
      const OpTimes& op = times_[i];
      if (remaining_[i] != 0) continue;
      if (op.resource == kNoResource && !(op.flags & OpTimes::kSignal)) start(static_cast<OpId>(i));
      else if (op.flags & OpTimes::kArbitrated) ready(static_cast<OpId>(i));
    }
    for (std::size_t res = 0; res < head_.size(); ++res) try_head(static_cast<ResourceId>(res));

    while (!events_.empty() && error_.empty()) {
      const EventQueue::Item e = events_.pop();
      KB_INTERNAL_CHECK(event_time(e.key) >= now_, "event scheduled in the past");
      now_ = event_time(e.key);
      ++event_count_;
      switch (event_type(e.key)) {
        case EventType::complete: complete(e.op); break;
        case EventType::head: head(e.op); break;
        case EventType::release: release(e.op); break;
        case EventType::arbitrate: arbitrate_round(); break;
      }
    }

    // Every op ran: the graph's own sums are the run's; else the sums of the ops that did.
    const OpTotals& sums = error_.empty() && completed_ == n ? g_->totals() : tally_ran(r.timing);
    r.summary = to_summary(sums);
    for (std::size_t i = 0; i < resource_busy_.size(); ++i) {
      auto& m = r.summary.max_resource_busy_ps[static_cast<std::size_t>(g_->resources()[i].cls)];
      m = std::max(m, resource_busy_[i]);
    }
    r.summary.events = event_count_;
    r.resource_busy_ps = resource_busy_;
    r.resource_bytes = resource_bytes_;
    if (!error_.empty()) {
      r.status = Status::error;
      r.message = error_;
      r.time_overflow = time_overflow_;
    } else if (completed_ != n) {
      r.status = Status::deadlock;
      r.message = describe_deadlock(r.timing);
    }
    return r;
  }

  void build() {
    const auto& ops = g_->ops();
    const std::size_t n = ops.size();
    remaining_ = g_->waits();
    // Dependents of each op, in two CSR lists: on its completion, and on its head. The
    // graph counted the first as its edges were added.
    auto csr = [&](const std::vector<Edge>& edges, const std::int32_t* counts, std::vector<std::int32_t>& begin,
                   std::vector<OpId>& out) {
      std::vector<std::int32_t>& deg = tmp_;
      if (counts) {
        deg.resize(n + 1);
        deg[0] = 0;
        for (std::size_t i = 0; i < n; ++i) deg[i + 1] = deg[i] + counts[i];
      } else {
        deg.assign(n + 1, 0);
        for (const Edge& e : edges) ++deg[static_cast<std::size_t>(e.dep) + 1];
        for (std::size_t i = 0; i < n; ++i) deg[i + 1] += deg[i];
      }
      begin = deg;
      out.resize(edges.size());
      for (const Edge& e : edges) out[static_cast<std::size_t>(deg[static_cast<std::size_t>(e.dep)]++)] = e.op;
    };
    csr(g_->edges(), g_->completion_dependents().data(), dep_begin_, dependents_);
    has_heads_ = !g_->head_edges().empty();
    if (has_heads_) csr(g_->head_edges(), nullptr, head_begin_, head_dependents_);  // else never read
    times_ = g_->times().data();
    const std::size_t nres = g_->resources().size();
    arbitrated_.assign(nres, 0);
    for (std::size_t r = 0; r < nres; ++r) arbitrated_[r] = g_->resources()[r].discipline == Discipline::arbitrated;
    waiting_.resize(nres);
    for (auto& w : waiting_) w.clear();
    arbitrating_.assign(nres, 0);
    // In-order resources queue their ops by id; arbitrated ones keep a heap of ready ops.
    std::vector<std::int32_t>& qcount = tmp_;
    qcount.assign(nres + 1, 0);
    for (std::size_t r = 0; r < nres; ++r) qcount[r + 1] = qcount[r] + (arbitrated_[r] ? 0 : g_->totals().resource_ops[r]);
    queue_begin_ = qcount;
    queue_.assign(static_cast<std::size_t>(qcount[nres]), 0);
    head_.assign(qcount.begin(), qcount.end() - 1);  // fills the queues, then is each one's head
    for (std::size_t i = 0; i < n; ++i)
      if (times_[i].resource != kNoResource && !(times_[i].flags & OpTimes::kArbitrated))
        queue_[static_cast<std::size_t>(head_[static_cast<std::size_t>(times_[i].resource)]++)] = static_cast<OpId>(i);
    head_.assign(qcount.begin(), qcount.end() - 1);
    busy_.assign(nres, 0);
  }

  void schedule(ps_t t, EventType type, OpId op) {
    KB_INTERNAL_CHECK(t >= now_, "scheduling an event in the past");
    events_.push(event_key(t, type), op);
  }

  void start(OpId id) {
    const OpTimes& op = times_[static_cast<std::size_t>(id)];
    OpTiming& t = (*timing_)[static_cast<std::size_t>(id)];
    t.start = now_;
    t.busy_end = now_ + op.busy_ps;
    // Durations are each below the limit, so these sums cannot wrap before the check.
    t.end = t.busy_end + op.latency_ps;
    latency_ = std::max(latency_, t.end);
    if (op.busy_ps > kTimeLimitPs || op.latency_ps > kTimeLimitPs || t.end > kTimeLimitPs) {
      if (error_.empty()) {
        error_ = "simulated time passes 2^61 ps (int64 overflow guard) at " + g_->op_name(id);
        time_overflow_ = true;
      }
      return;
    }
    if (op.resource != kNoResource) {
      busy_[static_cast<std::size_t>(op.resource)] = 1;
      schedule(t.busy_end, EventType::release, id);
    }
    if (has_heads_ && head_begin_[static_cast<std::size_t>(id)] != head_begin_[static_cast<std::size_t>(id) + 1])
      schedule(now_ + op.latency_ps, EventType::head, id);
    schedule(t.end, EventType::complete, id);
  }

  void try_head(ResourceId res) {
    const auto r = static_cast<std::size_t>(res);
    if (busy_[r] || head_[r] == queue_begin_[r + 1]) return;
    const OpId h = queue_[static_cast<std::size_t>(head_[r])];
    if (remaining_[static_cast<std::size_t>(h)] == 0) start(h);
  }

  // An op on an arbitrated resource whose dependencies are done: it waits for the
  // resource's next choice, made once every event of this instant has been handled.
  void ready(OpId id) {
    const Op& op = g_->ops()[static_cast<std::size_t>(id)];
    const auto r = static_cast<std::size_t>(op.resource);
    waiting_[r].push_back(Waiting{now_, op.rank.sip, op.rank.cube, op.rank.pe, op.issue, id});
    std::push_heap(waiting_[r].begin(), waiting_[r].end(), std::greater<Waiting>{});
    request_arbitration(op.resource);
  }

  // Arbitrated resources choose in rounds: one round per instant at a time, after every
  // completion, head and release of that instant, each resource then choosing on its own.
  // What the round's starts set off at the same instant (a head over a zero-latency link)
  // competes in the next round, so no choice depends on the order events were queued.
  void request_arbitration(ResourceId res) {
    const auto r = static_cast<std::size_t>(res);
    if (busy_[r] || arbitrating_[r] || waiting_[r].empty()) return;
    arbitrating_[r] = 1;
    pending_.push_back(res);
    if (!round_scheduled_) {
      round_scheduled_ = true;
      schedule(now_, EventType::arbitrate, 0);
    }
  }

  void arbitrate_round() {
    round_scheduled_ = false;
    round_.swap(pending_);  // pending_ fills again with what this round sets off
    for (ResourceId res : round_) {
      const auto r = static_cast<std::size_t>(res);
      arbitrating_[r] = 0;
      if (busy_[r] || waiting_[r].empty()) continue;
      std::pop_heap(waiting_[r].begin(), waiting_[r].end(), std::greater<Waiting>{});
      const OpId next = waiting_[r].back().op;
      waiting_[r].pop_back();
      start(next);
    }
    round_.clear();
  }

  void complete(OpId id) {
    ++completed_;
    const auto& actions = g_->actions();
    if (static_cast<std::size_t>(id) < actions.size() && actions[static_cast<std::size_t>(id)])
      actions[static_cast<std::size_t>(id)]();
    for (std::int32_t i = dep_begin_[static_cast<std::size_t>(id)]; i < dep_begin_[static_cast<std::size_t>(id) + 1]; ++i)
      dep_done(dependents_[static_cast<std::size_t>(i)]);
  }

  void head(OpId id) {
    for (std::int32_t i = head_begin_[static_cast<std::size_t>(id)]; i < head_begin_[static_cast<std::size_t>(id) + 1]; ++i)
      dep_done(head_dependents_[static_cast<std::size_t>(i)]);
  }

  void dep_done(OpId d) {
    if (--remaining_[static_cast<std::size_t>(d)] != 0) return;
    const OpTimes& op = times_[static_cast<std::size_t>(d)];
    const ResourceId res = op.resource;
    if (res == kNoResource) start(d);
    else if (op.flags & OpTimes::kArbitrated) ready(d);
    else if (queue_[static_cast<std::size_t>(head_[static_cast<std::size_t>(res)])] == d) try_head(res);
  }

  void release(OpId id) {
    const auto r = static_cast<std::size_t>(times_[static_cast<std::size_t>(id)].resource);
    busy_[r] = 0;
    if (arbitrated_[r]) {
      request_arbitration(static_cast<ResourceId>(r));
      return;
    }
    ++head_[r];
    try_head(static_cast<ResourceId>(r));
  }

  // The sums over the ops that ran (a run that did not finish).
  const OpTotals& tally_ran(const std::vector<OpTiming>& timing) {
    const auto& ops = g_->ops();
    const std::size_t nres = g_->resources().size();
    partial_ = OpTotals{};
    partial_.resource_busy_ps.assign(nres, 0);
    partial_.resource_bytes.assign(nres, 0);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (timing[i].end < 0) continue;
      tally(partial_, op, g_->resources(),
            timing[i].end <= kTimeLimitPs && op.busy_ps <= kTimeLimitPs && op.latency_ps <= kTimeLimitPs);
    }
    return partial_;
  }

  // The run's summary from its sums; and what each resource held and moved.
  Summary to_summary(const OpTotals& t) {
    auto i64 = [](OpTotals::Sum v) { return static_cast<std::int64_t>(v); };
    Summary m;
    m.ops = static_cast<std::int64_t>(g_->ops().size());
    m.latency_ps = latency_;
    for (std::size_t c = 0; c < t.busy_ps.size(); ++c) m.busy_ps[c] = i64(t.busy_ps[c]);
    m.mac_cycles = i64(t.mac_cycles);
    m.macs = i64(t.macs);
    m.hbm_read_bytes = i64(t.hbm_read_bytes);
    m.hbm_write_bytes = i64(t.hbm_write_bytes);
    m.vector_ops = i64(t.vector_ops);
    m.sram_read_bytes = i64(t.sram_read_bytes);
    m.sram_write_bytes = i64(t.sram_write_bytes);
    for (std::size_t l = 0; l < t.link_bytes.size(); ++l) {
      m.link_bytes[l] = i64(t.link_bytes[l]);
      m.link_copies[l] = i64(t.link_copies[l]);
    }
    resource_busy_.resize(t.resource_busy_ps.size());
    resource_bytes_.resize(t.resource_bytes.size());
    for (std::size_t i = 0; i < resource_busy_.size(); ++i) {
      resource_busy_[i] = i64(t.resource_busy_ps[i]);
      resource_bytes_[i] = i64(t.resource_bytes[i]);
    }
    return m;
  }

  std::string describe_deadlock(const std::vector<OpTiming>& timing) const {
    // Every op that never started and whose own deps are not the reason it waits is a
    // root of the stall: either a dep never completed, or it sits behind a stuck op.
    std::vector<std::vector<OpId>> waits_for(g_->ops().size());
    for (const auto* edges : {&g_->edges(), &g_->head_edges()})
      for (const Edge& e : *edges)
        if (timing[static_cast<std::size_t>(e.dep)].start < 0 ||
            (edges == &g_->edges() && (timing[static_cast<std::size_t>(e.dep)].end < 0 || timing[static_cast<std::size_t>(e.dep)].end > now_)))
          waits_for[static_cast<std::size_t>(e.op)].push_back(e.dep);
    std::string msg;
    std::size_t stuck = 0, shown = 0;
    for (std::size_t i = 0; i < g_->ops().size(); ++i) {
      if (timing[i].start >= 0) continue;
      ++stuck;
      const Op& op = g_->ops()[i];
      const bool blocked_by_queue = op.resource != kNoResource && !arbitrated_[static_cast<std::size_t>(op.resource)] &&
                                    queue_[static_cast<std::size_t>(head_[static_cast<std::size_t>(op.resource)])] !=
                                        static_cast<OpId>(i);
      if (blocked_by_queue || shown >= 4) continue;
      ++shown;
      msg += (msg.empty() ? "" : "; ") + g_->op_name(static_cast<OpId>(i)) + " waits for ";
      if (waits_for[i].empty()) {
        msg += "a signal that is never raised";
      } else {
        for (std::size_t k = 0; k < waits_for[i].size() && k < 3; ++k)
          msg += (k ? ", " : "") + g_->op_name(waits_for[i][k]);
      }
    }
    return "deadlock: " + std::to_string(stuck) + " of " + std::to_string(g_->ops().size()) +
           " ops never ran; " + msg;
  }

  const Graph* g_ = nullptr;
  const OpTimes* times_ = nullptr;  // the graph's, packed
  bool has_heads_ = false;
  ps_t latency_ = 0;  // the latest end so far
  OpTotals partial_;  // the sums of a run that did not finish
  std::vector<std::int32_t> tmp_;  // build()'s counts
  std::vector<std::int32_t> remaining_;
  std::vector<std::int32_t> dep_begin_, head_begin_;
  std::vector<OpId> dependents_, head_dependents_;
  std::vector<std::int32_t> queue_begin_;
  std::vector<OpId> queue_;
  std::vector<std::int32_t> head_;
  std::vector<char> busy_;
  std::vector<char> arbitrated_, arbitrating_;
  std::vector<ResourceId> pending_;  // resources waiting for the next arbitration round
  std::vector<ResourceId> round_;    // the round being decided
  bool round_scheduled_ = false;
  std::vector<std::vector<Waiting>> waiting_;  // per arbitrated resource: a min-heap
  std::vector<ps_t> resource_busy_;
  std::vector<std::int64_t> resource_bytes_;
  EventQueue events_;
  std::vector<OpTiming>* timing_ = nullptr;
  ps_t now_ = 0;
  std::int64_t event_count_ = 0;
  std::size_t completed_ = 0;
  std::string error_;
  bool time_overflow_ = false;
};

}  // namespace

RunResult::~RunResult() {
  SpareTiming* spare = ThreadSpare<SpareTiming>::get();
  if (!spare || timing.capacity() > kSpareTimings || timing.capacity() <= spare->capacity()) return;
  timing.clear();
  timing.swap(*spare);  // the spare's old storage goes with this result
}

RunResult simulate(const Graph& g) {
  // Each thread keeps one simulator; a run inside a run (an op's action that simulates)
  // takes a fresh one.
  thread_local Simulator cached;
  thread_local bool in_use = false;
  if (in_use) return Simulator().run(g);
  in_use = true;
  struct Free {
    ~Free() { in_use = false; }
  } free_on_exit;
  return cached.run(g);
}

}  // namespace kb::engine
