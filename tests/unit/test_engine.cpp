#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>
#include <thread>

#include "host/engine/engine.h"
#include "host/engine/event_queue.h"

namespace kb::engine {
namespace {

Op op_on(ResourceId r, ps_t busy, ps_t lat = 0, OpKind kind = OpKind::vector) {
  Op o{};
  o.kind = kind;
  o.resource = r;
  o.busy_ps = busy;
  o.latency_ps = lat;
  return o;
}

TEST(Engine, InOrderQueueAndDependencies) {
  Graph g;
  g.add_label("t");
  const ResourceId r = g.add_resource("r", ResourceClass::dma, 0);
  const ResourceId s = g.add_resource("s", ResourceClass::matrix, 0);
  const OpId a = g.add_op(op_on(r, 10, 5), {});
  const OpId b = g.add_op(op_on(r, 20), {});      // behind a on r
  const OpId c = g.add_op(op_on(s, 1), {a});      // waits for a's latency too
  const OpId d = g.add_op(op_on(s, 4), {b});      // behind c on s, and waits for b
  const RunResult res = simulate(g);
  ASSERT_EQ(res.status, Status::ok);
  EXPECT_EQ(res.timing[a].start, 0);
  EXPECT_EQ(res.timing[a].end, 15);
  EXPECT_EQ(res.timing[b].start, 10);
  EXPECT_EQ(res.timing[b].end, 30);
  EXPECT_EQ(res.timing[c].start, 15);
  EXPECT_EQ(res.timing[c].end, 16);
  EXPECT_EQ(res.timing[d].start, 30);
  EXPECT_EQ(res.summary.latency_ps, 34);
  EXPECT_EQ(res.summary.busy_ps[static_cast<int>(ResourceClass::dma)], 30);
  EXPECT_EQ(res.summary.busy_ps[static_cast<int>(ResourceClass::matrix)], 5);
  EXPECT_EQ(res.resource_busy_ps[r], 30);
  EXPECT_EQ(res.summary.events, 8);
}

// The same queue under both disciplines: in order, an op whose deps are ready still waits
// for the op added ahead of it (head-of-line blocking); arbitrated, the op ready first goes
// first.
TEST(Engine, InOrderBlocksArbitratedServesReadyFirst) {
  for (Discipline d : {Discipline::in_order, Discipline::arbitrated}) {
    Graph g;
    g.add_label("t");
    const ResourceId r = g.add_resource("r", ResourceClass::dma, 0, d);
    const ResourceId s = g.add_resource("s", ResourceClass::matrix, 0);
    const OpId slow = g.add_op(op_on(s, 100), {});
    const OpId first = g.add_op(op_on(r, 1), {slow});  // added first, ready at 100
    const OpId second = g.add_op(op_on(r, 1), {});     // ready at 0
    const RunResult res = simulate(g);
    ASSERT_EQ(res.status, Status::ok);
    const bool in_order = d == Discipline::in_order;
    EXPECT_EQ(res.timing[first].start, 100);
    EXPECT_EQ(res.timing[second].start, in_order ? 101 : 0);
    EXPECT_EQ(res.summary.latency_ps, in_order ? 102 : 101);
  }
}

// Ops ready at the same instant on an arbitrated resource go by (sip, cube, pe) of their
// rank, then issue index, then id.
TEST(Engine, ArbitrationTiesByRankThenIssueIndex) {
  auto op = [](ResourceId r, std::int32_t sip, std::int32_t cube, std::int32_t pe, std::int32_t issue) {
    Op o = op_on(r, 10);
    o.rank = Rank{sip, cube, pe};
    o.issue = issue;
    return o;
  };
  // Added in the reverse of the order they must run.
  Graph g;
  g.add_label("t");
  const ResourceId link = g.add_resource("link", ResourceClass::sip_link, 0, Discipline::arbitrated);
  const OpId d = g.add_op(op(link, 1, 0, 0, 0), {});
  const OpId c = g.add_op(op(link, 0, 1, 0, 0), {});
  const OpId b = g.add_op(op(link, 0, 0, 1, 0), {});
  const OpId a2 = g.add_op(op(link, 0, 0, 0, 7), {});
  const OpId a1 = g.add_op(op(link, 0, 0, 0, 3), {});
  const RunResult res = simulate(g);
  ASSERT_EQ(res.status, Status::ok);
  const OpId order[] = {a1, a2, b, c, d};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(res.timing[order[i]].start, 10 * i) << i;
  // Same instant, reached through other ops' completions at that instant: still by rank.
  Graph h;
  h.add_label("t");
  const ResourceId l2 = h.add_resource("l2", ResourceClass::cube_link, 0, Discipline::arbitrated);
  const ResourceId e1 = h.add_resource("e1", ResourceClass::dma, 0), e2 = h.add_resource("e2", ResourceClass::dma, 0);
  const OpId gate_hi = h.add_op(op_on(e1, 5), {}), gate_lo = h.add_op(op_on(e2, 5), {});
  const OpId hi = h.add_op(op(l2, 0, 3, 0, 0), {gate_hi});
  const OpId lo = h.add_op(op(l2, 0, 2, 0, 0), {gate_lo});
  const RunResult r2 = simulate(h);
  EXPECT_EQ(r2.timing[lo].start, 5);
  EXPECT_EQ(r2.timing[hi].start, 15);
}

// A deadlock on an arbitrated resource is still diagnosed with the ops it waits for.
TEST(Engine, ArbitratedDeadlockIsDiagnosed) {
  Graph g;
  g.add_label("t");
  const ResourceId link = g.add_resource("link", ResourceClass::ipcq, 0, Discipline::arbitrated);
  const OpId a = g.add_op(op_on(link, 10), {});
  const OpId b = g.add_op(op_on(link, 10), {a});
  g.add_dep(a, b);
  const RunResult res = simulate(g);
  EXPECT_EQ(res.status, Status::deadlock);
  EXPECT_NE(res.message.find("2 of 2 ops never ran"), std::string::npos) << res.message;
  EXPECT_NE(res.message.find("waits for"), std::string::npos) << res.message;
}

TEST(Engine, NoWork) {
  Graph g;
  const RunResult res = simulate(g);
  EXPECT_EQ(res.status, Status::no_work);
}

TEST(Engine, SignalNeverRaisedIsDeadlock) {
  Graph g;
  g.add_label("k");
  const ResourceId r = g.add_resource("sip0.cube0.pe0.dma", ResourceClass::dma, 0);
  Op sig{};
  sig.kind = OpKind::signal;
  sig.resource = kNoResource;
  const OpId s = g.add_op(sig, {});
  const OpId a = g.add_op(op_on(r, 5, 0, OpKind::dma_load), {s});
  g.add_op(op_on(r, 5, 0, OpKind::dma_load), {});
  const RunResult res = simulate(g);
  EXPECT_EQ(res.status, Status::deadlock);
  EXPECT_NE(res.message.find("3 of 3 ops never ran"), std::string::npos) << res.message;
  EXPECT_NE(res.message.find(g.op_name(a) + " waits for " + g.op_name(s)), std::string::npos) << res.message;
}

TEST(Engine, CyclicWaitIsDeadlock) {
  Graph g;
  g.add_label("k");
  const ResourceId r = g.add_resource("r", ResourceClass::dma, 0);
  const OpId a = g.add_op(op_on(r, 5), {});
  const OpId b = g.add_op(op_on(r, 5), {});
  g.add_dep(a, b);  // a waits for b, which is queued behind a
  const RunResult res = simulate(g);
  EXPECT_EQ(res.status, Status::deadlock);
  EXPECT_NE(res.message.find(g.op_name(a) + " waits for " + g.op_name(b)), std::string::npos) << res.message;
}

TEST(Engine, RerunsAreIdentical) {
  Graph g;
  g.add_label("t");
  const ResourceId r = g.add_resource("r", ResourceClass::dma, 0);
  const ResourceId s = g.add_resource("s", ResourceClass::matrix, 0);
  OpId prev = kNoOp;
  for (int i = 0; i < 200; ++i) prev = g.add_op(op_on(i % 3 ? r : s, 7 + i % 5, i % 2), {prev == kNoOp ? kNoOp : prev});
  const RunResult a = simulate(g), b = simulate(g);
  ASSERT_EQ(a.timing.size(), b.timing.size());
  for (std::size_t i = 0; i < a.timing.size(); ++i) EXPECT_EQ(a.timing[i].start, b.timing[i].start);
  EXPECT_EQ(a.summary.latency_ps, b.summary.latency_ps);
}

TEST(Engine, ChromeTraceIsValid) {
  Graph g;
  g.add_label("gemm");
  const ResourceId r = g.add_resource("sip0.cube0.pe0.dma", ResourceClass::dma, 0);
  const ResourceId s = g.add_resource("sip0.cube0.pe0.matrix", ResourceClass::matrix, 0);
  const OpId a = g.add_op(op_on(r, 1500000, 0, OpKind::dma_load), {});
  g.add_op(op_on(s, 2500000, 0, OpKind::matmul), {a});
  const RunResult res = simulate(g);
  const auto doc = nlohmann::json::parse(chrome_trace_json(g, res));
  ASSERT_TRUE(doc.contains("traceEvents"));
  int complete = 0, names = 0;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid"));
    if (e["ph"] == "X") {
      ++complete;
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e["name"].is_string());
      if (e["name"] == "matmul") {
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.5);  // microseconds
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2.5);
      }
    } else if (e["ph"] == "M") {
      ++names;
    }
  }
  EXPECT_EQ(complete, 2);
  EXPECT_EQ(names, 2);  // one named track per resource
}

}  // namespace
}  // namespace kb::engine

