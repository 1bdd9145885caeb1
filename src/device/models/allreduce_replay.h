// Replaying a recorded level of the allreduce model (host code): a sweep evaluates many
// configs that differ only in their size (a collective's message sizes), and each level's ops,
// resources and dependencies do not depend on it. A level whose structure a thread meets the
// second time, and which the general walk takes without depths (allreduce_walk.h), is built
// into the simulator once more, run, and recorded (sim::Replay, src/device/sim/replay.h) with
// the order the run served its ops in, what each op costs and what each transfer counts, by
// the pieces it moves. Each later level of that structure on the thread is timed by replaying
// the ops in one of its recorded orders with its own costs: the simulator's pass in a fixed
// order, without depths, which is the model's answer where the certificate holds (docs/
// model.md section 11.11); where no order's does, the level is evaluated as it would have
// been, and its own run's order is added. A recording is checked against the walk it repeats
// before it is kept. ADR 0024.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../common/hw.h"
#include "../common/kb_hd.h"
#include "../common/network.h"
#include "../common/units.h"
#include "../sim/replay.h"
#include "allreduce_ring.h"
#include "collective.h"
#include "vector.h"

namespace kb {
namespace ar_detail {

// What an op of the model costs (its busy time), by kind: a hop of a link of `param` GB/s, an
// HBM access at a share of `param` ports, an add on the vector engine; `nb` bytes. Sim's ops
// and the replay of a recorded level (allreduce_replay.h) cost them here.
enum ArOpKind : std::int8_t { kArOpLink = 0, kArOpHbm = 1, kArOpAdd = 2 };
KB_HD inline ps_t ar_op_cost(const HwConfig& h, std::int32_t kind, std::int64_t param, std::int64_t nb) {
  if (kind == kArOpLink) return transfer_ps(nb, param);
  if (kind == kArOpHbm) return hbm_access_ps(h, nb, param);
  return add_ps(h, nb / 2);
}
// One cost of a level, and one transfer's part of its figures, by the pieces moved (chunk ch,
// pieces [k0, k1)): `mult` times their bytes.
struct ArCost {
  std::int64_t param;
  std::int16_t ch, k0, k1;
  std::int8_t kind, mult;
};
struct ArXferShape {
  std::int16_t ch, k0, k1;
  std::int8_t reduce;
  std::int8_t hops[3];  // copies it makes at the pe, cube and sip level (count_copy)
};
// While Sim builds a level to be recorded (allreduce_replay.h): each op's cost (an index into
// `costs`, the level's distinct ones) and each transfer's shape. `full`: a table ran out.
struct ArRecord {
  static constexpr std::int32_t kCosts = 256;
  std::int16_t op_cost[kCollMaxOps];
  ArCost costs[kCosts];
  ArXferShape xfers[kCollMaxOps];
  std::int32_t ncosts = 0, nxfers = 0;
  bool full = false;
  KB_HD void note(std::int32_t op, const ArCost& c) {
    if (op < 0 || op >= kCollMaxOps) {
      full = true;
      return;
    }
    std::int32_t i = 0;
    while (i < ncosts && !(costs[i].param == c.param && costs[i].ch == c.ch && costs[i].k0 == c.k0 &&
                           costs[i].k1 == c.k1 && costs[i].kind == c.kind && costs[i].mult == c.mult))
      ++i;
    if (i == ncosts) {
      if (ncosts == kCosts) {
        full = true;
        return;
      }
      costs[ncosts++] = c;
    }
    op_cost[op] = static_cast<std::int16_t>(i);
  }
};

#if !defined(__CUDA_ARCH__)
static_assert(std::has_unique_object_representations_v<AllreduceConfig>, "configs compare bytewise");

// What a level's ops depend on but its size: the level's config (a hier phase's sub) without
// its bytes, and the launch's level, ranks and op (a hier phase's nodes, leaders and HBM shares).
struct ArLevelKey {
  AllreduceConfig sub;
  std::int64_t top_level, top_ranks, top_op;
};
static_assert(std::has_unique_object_representations_v<ArLevelKey>, "keys compare bytewise");

// A recorded level: its graph, costs and transfers, and the orders to serve its ops in that
// its configs so far needed (a level's claims come in another order at another size: a
// latency-bound size and a bandwidth-bound one). `usable` false where the level cannot be
// recorded (it is then not tried again).
struct ArProgram {
  static constexpr std::int32_t kOrders = 4;
  ArLevelKey key;
  bool used = false, usable = false;
  sim::Replay graph;
  std::vector<ArCost> costs;
  std::vector<ArXferShape> xfers;
  sim::ReplayOrder orders[kOrders];
  std::int32_t norders = 0, last = 0;  // orders kept; the one that served last (tried first)
};

// A thread's recorded levels, by a hash of their key, and the replay's scratch. A structure
// is recorded the second time the thread meets it (`seen`: the hashes of structures met once,
// by their low bits): a sweep whose every config has a structure of its own records none.
struct ArReplayCache {
  // At most this many ops kept, counting a graph's ops, each order's steps and kEntryOps a
  // program (some 15 MB): beyond, every program is dropped, and structures met again are
  // recorded again.
  static constexpr std::int64_t kMostOps = INT64_C(1) << 18, kEntryOps = 32;
  static constexpr std::size_t kSeen = 8192;
  std::unordered_map<std::uint64_t, ArProgram> programs;
  std::int64_t ops = 0;  // kept in `programs`, as counted against kMostOps
  std::vector<std::uint64_t> seen = std::vector<std::uint64_t>(kSeen, 0);
  sim::ReplayState state;
  std::vector<ps_t> cost_values;
  std::vector<std::int64_t> lo;
  sim::ReplayOrder order;
  ps_t marks[kCollMaxRanks];
  ArRecord record;
  // Recordings whose replay differed from the walk (none should), replays refused (every order
  // of the structure failed its certificate), structures recorded and orders kept.
  std::int64_t mismatches = 0, refusals = 0, graphs = 0, orders = 0;
};
inline ArReplayCache& replay_cache() {
  thread_local ArReplayCache cache;
  return cache;
}

inline ArLevelKey level_key(const AllreduceConfig& c, const AllreduceConfig& top) {
  ArLevelKey k{c, top.level, top.ranks, top.op};  // no padding: compared bytewise
  k.sub.bytes = 0;
  return k;
}
// A hash of a key's words: each word, offset by its place, multiplied and folded (a nonlinear
// mix of its own, so no sum of changes to several fields cancels), and the words' mixes summed
// (independent of one another: no chain of multiplies through the key).
inline std::uint64_t key_hash(const ArLevelKey& k) {
  static_assert(sizeof k % 8 == 0, "a key is whole words");
  constexpr std::size_t kWords = sizeof k / 8;
  std::uint64_t w[kWords];
  std::memcpy(w, &k, sizeof k);
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < kWords; ++i) {
    std::uint64_t x = (w[i] + 0x632BE59BD9B4E019u * (i + 1)) * 0x9E3779B97F4A7C15u;
    x ^= x >> 31;
    h += x * 0xFF51AFD7ED558CCDu;
  }
  h ^= h >> 32, h *= 0xC4CEB9FE1A85EC53u, h ^= h >> 29;
  return h;
}

// Level `c` replayed from program `p` in `order` (one of its orders): its figures and, with
// `marks`, its ranks' marks (into the cache's `marks`), or false where the replay's
// certificate does not hold.
inline bool replay_program(const ArProgram& p, const sim::ReplayOrder& order, const AllreduceConfig& c,
                           AllreduceFigures* out, bool marks) {
  ArReplayCache& cache = replay_cache();
  const std::int64_t cap = (c.ranks + 1) * c.chunks;
  if (static_cast<std::int64_t>(cache.lo.size()) < cap) cache.lo.resize(static_cast<std::size_t>(cap));
  piece_table(c, cache.lo.data(), cap);
  auto bytes = [&](std::int64_t ch, std::int64_t k0, std::int64_t k1) {
    const std::int64_t* row = cache.lo.data() + ch * (c.ranks + 1);
    return 2 * (row[k1] - row[k0]);
  };
  // Each cost once per distinct (kind, param, bytes): a level's pieces mostly have one size,
  // and each cost takes divisions.
  struct Memo {
    std::int64_t param, nb;
    ps_t value;
    std::int32_t kind;
  };
  constexpr std::int32_t kMemo = 8;
  Memo memo[kMemo];
  std::int32_t nmemo = 0;
  cache.cost_values.resize(p.costs.size());
  for (std::size_t j = 0; j < p.costs.size(); ++j) {
    const ArCost& a = p.costs[j];
    const std::int64_t nb = a.mult * bytes(a.ch, a.k0, a.k1);
    std::int32_t m = 0;
    while (m < nmemo && !(memo[m].nb == nb && memo[m].param == a.param && memo[m].kind == a.kind)) ++m;
    if (m == nmemo) {
      m = nmemo < kMemo ? nmemo++ : static_cast<std::int32_t>(j % kMemo);
      memo[m] = Memo{a.param, nb, ar_op_cost(c.hw, a.kind, a.param, nb), a.kind};
    }
    cache.cost_values[j] = memo[m].value;
  }
  if (!sim::replay(p.graph, order, cache.cost_values.data(), static_cast<std::int32_t>(p.costs.size()),
                   cache.state, marks ? cache.marks : nullptr, static_cast<std::int32_t>(kCollMaxRanks)))
    return false;
  AllreduceFigures f{};
  const bool hbm = c.buffer == static_cast<std::int64_t>(CollBuffer::hbm);
  // A transfer's figures depend on its shape (whether it adds, its copies per level) and its
  // size alone: the transfers are counted per (shape, size), and each count's figures taken
  // once and multiplied.
  struct Count {
    std::int64_t nb, n;
    std::int32_t shape;
  };
  constexpr std::int32_t kCounts = 16;
  Count counts[kCounts];
  std::int32_t ncounts = 0;
  auto figures_of = [&](AllreduceFigures& g, std::int32_t shape, std::int64_t nb) {
    constexpr net::LinkKind kinds[3] = {net::LinkKind::ipcq_in, net::LinkKind::cube_link, net::LinkKind::sip_link};
    for (int k = 0; k < 3; ++k)
      for (int i = 0; i < ((shape >> (8 * k)) & 0xff); ++i) count_copy(g, kinds[k], nb);
    send_figures(g, hbm, nb);
    if (shape >> 24) add_figures(g, hbm, nb);
  };
  for (const ArXferShape& x : p.xfers) {
    const std::int64_t nb = bytes(x.ch, x.k0, x.k1);
    const std::int32_t shape = x.hops[0] | x.hops[1] << 8 | x.hops[2] << 16 | (x.reduce ? 1 << 24 : 0);
    std::int32_t m = 0;
    while (m < ncounts && !(counts[m].nb == nb && counts[m].shape == shape)) ++m;
    if (m < ncounts) ++counts[m].n;
    else if (ncounts < kCounts) counts[ncounts++] = Count{nb, 1, shape};
    else figures_of(f, shape, nb);
  }
  for (std::int32_t m = 0; m < ncounts; ++m) {
    AllreduceFigures g{};
    figures_of(g, counts[m].shape, counts[m].nb);
    const std::int64_t n = counts[m].n;
    f.link_bytes_pe += n * g.link_bytes_pe, f.link_bytes_cube += n * g.link_bytes_cube;
    f.link_bytes_sip += n * g.link_bytes_sip;
    f.copies_pe += n * g.copies_pe, f.copies_cube += n * g.copies_cube, f.copies_sip += n * g.copies_sip;
    f.transfers += n * g.transfers;
    f.vector_ops += n * g.vector_ops, f.sram_read_bytes += n * g.sram_read_bytes;
    f.sram_write_bytes += n * g.sram_write_bytes;
    f.hbm_read_bytes += n * g.hbm_read_bytes, f.hbm_write_bytes += n * g.hbm_write_bytes;
  }
  f.latency_ps = cache.state.latency;
  f.vector_busy_ps = cache.state.class_busy[1];
  *out = f;
  return true;
}

// What replay_level found where it did not replay: whether the level is to be recorded (its
// structure met before, and not found unrecordable), its key's hash, and its program if it has
// one.
struct ArRecordPlan {
  bool record = false;
  std::uint64_t hash = 0;
  ArProgram* program = nullptr;
};

// Level `c` of `top` from the thread's recording of its structure, where there is one and one
// of its orders' replay holds (`marks`: with its ranks' marks, which a hier phase needs).
inline bool replay_level(const AllreduceConfig& c, const AllreduceConfig& top, AllreduceFigures* f, bool marks,
                         ArRecordPlan* plan) {
  ArReplayCache& cache = replay_cache();
  const ArLevelKey key = level_key(c, top);
  const std::uint64_t h = key_hash(key);
  *plan = ArRecordPlan{false, h, nullptr};
  const auto it = cache.programs.find(h);
  if (it == cache.programs.end() || std::memcmp(&it->second.key, &key, sizeof key) != 0) {
    std::uint64_t& once = cache.seen[h % ArReplayCache::kSeen];
    plan->record = once == h;  // met before (else: now)
    once = h;
    return false;
  }
  ArProgram& p = it->second;
  if (!p.usable) return false;  // not recordable, or its recording distrusted
  plan->record = true, plan->program = &p;
  for (std::int32_t t = 0; t < p.norders; ++t) {
    const std::int32_t k = (p.last + t) % p.norders;
    if (replay_program(p, p.orders[k], c, f, marks)) {
      p.last = k;
      return true;
    }
  }
  if (p.norders > 0) ++cache.refusals;
  return false;
}

// Records level `c` of `top` as `plan` says (into its program, or a new one), once the general
// walk has taken it without depths with figures `f` and marks `marks`: Sim builds its ops
// again (its output and scratch are overwritten; the caller has taken what it needs) and runs
// them; a new program keeps the graph, and the order of the run is kept if its replay gives
// the walk's figures and marks. True where an order was kept.
template <class Sim>
bool record_level(Sim& sim, const AllreduceConfig& c, const AllreduceConfig& top, const ArRecordPlan& plan,
                  const AllreduceFigures& f, const ps_t* marks) {
  ArReplayCache& cache = replay_cache();
  ArRecord& rec = cache.record;
  ArProgram* program = plan.program;
  if (!program) {  // a new program (replacing one whose key hashed alike)
    if (cache.ops + kCollMaxOps * (1 + ArProgram::kOrders) + ArReplayCache::kEntryOps > ArReplayCache::kMostOps)
      cache.programs.clear(), cache.ops = 0;
    const auto old = cache.programs.find(plan.hash);
    if (old != cache.programs.end()) {
      const ArProgram& q = old->second;
      cache.ops -= ArReplayCache::kEntryOps + q.graph.n * (1 + q.norders);
    }
    program = &cache.programs[plan.hash];  // what it held is overwritten as it is recorded
    program->key = level_key(c, top);
    program->used = true, program->usable = false;  // usable once its graph is kept
    program->norders = 0, program->last = 0;
    cache.ops += ArReplayCache::kEntryOps;
    rec.ncosts = 0, rec.nxfers = 0, rec.full = false;
    sim.rec = &rec;
  }
  ArProgram& p = *program;
  const bool fresh = !p.usable;
  sim.e.reset();
  sim.build();
  sim.rec = nullptr;
  if (sim.e.status != sim::kSimOk || (fresh && rec.full)) return false;
  sim.e.run();
  if (sim.e.status != sim::kSimOk) return false;
  if (fresh) {
    p.graph.record(sim.e, rec.op_cost);
    p.costs.assign(rec.costs, rec.costs + rec.ncosts);
    p.xfers.assign(rec.xfers, rec.xfers + rec.nxfers);
    p.usable = true;
    ++cache.graphs;
    cache.ops += p.graph.n;
  }
  sim::ReplayOrder& order = cache.order;
  if (!p.graph.order_of(sim.e, order)) return false;
  AllreduceFigures g;
  if (!replay_program(p, order, c, &g, true)) return false;  // the run met claims at an instant's later rounds
  bool same = std::memcmp(&f, &g, sizeof f) == 0;
  for (std::int64_t r = 0; r < c.ranks; ++r) same = same && cache.marks[r] == marks[r];
  if (!same) {  // never: the run and the walk are the same schedule; the structure is replayed no more
    ++cache.mismatches;
    p.usable = false;
    return false;
  }
  // The new order goes where the oldest was (or after the last one kept).
  const bool added = p.norders < ArProgram::kOrders;
  const std::int32_t k = added ? p.norders++ : (p.last + 1) % ArProgram::kOrders;
  std::swap(p.orders[k], order);
  if (added) cache.ops += p.graph.n;
  ++cache.orders;
  p.last = k;
  return true;
}
#endif  // !__CUDA_ARCH__

}  // namespace ar_detail
}  // namespace kb
