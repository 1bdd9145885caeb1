// Replaying a recorded level of the allreduce model (host code): a sweep evaluates many
// configs that differ only in their size (a collective's message sizes), and each level's ops,
// resources and dependencies do not depend on it. A level whose structure a thread meets the
// second time, and which the general walk takes without depths (allreduce_walk.h; a ring the
// ring's walk takes, where the general walk would take it so too), is built
// into the simulator once more, run, and recorded (sim::Replay, src/device/sim/replay.h) with
// the order the run served its ops in, what each op costs and what each transfer counts, by
// the pieces it moves. Each later level of that structure on the thread is timed by replaying
// the ops in one of its recorded orders with its own costs: the simulator's pass in a fixed
// order, without depths, which is the model's answer where the certificate holds (docs/
// model.md section 11.11); where no order's does, the level is evaluated as it would have
// been, and its own run's order is added. Where a config's pieces all have one size, its ops
// are served by classes (sim::ReplayClasses) over cost groups. A recording is checked against
// the walk it repeats before it is kept. ADR 0024.
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/network.h"
#include "../../common/units.h"
#include "../../sim/replay.h"
#include "../../common/sampling.h"
#include "allreduce_ring.h"
#include "collective.h"
#include "../vector.h"

namespace kb {
namespace ar_detail {

// What an op of the model costs (its busy time), by kind: a hop of a link of `param` GB/s, an
// HBM access at a share of `param` ports, an add on the vector engine; `nb` bytes. Sim's ops
// and the replay of a recorded level (allreduce_replay.h) cost them here.
enum ArOpKind : std::int8_t { kArOpLink = 0, kArOpHbm = 1, kArOpAdd = 2 };
KB_HD inline ps_t ar_op_cost(const HwConfig& h, std::int32_t kind, std::int64_t param, std::int64_t nb) {
  if (kind == kArOpLink) return transfer_ps(nb, param);
  if (kind == kArOpHbm) return xfer::hbm_ps(h, nb, param);
  return xfer::add_ps(h, nb / 2);
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

static_assert(std::has_unique_object_representations_v<HwConfig>, "hardware compares bytewise");
static_assert(sizeof(AllreduceConfig) == sizeof(HwConfig) + 8 * sizeof(std::int64_t),
              "a level key names every field of a config but its bytes");

// What a level's ops depend on but its size: the level's config (a hier phase's sub) without
// its bytes, its hardware by its place in the thread's table (ArReplayCache::hws), and the
// launch's level, ranks and op (a hier phase's nodes, leaders and HBM shares).
struct ArLevelKey {
  std::int64_t hw, level, algo, ranks, buffer, op, chunks, channels;
  std::int64_t top_level, top_ranks, top_op;
};
static_assert(std::has_unique_object_representations_v<ArLevelKey>, "keys compare bytewise");

// A recorded level: its graph, costs and transfers, and the orders to serve its ops in that
// its configs so far needed (a level's claims come in another order at another size: a
// latency-bound size and a bandwidth-bound one). `usable` false where the level cannot be
// recorded (it is then not tried again).
// Where a config's pieces all have one size, a cost depends on its kind, parameter and the
// pieces it moves alone (a group), and a transfer's figures on its shape and pieces.
struct ArCostGroup {
  std::int64_t param, pieces;  // pieces: times the multiple
  std::int32_t kind;
};
struct ArXferGroup {
  std::int64_t pieces, n;
  std::int32_t shape;  // shape_of
};
struct ArProgram {
  static constexpr std::int32_t kOrders = 4;
  ArLevelKey key;
  bool used = false, usable = false;
  sim::Replay graph;
  std::vector<ArCost> costs;
  std::vector<ArXferShape> xfers;
  std::vector<ArCostGroup> groups;
  std::vector<std::int16_t> group_of;  // per cost, its group
  std::vector<ArXferGroup> xfer_groups;
  sim::ReplayOrder orders[kOrders];
  sim::ReplayClasses classes[kOrders];  // each order's classes, by the groups
  sim::ReplayForms forms[kOrders];      // and their closed form, where `closed`
  bool closed[kOrders] = {};
  std::int32_t norders = 0, last = 0;   // orders kept; the one that served last (tried first)
  // Levels it replayed, and levels none of its orders could (each recorded a new order over
  // the oldest). A structure whose sizes need more orders than it keeps refuses more than it
  // serves: past kGiveUp refusals it is walked, no longer tried nor recorded again.
  static constexpr std::int32_t kGiveUp = 8;
  std::int32_t served = 0, refused = 0;
  // What the cache counts of it: kEntryOps, the graph's ops, and each order's steps and classes.
  std::int64_t ops_counted() const;
};

// A thread's recorded levels, by a hash of their key, and the replay's scratch. A structure
// is recorded the kRecordAt-th time the thread meets it (`seen`: by the hash's low bits, the
// structures met and how often): a sweep whose every config has a structure of its own
// records none.
struct ArReplayCache {
  // At most this many ops kept, counting a graph's ops, each order's steps and kEntryOps a
  // program (some 15 MB). A full cache records no more structures while it serves: it keeps
  // what it holds, replays those, and walks the others (a mix of more structures than it
  // holds would otherwise record each one again before meeting it again, and recording
  // costs several walks). Only once two windows of kWindow look-ups in a row have replayed
  // nothing has the sweep moved on to other structures (or a new sweep begun on the thread):
  // then every program is dropped, and structures met again are recorded again.
  static constexpr std::int64_t kMostOps = INT64_C(1) << 18, kEntryOps = 32, kWindow = INT64_C(1) << 14;
  static constexpr std::size_t kSeen = 8192, kHws = 4096;
  // A structure is recorded at its kRecordAt-th meeting on the thread: recording one costs
  // about as much as 20-80 walks of it (on the milestone mix and the random mix, ADR 0034),
  // and replaying it next to nothing, so recording once the walks have cost about what a
  // recording does (rent, then buy) keeps any mix within about twice its better choice: a
  // structure met a few times is only walked, one met many times is replayed.
  static constexpr std::uint64_t kRecordAt = 16, kCountMask = 31;
  std::uint64_t record_at = kRecordAt;  // (tests of the replay itself record at the second meeting)
  std::unordered_map<std::uint64_t, ArProgram> programs;
  // A direct-mapped table before the map, by the hash's low bits: a program's place in the map
  // stays while the map keeps it (cleared with the map).
  static constexpr std::size_t kFront = 1024;
  struct Front {
    std::uint64_t hash = 0;
    ArProgram* program = nullptr;
  };
  std::vector<Front> front = std::vector<Front>(kFront);
  // Levels looked up, and replayed, in the current window (the last one's replays: `served_last`).
  std::int64_t looked = 0, served = 0, served_last = 1;
  void drop_programs() {
    programs.clear(), ops = 0, looked = 0, served = 0, served_last = 1;
    std::fill(front.begin(), front.end(), Front{});
  }
  ArProgram* find(std::uint64_t h) {
    Front& f = front[h % kFront];
    if (f.program && f.hash == h) return f.program;
    const auto it = programs.find(h);
    if (it == programs.end()) return nullptr;
    f = Front{h, &it->second};
    return f.program;
  }
  // The hardware configs the keys name (at most kHws: beyond, every program is dropped), their
  // places by a hash of their bytes, and the one named last.
  std::vector<HwConfig> hws;
  std::unordered_map<std::uint64_t, std::size_t> hw_places;
  std::size_t last_hw = 0;
  std::int64_t ops = 0;  // kept in `programs`, as counted against kMostOps
  std::vector<std::uint64_t> seen = std::vector<std::uint64_t>(kSeen, 0);
  sim::ReplayState state;
  std::vector<ps_t> cost_values;
  std::vector<std::int64_t> lo;
  sim::ReplayOrder order;
  sim::ReplayClasses classes;
  sim::ReplayForms forms;
  ps_t marks[kCollMaxRanks];
  ArRecord record;
  // Recordings whose replay differed from the walk (none should), replays refused (every order
  // of the structure failed its certificate), structures recorded and orders kept.
  std::int64_t mismatches = 0, refusals = 0, graphs = 0, orders = 0, given_up = 0;
  std::int64_t uniform = 0, closed = 0;  // levels replayed by their classes (replay_uniform), by their closed form
};
inline std::int64_t ArProgram::ops_counted() const {
  std::int64_t n = ArReplayCache::kEntryOps + graph.n;
  for (std::int32_t k = 0; k < norders; ++k) n += graph.n + static_cast<std::int64_t>(classes[k].steps.size());
  return n;
}
inline ArReplayCache& replay_cache() {
  thread_local ArReplayCache cache;
  return cache;
}

// A hash of a key's (or hardware's) words: each word, offset by its place, multiplied and
// folded (a nonlinear mix of its own, so no sum of changes to several fields cancels), and the
// words' mixes summed (independent of one another: no chain of multiplies through the key).
template <class T>
std::uint64_t words_hash(const T& k) {
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
// Hardware `h`'s place in the cache's table (added where it is new).
inline std::int64_t hw_place(ArReplayCache& cache, const HwConfig& h) {
  const std::size_t n = cache.hws.size();
  if (cache.last_hw < n && std::memcmp(&cache.hws[cache.last_hw], &h, sizeof h) == 0)
    return static_cast<std::int64_t>(cache.last_hw);
  const std::uint64_t hash = words_hash(h);
  const auto at = cache.hw_places.find(hash);
  std::size_t i = n;
  if (at != cache.hw_places.end()) {
    i = at->second;
    // Two configs of one hash (never seen): the place is searched for.
    if (std::memcmp(&cache.hws[i], &h, sizeof h) != 0) {
      i = 0;
      while (i < n && std::memcmp(&cache.hws[i], &h, sizeof h) != 0) ++i;
    }
  }
  if (i == n) {
    if (n == ArReplayCache::kHws) {  // full: every key named a place, so every program goes
      cache.drop_programs(), cache.hws.clear(), cache.hw_places.clear();
      std::fill(cache.seen.begin(), cache.seen.end(), 0);
      i = 0;
    }
    cache.hws.push_back(h);
    cache.hw_places.emplace(hash, i);
  }
  cache.last_hw = i;
  return static_cast<std::int64_t>(i);
}
// The key of level `c` of `top`, whose hardware is at place `hw` (hw_place).
inline ArLevelKey level_key(std::int64_t hw, const AllreduceConfig& c, const AllreduceConfig& top) {
  return ArLevelKey{hw, c.level, c.algo, c.ranks, c.buffer, c.op, c.chunks, c.channels, top.level, top.ranks, top.op};
}
inline std::uint64_t key_hash(const ArLevelKey& k) { return words_hash(k); }

// A transfer's figures by its shape (the copies it makes at each level, and whether it adds:
// shape_of) and size, `n` times, added into `f`.
inline std::int32_t shape_of(const ArXferShape& x) {
  return x.hops[0] | x.hops[1] << 8 | x.hops[2] << 16 | (x.reduce ? 1 << 24 : 0);
}
inline void add_transfers(AllreduceFigures& f, bool hbm, std::int32_t shape, std::int64_t nb, std::int64_t n) {
  AllreduceFigures g{};
  constexpr net::LinkKind kinds[3] = {net::LinkKind::ipcq_in, net::LinkKind::cube_link, net::LinkKind::sip_link};
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < ((shape >> (8 * k)) & 0xff); ++i) count_copy(g, kinds[k], nb);
  send_figures(g, hbm, nb);
  if (shape >> 24) add_figures(g, hbm, nb);
  f.link_bytes_pe += n * g.link_bytes_pe, f.link_bytes_cube += n * g.link_bytes_cube;
  f.link_bytes_sip += n * g.link_bytes_sip;
  f.copies_pe += n * g.copies_pe, f.copies_cube += n * g.copies_cube, f.copies_sip += n * g.copies_sip;
  f.transfers += n * g.transfers;
  f.vector_ops += n * g.vector_ops, f.sram_read_bytes += n * g.sram_read_bytes;
  f.sram_write_bytes += n * g.sram_write_bytes;
  f.hbm_read_bytes += n * g.hbm_read_bytes, f.hbm_write_bytes += n * g.hbm_write_bytes;
}

// Level `c` replayed from program `p` in `order` (one of its orders), every op's cost from its
// own pieces: its figures and, where `marks` is given, its ranks' marks into it (kCollMaxRanks), or
// false where the replay's certificate does not hold.
inline bool replay_pieces(const ArProgram& p, const sim::ReplayOrder& order, const AllreduceConfig& c,
                          AllreduceFigures* out, ps_t* marks) {
  ArReplayCache& cache = replay_cache();
  const std::int64_t n = coll_vranks(c), cap = (n + 1) * c.chunks;
  if (static_cast<std::int64_t>(cache.lo.size()) < cap) cache.lo.resize(static_cast<std::size_t>(cap));
  piece_table(c, cache.lo.data(), cap);
  auto bytes = [&](std::int64_t ch, std::int64_t k0, std::int64_t k1) {
    const std::int64_t* row = cache.lo.data() + ch * (n + 1);
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
                   cache.state, marks, static_cast<std::int32_t>(kCollMaxRanks)))
    return false;
  AllreduceFigures f{};
  const bool hbm = c.buffer == static_cast<std::int64_t>(CollBuffer::hbm);
  // The transfers counted per (shape, size), each count's figures taken once and multiplied.
  struct Count {
    std::int64_t nb, n;
    std::int32_t shape;
  };
  constexpr std::int32_t kCounts = 16;
  Count counts[kCounts];
  std::int32_t ncounts = 0;
  for (const ArXferShape& x : p.xfers) {
    const std::int64_t nb = bytes(x.ch, x.k0, x.k1);
    const std::int32_t shape = shape_of(x);
    std::int32_t m = 0;
    while (m < ncounts && !(counts[m].nb == nb && counts[m].shape == shape)) ++m;
    if (m < ncounts) ++counts[m].n;
    else if (ncounts < kCounts) counts[ncounts++] = Count{nb, 1, shape};
    else add_transfers(f, hbm, shape, nb, 1);
  }
  for (std::int32_t m = 0; m < ncounts; ++m) add_transfers(f, hbm, counts[m].shape, counts[m].nb, counts[m].n);
  f.latency_ps = cache.state.latency;
  f.vector_busy_ps = cache.state.class_busy[1];
  *out = f;
  return true;
}

// The same where every piece of `c` holds `piece` values (the level's values divide evenly into
// its chunks and ranks): an op's cost depends on its group alone (kind, parameter and pieces
// moved), and the ops are served in the classes of order k (sim::ReplayClasses).
inline bool replay_uniform(const ArProgram& p, std::int32_t k, const AllreduceConfig& c, std::int64_t piece,
                           AllreduceFigures* out, ps_t* marks, bool closed) {
  ArReplayCache& cache = replay_cache();
  const std::size_t ngroups = p.groups.size();
  cache.cost_values.resize(ngroups);
  for (std::size_t g = 0; g < ngroups; ++g) {
    const ArCostGroup& a = p.groups[g];
    cache.cost_values[g] = ar_op_cost(c.hw, a.kind, a.param, a.pieces * 2 * piece);
  }
  const std::int32_t ncosts = static_cast<std::int32_t>(ngroups), nmarks = static_cast<std::int32_t>(kCollMaxRanks);
  if (closed ? !sim::replay_forms(p.classes[k], p.forms[k], cache.cost_values.data(), ncosts, p.graph.most_lat,
                                  cache.state, marks, nmarks)
             : !sim::replay_classes(p.classes[k], cache.cost_values.data(), ncosts, p.graph.most_lat, cache.state,
                                    marks, nmarks))
    return false;
  AllreduceFigures f{};
  const bool hbm = c.buffer == static_cast<std::int64_t>(CollBuffer::hbm);
  for (const ArXferGroup& x : p.xfer_groups) add_transfers(f, hbm, x.shape, x.pieces * 2 * piece, x.n);
  f.latency_ps = cache.state.latency;
  f.vector_busy_ps = cache.state.class_busy[1];
  *out = f;
  return true;
}

// Level `c` from program `p`'s order k: replay_uniform where its pieces are all one size, else
// replay_pieces.
inline bool replay_program(const ArProgram& p, std::int32_t k, const AllreduceConfig& c, AllreduceFigures* out,
                           ps_t* marks) {
  const std::int64_t values = coll_values(c), parts = c.chunks * coll_vranks(c);
  if (values % parts == 0) return replay_uniform(p, k, c, values / parts, out, marks, p.closed[k]);
  return replay_pieces(p, p.orders[k], c, out, marks);
}

// What replay_level found where it did not replay: whether the level is to be recorded (its
// structure met before, and not found unrecordable), its key's hash, and its program if it has
// one.
struct ArRecordPlan {
  bool record = false;
  ArLevelKey key;
  std::uint64_t hash = 0;
  ArProgram* program = nullptr;
};

// Level `c` of `top` (its hardware at place `hw`: hw_place) from the thread's recording of its
// structure, where there is one and one of its orders' replay holds (`marks`: where given, its
// ranks' marks into it, which a hier phase needs; untouched where no replay holds).
inline bool replay_level(const AllreduceConfig& c, const AllreduceConfig& top, std::int64_t hw, AllreduceFigures* f,
                         ps_t* marks, ArRecordPlan* plan) {
  ArReplayCache& cache = replay_cache();
  const ArLevelKey key = level_key(hw, c, top);
  const std::uint64_t h = key_hash(key);
  *plan = ArRecordPlan{false, key, h, nullptr};
  if (++cache.looked == ArReplayCache::kWindow) cache.served_last = cache.served, cache.looked = cache.served = 0;
  ArProgram* const found = cache.find(h);
  if (!found || std::memcmp(&found->key, &key, sizeof key) != 0) {
    // The structure's meetings so far, in the entry's low bits (the hash's other bits name it).
    std::uint64_t& met = cache.seen[h % ArReplayCache::kSeen];
    constexpr std::uint64_t kCount = ArReplayCache::kCountMask;
    const std::uint64_t times = (met & ~kCount) == (h & ~kCount) ? (met & kCount) + 1 : 1;
    plan->record = times >= cache.record_at;
    met = (h & ~kCount) | (times < kCount ? times : kCount);
    return false;
  }
  ArProgram& p = *found;
  if (!p.usable) return false;  // not recordable, or its recording distrusted
  plan->record = true, plan->program = &p;
  for (std::int32_t t = 0; t < p.norders; ++t) {
    const std::int32_t k = (p.last + t) % p.norders;
    if (replay_program(p, k, c, f, marks)) {
      p.last = k;
      ++p.served;
      ++cache.served;
      const bool uniform = coll_values(c) % (c.chunks * coll_vranks(c)) == 0;
      cache.uniform += uniform, cache.closed += uniform && p.closed[k];
      return true;
    }
  }
  if (p.norders > 0) {
    ++cache.refusals;
    if (++p.refused >= ArProgram::kGiveUp && p.refused > p.served) {  // its orders churn: walked from now on
      p.usable = false, plan->record = false, plan->program = nullptr;
      ++cache.given_up;
    }
  }
  return false;
}

// A new program's cost groups (each cost's kind, parameter and pieces moved) and transfer
// groups (each transfer's shape and pieces, counted).
inline void group_costs(ArProgram& p) {
  p.groups.clear(), p.group_of.clear(), p.xfer_groups.clear();
  for (const ArCost& a : p.costs) {
    const ArCostGroup g{a.param, static_cast<std::int64_t>(a.mult) * (a.k1 - a.k0), a.kind};
    std::size_t i = 0;
    while (i < p.groups.size() && !(p.groups[i].param == g.param && p.groups[i].pieces == g.pieces && p.groups[i].kind == g.kind)) ++i;
    if (i == p.groups.size()) p.groups.push_back(g);
    p.group_of.push_back(static_cast<std::int16_t>(i));
  }
  for (const ArXferShape& x : p.xfers) {
    const std::int64_t pieces = x.k1 - x.k0;
    const std::int32_t shape = shape_of(x);
    std::size_t i = 0;
    while (i < p.xfer_groups.size() && !(p.xfer_groups[i].pieces == pieces && p.xfer_groups[i].shape == shape)) ++i;
    if (i == p.xfer_groups.size()) p.xfer_groups.push_back(ArXferGroup{pieces, 0, shape});
    ++p.xfer_groups[i].n;
  }
}

// Records level `c` as `plan` says (into its program, or a new one, under the plan's key), once
// a walk has taken it with figures `f` and marks `marks` (the general walk without depths, or
// the ring's walk where the general walk takes it so too): Sim builds its ops
// again (its output and scratch are overwritten; the caller has taken what it needs) and runs
// them; a new program keeps the graph, and the order of the run is kept if its replay gives
// the walk's figures and marks. True where an order was kept.
template <class Sim>
bool record_level(Sim& sim, const AllreduceConfig& c, const ArRecordPlan& plan,
                  const AllreduceFigures& f, const ps_t* marks) {
  ArReplayCache& cache = replay_cache();
  if (host_sampling().load(std::memory_order_relaxed)) return false;  // an estimate's sample records nothing
  ArRecord& rec = cache.record;
  ArProgram* program = plan.program;
  if (!program) {  // a new program (replacing one whose key hashed alike)
    if (cache.ops + kCollMaxOps * (1 + 2 * ArProgram::kOrders) + ArReplayCache::kEntryOps > ArReplayCache::kMostOps) {
      if (cache.served_last > 0 || cache.served > 0) return false;  // it serves: kept as it is
      cache.drop_programs();
    }
    const auto old = cache.programs.find(plan.hash);
    if (old != cache.programs.end()) cache.ops -= old->second.ops_counted();
    program = &cache.programs[plan.hash];  // what it held is overwritten as it is recorded
    program->key = plan.key;
    program->used = true, program->usable = false;  // usable once its graph is kept
    program->norders = 0, program->last = 0, program->served = 0, program->refused = 0;
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
    group_costs(p);
    p.usable = true;
    ++cache.graphs;
    cache.ops += p.graph.n;
  }
  sim::ReplayOrder& order = cache.order;
  if (!p.graph.order_of(sim.e, order)) return false;
  AllreduceFigures g;
  if (!replay_pieces(p, order, c, &g, cache.marks)) return false;  // the run met claims at an instant's later rounds
  auto same = [&] {
    bool eq = std::memcmp(&f, &g, sizeof f) == 0;
    for (std::int64_t r = 0; r < coll_vranks(c); ++r) eq = eq && cache.marks[r] == marks[r];
    return eq;
  };
  // Never false: the run and the walk are the same schedule, and classes time their ops alike
  // (a config whose pieces are all one size checks them too); the structure is replayed no more.
  bool kept = same();
  sim::classes_of(p.graph, order, p.group_of.data(), cache.classes);
  // The closed form where it is no longer than the classes (a form costs about what a class does).
  const std::int32_t steps = static_cast<std::int32_t>(cache.classes.steps.size());
  const bool closed = sim::forms_of(cache.classes, steps, cache.forms) && cache.forms.forms() <= steps;
  // The new order goes where the oldest was (or after the last one kept).
  const bool added = p.norders < ArProgram::kOrders;
  const std::int32_t k = added ? p.norders : (p.last + 1) % ArProgram::kOrders;
  if (kept) {
    if (!added) cache.ops -= p.graph.n + static_cast<std::int64_t>(p.classes[k].steps.size());
    std::swap(p.orders[k], order);
    std::swap(p.classes[k], cache.classes);
    std::swap(p.forms[k], cache.forms);
    p.closed[k] = closed;
    p.norders += added;
    cache.ops += p.graph.n + static_cast<std::int64_t>(p.classes[k].steps.size());
    const std::int64_t values = coll_values(c), parts = c.chunks * coll_vranks(c);
    if (values % parts == 0) {
      kept = replay_uniform(p, k, c, values / parts, &g, cache.marks, false) && same();
      if (closed) kept = kept && replay_uniform(p, k, c, values / parts, &g, cache.marks, true) && same();
    }
  }
  if (!kept) {
    ++cache.mismatches;
    p.usable = false;
    return false;
  }
  ++cache.orders;
  p.last = k;
  return true;
}
#endif  // !__CUDA_ARCH__

}  // namespace ar_detail
}  // namespace kb