namespace kb::engine {
namespace {

TEST(Engine, TimeOverflowIsAnErrorStatus) {
  Graph g;
  g.add_label("long");
  const ResourceId r = g.add_resource("r", ResourceClass::dma, 0);
  const OpId a = g.add_op(op_on(r, kTimeLimitPs - 10), {});
  const OpId b = g.add_op(op_on(r, 100), {a});
  const RunResult res = simulate(g);
  EXPECT_EQ(res.status, Status::error);
  EXPECT_TRUE(res.time_overflow);
  EXPECT_NE(res.message.find("passes 2^61 ps"), std::string::npos) << res.message;
  EXPECT_NE(res.message.find(g.op_name(b)), std::string::npos) << res.message;
}

}  // namespace
}  // namespace kb::engine

namespace kb::engine {
namespace {

// The sums a run reports: over the ops that ran, by their kind and resource class. The
// engine takes them from the graph's running totals when every op ran, and counts them op
// by op otherwise; both must give what this test counts.
Summary expected_sums(const Graph& g, const RunResult& r, std::vector<ps_t>& busy, std::vector<std::int64_t>& bytes) {
  Summary s;
  busy.assign(g.resources().size(), 0);
  bytes.assign(g.resources().size(), 0);
  for (std::size_t i = 0; i < g.ops().size(); ++i) {
    const Op& op = g.ops()[i];
    if (r.timing[i].end < 0) continue;
    s.latency_ps = std::max(s.latency_ps, r.timing[i].end);
    s.vector_ops += op.vector_ops;
    s.sram_read_bytes += op.sram_read;
    s.sram_write_bytes += op.sram_write;
    if (op.kind == OpKind::matmul) s.mac_cycles += op.cycles, s.macs += op.macs;
    if (op.kind == OpKind::dma_load) s.hbm_read_bytes += op.bytes;
    if (op.kind == OpKind::dma_store) s.hbm_write_bytes += op.bytes;
    if (op.resource == kNoResource) continue;
    const auto cls = g.resources()[static_cast<std::size_t>(op.resource)].cls;
    s.busy_ps[static_cast<std::size_t>(cls)] += op.busy_ps;
    // An op whose times passed the 2^61 ps guard ran (it stopped the run) but never held its
    // resource.
    if (r.timing[i].end <= kTimeLimitPs) {
      busy[static_cast<std::size_t>(op.resource)] += op.busy_ps;
      bytes[static_cast<std::size_t>(op.resource)] += op.bytes;
    }
    if (op.kind == OpKind::copy && cls != ResourceClass::ipcq_out) {
      s.link_bytes[static_cast<std::size_t>(op.level)] += op.bytes;
      ++s.link_copies[static_cast<std::size_t>(op.level)];
    }
  }
  return s;
}

TEST(Engine, RunSumsEqualTheOpsThatRan) {
  std::mt19937_64 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  int full = 0, partial = 0, overflowed = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Graph g;
    g.add_label("t");
    const int nres = 1 + pick(6);
    for (int r = 0; r < nres; ++r)
      g.add_resource("r" + std::to_string(r), static_cast<ResourceClass>(pick(kResourceClasses)), 0,
                     pick(2) ? Discipline::arbitrated : Discipline::in_order);
    const int n = 1 + pick(60);
    for (int i = 0; i < n; ++i) {
      Op o{};
      o.kind = static_cast<OpKind>(pick(5));  // dma_load .. copy: every kind that sums
      o.resource = pick(8) == 0 ? kNoResource : static_cast<ResourceId>(pick(nres));
      o.busy_ps = pick(50);
      o.latency_ps = pick(20);
      o.bytes = pick(1000), o.macs = pick(1000), o.cycles = pick(100), o.vector_ops = pick(100);
      o.sram_read = pick(100), o.sram_write = pick(100);
      o.level = static_cast<LinkLevel>(pick(kLinkLevels));
      o.rank = Rank{0, 0, pick(4)};
      o.issue = i;
      const OpId dep = i > 0 && pick(2) ? static_cast<OpId>(pick(i)) : kNoOp;
      const OpId id = g.add_op(o, {dep});
      if (i > 0 && pick(6) == 0) g.add_head_dep(id, static_cast<OpId>(pick(i)));  // cut-through
      if (pick(4) == 0) g.set_busy(id, pick(80));  // a time set once the launch is whole
      if (pick(4) == 0) g.add_sram(id, pick(50), pick(50));
    }
    // Some runs stop at the time guard: an op held past 2^61 ps.
    if (pick(10) == 0) g.set_busy(static_cast<OpId>(pick(n)), kTimeLimitPs - pick(3));
    // Some graphs deadlock: a wait on an op added later that waits on it in turn.
    if (n > 2 && pick(5) == 0) {
      g.add_dep(0, static_cast<OpId>(n - 1));
      g.add_dep(static_cast<OpId>(n - 1), 0);
    }
    const RunResult r = simulate(g);
    (r.status == Status::ok ? full : partial) += 1;
    overflowed += r.time_overflow;
    std::vector<ps_t> busy;
    std::vector<std::int64_t> bytes;
    const Summary want = expected_sums(g, r, busy, bytes);
    EXPECT_EQ(r.summary.latency_ps, want.latency_ps) << trial;
    EXPECT_EQ(r.summary.busy_ps, want.busy_ps) << trial;
    EXPECT_EQ(r.summary.mac_cycles, want.mac_cycles) << trial;
    EXPECT_EQ(r.summary.macs, want.macs) << trial;
    EXPECT_EQ(r.summary.hbm_read_bytes, want.hbm_read_bytes) << trial;
    EXPECT_EQ(r.summary.hbm_write_bytes, want.hbm_write_bytes) << trial;
    EXPECT_EQ(r.summary.vector_ops, want.vector_ops) << trial;
    EXPECT_EQ(r.summary.sram_read_bytes, want.sram_read_bytes) << trial;
    EXPECT_EQ(r.summary.sram_write_bytes, want.sram_write_bytes) << trial;
    EXPECT_EQ(r.summary.link_bytes, want.link_bytes) << trial;
    EXPECT_EQ(r.summary.link_copies, want.link_copies) << trial;
    EXPECT_EQ(r.summary.ops, n) << trial;
    EXPECT_EQ(r.resource_busy_ps, busy) << trial;
    EXPECT_EQ(r.resource_bytes, bytes) << trial;
  }
  EXPECT_GT(full, 200);
  EXPECT_GT(partial, 20);
  EXPECT_GT(overflowed, 10);
}

// A graph builds in the storage of the last graph destroyed on its thread, and a run's timing
// in the last result's: run after run, each must equal the same graph built and run on a
// thread that never held one.
TEST(Engine, GraphsAndRunsReuseStorageOnlyAsStorage) {
  auto build = [](std::uint64_t seed, Graph& g) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
    g.add_label("t");
    const int nres = 1 + pick(5);
    for (int r = 0; r < nres; ++r)
      g.add_resource("r" + std::to_string(r), ResourceClass::dma, 0, pick(3) ? Discipline::in_order : Discipline::arbitrated);
    const int n = 1 + pick(seed % 3 == 0 ? 4000 : 200);  // large and small graphs in turn
    for (int i = 0; i < n; ++i) {
      Op o = op_on(pick(6) == 0 ? kNoResource : static_cast<ResourceId>(pick(nres)), 0, pick(20));
      o.rank = Rank{0, 0, pick(4)};
      o.issue = i;
      const OpId id = g.add_op(o, {i > 0 ? static_cast<OpId>(pick(i)) : kNoOp, i > 1 && pick(2) ? static_cast<OpId>(pick(i)) : kNoOp});
      // Half the busy times are set later, as a launch's end sets its HBM accesses' times.
      if (pick(2)) {
        if (o.resource != kNoResource && pick(2)) g.set_first_busy(id, o.resource, 1 + pick(50));
        else g.set_busy(id, 1 + pick(50));
      }
    }
  };
  auto run = [&](std::uint64_t seed) {
    Graph g;
    EXPECT_TRUE(g.ops().empty() && g.times().empty() && g.edges().empty() && g.waits().empty() &&
                g.completion_dependents().empty());
    build(seed, g);
    EXPECT_EQ(g.waits().size(), g.ops().size());
    EXPECT_EQ(g.completion_dependents().size(), g.ops().size());
    return simulate(g);
  };
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const RunResult reused = run(seed);  // this thread has built and run graphs before
    RunResult fresh;
    std::thread([&] { fresh = run(seed); }).join();
    ASSERT_EQ(reused.status, Status::ok) << seed;
    EXPECT_EQ(reused.summary.events, fresh.summary.events) << seed;
    EXPECT_EQ(reused.summary.latency_ps, fresh.summary.latency_ps) << seed;
    EXPECT_EQ(reused.summary.busy_ps, fresh.summary.busy_ps) << seed;
    EXPECT_EQ(reused.resource_busy_ps, fresh.resource_busy_ps) << seed;
    ASSERT_EQ(reused.timing.size(), fresh.timing.size()) << seed;
    for (std::size_t i = 0; i < reused.timing.size(); ++i) {
      EXPECT_EQ(reused.timing[i].start, fresh.timing[i].start) << seed << " op " << i;
      EXPECT_EQ(reused.timing[i].end, fresh.timing[i].end) << seed << " op " << i;
    }
  }
}

// set_first_busy sets what set_busy does, for an op added without a busy time.
TEST(Engine, FirstBusyEqualsSetBusy) {
  Graph a, b;
  for (Graph* g : {&a, &b}) {
    g->add_label("t");
    g->add_resource("r", ResourceClass::dma, 0);
    g->add_resource("s", ResourceClass::vector, 0, Discipline::arbitrated);
  }
  for (int i = 0; i < 20; ++i) {
    const ResourceId r = static_cast<ResourceId>(i % 2);
    const OpId x = a.add_op(op_on(r, 0, 3), {i > 0 ? OpId{i - 1} : kNoOp});
    const OpId y = b.add_op(op_on(r, 0, 3), {i > 0 ? OpId{i - 1} : kNoOp});
    a.set_busy(x, 10 + i);
    b.set_first_busy(y, r, 10 + i);
  }
  EXPECT_EQ(a.totals().busy_ps, b.totals().busy_ps);
  EXPECT_EQ(a.totals().resource_busy_ps, b.totals().resource_busy_ps);
  for (std::size_t i = 0; i < a.ops().size(); ++i) {
    EXPECT_EQ(a.ops()[i].busy_ps, b.ops()[i].busy_ps);
    EXPECT_EQ(a.times()[i].busy_ps, b.times()[i].busy_ps);
  }
  EXPECT_EQ(simulate(a).summary.latency_ps, simulate(b).summary.latency_ps);
}

// The queue against a sort by (key, push order), on clocks that move by small steps, jump
// (up to the top bucket: times near the 2^61 ps guard), stand still, and push below the last
// key (a lower priority at the same instant). One queue serves every trial, cleared between
// them, as the engine's does between runs.
TEST(EventQueue, PopsByKeyThenPushOrder) {
  std::mt19937_64 rng(7);
  EventQueue q;
  constexpr EventQueue::Key kTop = EventQueue::Key{1} << 63;  // the time guard 2^61, shifted by the priority
  for (int trial = 0; trial < 2000; ++trial) {
    q.clear();
    struct Ref {
      EventQueue::Key key;
      std::int64_t seq;
      std::int32_t op;
      bool operator<(const Ref& o) const { return key != o.key ? key < o.key : seq < o.seq; }
    };
    std::vector<Ref> ref;  // kept sorted
    EventQueue::Key now = rng() % 16;
    std::int64_t seq = 0;
    std::int32_t next_op = 0;
    const int steps = 1 + static_cast<int>(rng() % 300);
    for (int s = 0; s < steps; ++s) {
      const int pushes = static_cast<int>(rng() % 4);
      for (int p = 0; p < pushes; ++p) {
        EventQueue::Key k = now;
        switch (rng() % 6) {
          case 0: break;                                              // the same key
          case 1: k = now + rng() % 4; break;                        // the same instant or the next
          case 2: k = now + (rng() % 64) * 4; break;                 // a little later
          case 3: k = now + (rng() % (UINT64_C(1) << 40)); break;    // much later
          case 4: k = now < kTop ? now + rng() % (kTop - now) : now; break;  // anywhere up to the guard
          default: k = (now & ~EventQueue::Key{3}) | (rng() % 4); break;  // this instant, any priority
        }
        q.push(k, next_op);
        const Ref r{k, seq++, next_op++};
        ref.insert(std::upper_bound(ref.begin(), ref.end(), r), r);
      }
      if (ref.empty() || rng() % 3 == 0) continue;
      ASSERT_FALSE(q.empty());
      const EventQueue::Item got = q.pop();
      ASSERT_EQ(got.key, ref.front().key) << "trial " << trial << " step " << s;
      ASSERT_EQ(got.op, ref.front().op) << "trial " << trial << " step " << s;
      now = got.key;
      ref.erase(ref.begin());
    }
    while (!ref.empty()) {
      ASSERT_FALSE(q.empty());
      const EventQueue::Item got = q.pop();
      ASSERT_EQ(got.op, ref.front().op) << "trial " << trial << " draining";
      ref.erase(ref.begin());
    }
    EXPECT_TRUE(q.empty());
  }
}

}  // namespace
}  // namespace kb::engine
