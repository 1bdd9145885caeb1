// The max-plus machinery of the batched GEMM model (gemm_model.h): the schedule of one PE
// is a max-plus recurrence over its steps (one step = one k-slice of one output tile) on two
// in-order resources, the PE's DMA queue and its matrix engine.
// Identical blocks of steps (k-slices of a tile, tiles of a row, rows of a PE's share) are
// applied until the state, taken relative to the DMA clock, repeats; from then on each
// block only adds a constant, so the rest of the run is one multiplication. The jump is
// exact because the step map is homogeneous: f(x + c) = f(x) + c. For the same reason tiles
// and middle rows remember the last two state shapes they met and their results (Memo2).
// Single-buffered, a PE is serial and its finish time is in closed form (worker_latency).
// With split-K every PE of a block is walked; see k_block.
#pragma once

#include "../../sim/arbitration.h"
#include "gemm_config.h"

namespace kb {

namespace gemm_detail {

struct Busy {
  ps_t matrix, dma;
};

struct Step {
  ps_t load;   // busy time of the A and B loads
  ps_t mm;     // matrix engine time
  ps_t store;  // busy time of the C store; < 0: not the last k-slice of its tile
};

// State after a step: the DMA queue's free time, the end of the last two matmuls, and the
// stores still owed by the last two steps (a step's store is issued just before the loads
// that reuse its buffer, i.e. `buffers` steps later).
struct Pipe {
  ps_t dfree, mm1, mm2;
  ps_t st1, st2;
};

struct Ctx {
  std::int64_t buffers;
  ps_t hbm_lat;
};

KB_HD inline void apply_step(Pipe& p, const Step& s, const Ctx& c) {
  const ps_t gate = c.buffers == 1 ? p.mm1 : p.mm2;
  const ps_t owed = c.buffers == 1 ? p.st1 : p.st2;
  if (owed >= 0) p.dfree = imax(p.dfree, gate) + owed;
  p.dfree = imax(p.dfree, gate) + s.load;
  const ps_t mm_end = imax(p.dfree + c.hbm_lat, p.mm1) + s.mm;
  p.mm2 = p.mm1;
  p.mm1 = mm_end;
  p.st2 = p.st1;
  p.st1 = s.store;
}

// The stores still owed at the end; the last waits for `gate` too (split-K: the partial
// sums added into its tile).
KB_HD inline void finish(Pipe& p, const Ctx& c, ps_t gate = 0) {
  if (c.buffers == 2 && p.st2 >= 0) p.dfree = imax(p.dfree, p.mm2) + p.st2;
  if (p.st1 >= 0) p.dfree = imax(p.dfree, imax(p.mm1, gate)) + p.st1;
}

// A state relative to the DMA clock: what a homogeneous map's result depends on.
struct Shape {
  ps_t mm1, mm2, st1, st2;
  KB_HD static Shape of(const Pipe& p) { return Shape{p.mm1 - p.dfree, p.mm2 - p.dfree, p.st1, p.st2}; }
  KB_HD bool operator==(const Shape& o) const { return mm1 == o.mm1 && mm2 == o.mm2 && st1 == o.st1 && st2 == o.st2; }
};

// What a homogeneous map made of a state of shape `in`: dfree advanced by `advance`, the
// state of shape `out`. Replaying it on any state of shape `in` is exact.
struct Replay {
  Shape in;
  ps_t advance;
  Shape out;
  KB_HD static Replay of(const Shape& in, ps_t start, const Pipe& after) {
    return Replay{in, after.dfree - start, Shape::of(after)};
  }
  KB_HD void apply(Pipe& p) const {
    p.dfree += advance;
    p.mm1 = p.dfree + out.mm1, p.mm2 = p.dfree + out.mm2, p.st1 = out.st1, p.st2 = out.st2;
  }
};

KB_HD inline void shift(Pipe& p, ps_t d) {
  p.dfree += d;
  p.mm1 += d;
  p.mm2 += d;
}

// `count` k-slices of one step kind that owe no store. Single-buffered, the run is in
// closed form after its first step: that step leaves the matmul end A >= the DMA's free
// time, so every later step loads from A (dfree = A + load) and computes at once
// (A' = A + load + latency + mm): a period of one step, from the second on.
// Double-buffered, after any step the state is (D, E1 = D + max(λ, v) + X, E2 = D + v):
// one number, v = E2 − D, and once the owed stores are issued (two steps) a step maps it
// to f(v) = max(λ, v) + X − max(0, v) − L and advances D by max(0, v) + L. f is constant
// for v >= λ and for v < 0 and a reflection in between, so v repeats with period one or
// two within a few steps (docs/model.md, 9.2); the run is iterated on v alone until then.
// (s.store < 0: a full k-slice; buffers is 1 or 2, gemm_check.)
KB_HD inline void run_steps(Pipe& p, std::int64_t count, const Step& s, const Ctx& c) {
  if (count <= 0) return;
  apply_step(p, s, c);
  if (c.buffers == 1) {
    if (count >= 2) {
      const ps_t d = s.load + c.hbm_lat + s.mm, a1 = p.mm1;
      p.mm2 = a1 + (count - 2) * d;
      p.dfree = p.mm2 + s.load;
      p.mm1 = p.mm2 + d;
      p.st1 = p.st2 = -1;
    }
    return;
  }
  if (count >= 2) apply_step(p, s, c);
  if (count <= 2) return;
  const ps_t L = s.load, X = s.mm, lat = c.hbm_lat;
  auto advance = [&](ps_t v) { return imax(0, v) + L; };
  auto f = [&](ps_t v) { return imax(lat, v) + X - imax(0, v) - L; };
  ps_t v = p.mm2 - p.dfree, d = 0, v1 = 0, v2 = 0;  // v1, v2: v one and two steps back
  for (std::int64_t i = 0, rest = count - 2; i < rest; ++i) {
    if (i >= 1 && v == v1) {  // period one
      d += (rest - i) * advance(v);
      break;
    }
    if (i >= 2 && v == v2) {  // period two: v, v1, v, v1, ...
      d += ((rest - i) / 2) * (advance(v) + advance(v1));
      if ((rest - i) % 2) {
        d += advance(v);
        v = v1;
      }
      break;
    }
    d += advance(v);
    v2 = v1, v1 = v;
    v = f(v);
  }
  p.dfree += d;
  p.mm2 = p.dfree + v;
  p.mm1 = p.dfree + imax(lat, v) + X;
}

// The last two state shapes a homogeneous map met and what it made of them: a state of
// either shape gives the same result shifted. Walks meet two shapes per map again and again
// (a run's first application, then its steady state), and PEs alike meet the same ones.
struct Memo2 {
  int used, next;  // entries filled, and the one to replace next
  Replay e[2];
  KB_HD void clear() { used = 0, next = 0; }
  // Applies the map to p (`compute` applies it when neither entry has p's shape); returns
  // the entry that holds what it made of p's shape.
  template <class Compute>
  KB_HD const Replay& apply(Pipe& p, const Compute& compute) {
    const Shape in = Shape::of(p);
    for (int i = 0; i < used; ++i)
      if (e[i].in == in) {
        e[i].apply(p);
        return e[i];
      }
    const ps_t start = p.dfree;
    compute(p);
    const int i = next;
    e[i] = Replay::of(in, start, p);
    next ^= 1;
    if (used < 2) ++used;
    return e[i];
  }
  // The map `count` times, jumping once the shape is one it maps to itself (the rest only
  // adds advances) or one of two it alternates between.
  template <class Compute>
  KB_HD void run(Pipe& p, std::int64_t count, const Compute& compute) {
    while (count > 0) {
      const Replay& x = apply(p, compute);
      if (--count == 0) return;
      if (x.out == x.in) {
        shift(p, count * x.advance);
        return;
      }
      const Replay& y = e[&x == &e[0] ? 1 : 0];
      if (used == 2 && y.in == x.out && y.out == x.in) {
        shift(p, (count / 2) * (x.advance + y.advance));
        if (count % 2) y.apply(p);
        return;
      }
    }
  }
};

// One output tile: kt-1 full k-slices, then the last (possibly ragged) one with the store.
struct TileBlock {
  Step body, last;
  std::int64_t kt;
  // Of the whole tile, saturating at kTimeLimitPs: its matrix and DMA times, its
  // matrix-engine cycles, and its part of the model's bound on finish times (busy DMA
  // time and an HBM latency per op).
  Busy busy;
  std::int64_t cycles;
  ps_t bound;
  mutable Memo2 memo;
  KB_HD void compute(Pipe& p, const Ctx& c) const {
    run_steps(p, kt - 1, body, c);
    apply_step(p, last, c);
  }
  KB_HD void operator()(Pipe& p, const Ctx& c) const {
    memo.apply(p, [&](Pipe& q) { compute(q, c); });
  }
  // `count` tiles of this kind in a row.
  KB_HD void run(Pipe& p, std::int64_t count, const Ctx& c) const {
    memo.run(p, count, [&](Pipe& q) { compute(q, c); });
  }
};

// A run of tiles in one tile row: `regular` full-width tiles, then maybe the ragged one.
struct RowBlock {
  const TileBlock* regular;  // the PE's tile kinds (their memos are shared by every row)
  const TileBlock* edge;
  std::int64_t nregular;
  bool has_edge;
  KB_HD void operator()(Pipe& p, const Ctx& c) const {
    regular->run(p, nregular, c);
    if (has_edge) (*edge)(p, c);
  }
};

struct Costs {
  const GemmConfig* g;
  std::int64_t kt, k_last;
  ps_t lat;  // HBM latency
  std::int64_t sharers;  // PEs of the cube that access its HBM: those with at least one tile
  // shared_transfer_ps with one division: which of the two rates is the lower does not
  // depend on the size, and the ceiling keeps the order of the exact quotients.
  KB_HD ps_t xfer(std::int64_t bytes) const {
    const std::int64_t port = g->hw.dma_gbps(), shared = g->hw.hbm_bandwidth_gbps;
    return port * sharers <= shared ? transfer_ps(bytes, port) : ceil_div(bytes * kPsPerNs * sharers, shared);
  }
  KB_HD std::int64_t cycles(std::int64_t mi, std::int64_t nj, std::int64_t kc) const {
    return systolic_cycles(mi, nj, kc, g->hw.matrix_rows, g->hw.matrix_cols, g->hw.dataflow);
  }
};

// A full tile's k-slice of `kc` values of k: its A and B loads and its matmul, as TileKinds
// costs them; it owes no store. The automatic tiling's estimate (gemm_auto.h) and the tuned
// search's bound (gemm_model.h) cost a full tile with it.
KB_HD inline Step full_slice(const GemmConfig& g, const Costs& cost, std::int64_t kc) {
  return Step{cost.xfer(kGemmABytes * g.tile_m * kc) + cost.xfer(gemm_b_bytes(g) * kc * g.tile_n),
              cycles_ps(cost.cycles(g.tile_m, g.tile_n, kc), g.hw.clock_mhz), -1};
}

// The tiles of a cube's schedule, by (last tile row?, last tile column?): their steps, busy
// times and matrix-engine cycles, computed once per HBM share (the number of PEs a cube's
// block keeps busy) for the totals and the walks alike, rather than per run of tiles (the
// divisions in the transfer and cycle helpers dominated the model).
struct TileKinds {
  TileBlock t[2][2];          // filled where the last row or column is ragged; see at()
  std::int64_t mi[2], nj[2];  // tile rows by [last row], tile columns by [last column]
  bool ragged_m, ragged_n;
  // The tile of the last row (a) or not, and of the last column (b) or not: last rows and
  // columns that are not ragged hold regular tiles.
  KB_HD const TileBlock& at(int a, int b) const { return t[a && ragged_m][b && ragged_n]; }
  // Only the distinct tiles are filled, and each transfer and cycle count is computed once
  // per distinct size (64-bit divisions dominate this costing).
  // Filled in place (the struct is large enough that returning it by value showed in profiles).
  KB_HD void set(const GemmConfig& g, const Costs& cost, std::int64_t m_last, std::int64_t n_last) {
    TileKinds& k = *this;
    k.mi[0] = g.tile_m, k.mi[1] = m_last, k.nj[0] = g.tile_n, k.nj[1] = n_last;
    k.ragged_m = m_last != g.tile_m, k.ragged_n = n_last != g.tile_n;
    const int na = k.ragged_m ? 2 : 1, nb = k.ragged_n ? 2 : 1, nq = cost.k_last != g.tile_k ? 2 : 1;
    const std::int64_t kc[2] = {g.tile_k, cost.k_last};
    ps_t load_a[2][2], load_b[2][2];  // [mi][kc], [kc][nj]
    for (int q = 0; q < nq; ++q) {
      for (int a = 0; a < na; ++a) load_a[a][q] = cost.xfer(kGemmABytes * k.mi[a] * kc[q]);
      for (int b = 0; b < nb; ++b) load_b[q][b] = cost.xfer(gemm_b_bytes(g) * kc[q] * k.nj[b]);
    }
    for (int a = 0; a < na; ++a)
      for (int b = 0; b < nb; ++b) {
        TileBlock& t = k.t[a][b];
        t.memo.clear();
        std::int64_t cycles[2];
        for (int q = 0; q < nq; ++q) {
          Step& st = q ? t.last : t.body;
          cycles[q] = cost.cycles(k.mi[a], k.nj[b], kc[q]);
          st.load = load_a[a][q] + load_b[q][b];
          st.mm = cycles_ps(cycles[q], g.hw.clock_mhz);
        }
        t.body.store = -1;
        if (nq == 1) t.last = t.body, cycles[1] = cycles[0];  // the last k-slice is a full one
        t.last.store = cost.xfer(2 * k.mi[a] * k.nj[b]);
        t.kt = cost.kt;
        const std::int64_t body = cost.kt - 1;
        t.busy = Busy{sat_add(sat_mul(body, t.body.mm), t.last.mm),
                      sat_add(sat_add(sat_mul(body, t.body.load), t.last.load), t.last.store)};
        t.cycles = sat_add(sat_mul(body, cycles[0]), cycles[1]);
        t.bound = sat_add(t.busy.dma, sat_mul(2 * cost.kt + 1, cost.lat));
      }
  }
};

// A PE's tiles in row-major order, by position: from (first_row, lo_col) to (last_row,
// hi_col), both ends included.
struct RowSpan {
  std::int64_t first_row, lo_col, last_row, hi_col;
};
// Tiles [lo, hi) of a block `width` tiles wide.
KB_HD inline RowSpan row_span(std::int64_t lo, std::int64_t hi, std::int64_t width) {
  return RowSpan{lo / width, lo % width, (hi - 1) / width, (hi - 1) % width};
}

// A PE's tiles are: part of a first tile row, some whole middle rows (all alike, never the
// ragged last row of the matrix), and part of a last row. Calls visit(count, row, j0, j1)
// for each such run of `count` identical rows covering tile columns j0..j1.
template <class Visit>
KB_HD void for_each_row_run(const RowSpan& r, std::int64_t width, Visit&& visit) {
  if (r.first_row == r.last_row) {
    visit(std::int64_t{1}, r.first_row, r.lo_col, r.hi_col);
    return;
  }
  visit(std::int64_t{1}, r.first_row, r.lo_col, width - 1);
  if (r.last_row - r.first_row > 1) visit(r.last_row - r.first_row - 1, r.first_row + 1, std::int64_t{0}, width - 1);
  visit(std::int64_t{1}, r.last_row, std::int64_t{0}, r.hi_col);
}

// A cube's block as a PE's walk sees it: `width` tile columns; the local row that is the
// matrix's ragged last tile row and the local column that is its ragged last tile column
// (-1: not in this block, or not ragged).
struct BlockShape {
  std::int64_t width, last_row, last_col;
};

// Adds the busy times of a PE's tiles of a cube's block (counted by tile kind) to `busy`,
// and, unless `p` is null, walks them in order from state *p. `rows`: the block's memo of
// whole middle rows (one kind per block), shared by its PEs.
KB_HD inline void walk_tiles(Pipe* p, const Ctx& c, const TileKinds& tk, const RowSpan& span, const BlockShape& blk,
                             Memo2& rows, Busy& busy) {
  if (blk.last_row < 0 && blk.last_col < 0) {  // every tile alike: one run
    const TileBlock& t = tk.t[0][0];
    const std::int64_t n = (span.last_row - span.first_row) * blk.width + span.hi_col - span.lo_col + 1;
    busy.matrix += n * t.busy.matrix, busy.dma += n * t.busy.dma;
    if (p) t.run(*p, n, c);
    return;
  }
  // Only the last tile row of the matrix can be ragged in m, and its last column in n.
  for_each_row_run(span, blk.width, [&](std::int64_t count, std::int64_t i, std::int64_t j0, std::int64_t j1) {
    const int last = i == blk.last_row;
    RowBlock rb;
    rb.regular = &tk.at(last, 0);
    rb.edge = &tk.at(last, 1);
    rb.has_edge = j1 == blk.last_col;
    rb.nregular = j1 - j0 + (rb.has_edge ? 0 : 1);
    const std::int64_t regular = count * rb.nregular;
    busy.matrix += regular * rb.regular->busy.matrix;
    busy.dma += regular * rb.regular->busy.dma;
    if (rb.has_edge) busy.matrix += count * rb.edge->busy.matrix, busy.dma += count * rb.edge->busy.dma;
    if (!p) return;
    if (count == 1) rb(*p, c);
    else rows.run(*p, count, [&](Pipe& q) { rb(q, c); });
  });
}

KB_HD inline Ctx ctx_of(const GemmConfig& g) { return Ctx{g.buffers, g.hw.hbm_latency_ns * kPsPerNs}; }

// Finish time of one PE whose `tiles` tiles of its cube's block are `span`; adds its busy
// times. Single-buffered, a PE is serial (every load waits for the matmul before it, which
// waits for its own loads), so it finishes after its busy times and one HBM latency per
// step and one more for the last store: closed form, no walk (docs/model.md, 9.3).
KB_HD inline ps_t worker_latency(const GemmConfig& g, const TileKinds& tk, const RowSpan& span, const BlockShape& blk,
                                 std::int64_t tiles, Memo2& rows, Busy& busy) {
  const Ctx c = ctx_of(g);
  if (c.buffers == 1) {
    walk_tiles(nullptr, c, tk, span, blk, rows, busy);
    return busy.matrix + busy.dma + (tiles * tk.t[0][0].kt + 1) * c.hbm_lat;
  }
  Pipe p{0, 0, 0, -1, -1};
  walk_tiles(&p, c, tk, span, blk, rows, busy);
  finish(p, c);
  return p.dfree + c.hbm_lat;
}

// Split-K (stream-K) inside one cube's block of `tiles` tiles: PE p holds units
// [start(p), start(p+1)) (gemm_unit_start). Its units are: maybe the tail of a tile another
// PE owns (slices a..e of its first tile: it sends that fp32 partial sum to the owner), whole
// tiles, and maybe the head of a tile it owns (slices 0..b of its last tile: it receives the
// other PEs' partials of it, adds them on its vector engine, and stores the tile).
struct KRange {
  std::int64_t ft, a, lt, b;  // first tile and its first slice; last tile and one past its last slice
  KB_HD bool sends() const { return a > 0; }
  KB_HD bool owns_partial(std::int64_t kt) const { return b < kt && (a == 0 || lt > ft); }
  // Whole tiles [whole_lo, whole_hi).
  KB_HD std::int64_t whole_lo() const { return a > 0 ? ft + 1 : ft; }
  KB_HD std::int64_t whole_hi(std::int64_t kt) const { return b == kt ? lt + 1 : lt; }
};
KB_HD inline KRange k_range(std::int64_t lo, std::int64_t hi, std::int64_t kt) {
  return KRange{lo / kt, lo % kt, (hi - 1) / kt, (hi - 1) % kt + 1};
}

// The costs of the reduction of one tile kind's partial sums.
struct KCosts {
  ps_t copy;  // each PE-to-PE port holds the fp32 partial this long
  ps_t lat;   // the copy queue's latency
  ps_t add;   // the vector add of one partial
};
KB_HD inline KCosts k_costs(const GemmConfig& g, std::int64_t mi, std::int64_t nj) {
  return KCosts{transfer_ps(4 * mi * nj, g.hw.ipcq.bandwidth_gbps), g.hw.ipcq.latency_ns * kPsPerNs,
                cycles_ps(vector_cycles(VecOp::add, mi, nj, g.hw.vector_lanes), g.hw.clock_mhz)};
}

// Slices [s0, s1) of one tile; `store`: whether the walk's last step owes the tile's store.
KB_HD inline void walk_partial(Pipe& p, const Ctx& c, const TileBlock& t, std::int64_t s0, std::int64_t s1,
                               bool store) {
  run_steps(p, s1 - s0 - 1, t.body, c);
  Step last = s1 == t.kt ? t.last : t.body;
  last.store = store ? t.last.store : -1;
  apply_step(p, last, c);
}

// Partial-tile walks remembered by tile kind, slice count, whether they end the tile, the
// store they owe and the state's shape (the map is homogeneous, as for Memo2): PEs of a
// block with alike ranges, and each owner's look at its senders' walks, meet them again.
struct PartialMemo {
  struct Entry {
    const TileBlock* t;
    std::int64_t n;
    bool ends, store;
    Replay replay;
  };
  static constexpr int kEntries = 4;
  Entry e[kEntries];
  int used = 0, next = 0;
  KB_HD void walk(Pipe& p, const Ctx& c, const TileBlock& t, std::int64_t s0, std::int64_t s1, bool store) {
    const std::int64_t n = s1 - s0;
    const bool ends = s1 == t.kt;
    const Shape in = Shape::of(p);
    for (int i = 0; i < used; ++i) {
      const Entry& x = e[i];
      if (x.t == &t && x.n == n && x.ends == ends && x.store == store && x.replay.in == in) {
        x.replay.apply(p);
        return;
      }
    }
    const ps_t start = p.dfree;
    walk_partial(p, c, t, s0, s1, store);
    e[next] = Entry{&t, n, ends, store, Replay::of(in, start, p)};
    next = (next + 1) % kEntries;
    if (used < kEntries) ++used;
  }
};

KB_HD inline Busy partial_busy(const TileBlock& t, std::int64_t s0, std::int64_t s1, bool store) {
  const Step& last = s1 == t.kt ? t.last : t.body;
  return Busy{(s1 - s0 - 1) * t.body.mm + last.mm, (s1 - s0 - 1) * t.body.load + last.load + (store ? t.last.store : 0)};
}

struct KBlock {
  ps_t latency;
  Busy busiest;  // the busiest PE's matrix and DMA times
  std::int64_t sends;
};

// One block under split-K: the latest finish of its PEs, their busiest engines, and the
// number of partial sums sent. Every PE of the block is walked; a tile's owner finishes
// after its partials have arrived (in the order they were ready: the owner's copy-queue
// in-port serves them one at a time, ties to the lower PE) and been added (in PE order).
KB_HD inline KBlock k_block(const GemmConfig& g, const TileKinds& tk, std::int64_t tiles, std::int64_t kt,
                            const BlockShape& blk) {
  const Ctx c = ctx_of(g);
  const std::int64_t units = tiles * kt;
  KBlock out{0, Busy{0, 0}, 0};
  PartialMemo memo;
  Memo2 rows;
  rows.clear();
  auto kind = [&](std::int64_t t) -> const TileBlock& {
    return tk.at(t / blk.width == blk.last_row, t % blk.width == blk.last_col);
  };
  EvenParts ranges(units, g.pes);  // gemm_unit_start, walked
  for (std::int64_t pe = 0; pe < g.pes; ++pe) {
    const Span part = ranges.next();
    const std::int64_t lo = part.lo, hi = part.hi;
    if (hi <= lo) continue;
    const KRange r = k_range(lo, hi, kt);
    Pipe p{0, 0, 0, -1, -1};
    Busy busy{0, 0};
    if (r.sends()) {
      const std::int64_t e = r.ft == r.lt ? r.b : kt;
      memo.walk(p, c, kind(r.ft), r.a, e, false);
      const Busy b = partial_busy(kind(r.ft), r.a, e, false);
      busy.matrix += b.matrix, busy.dma += b.dma;
      ++out.sends;
    }
    const std::int64_t w0 = r.whole_lo(), w1 = r.whole_hi(kt);
    if (w1 > w0) walk_tiles(&p, c, tk, row_span(w0, w1, blk.width), blk, rows, busy);
    ps_t gate = 0;  // when the last tile's sum is complete
    if (r.owns_partial(kt)) {
      const TileBlock& t = kind(r.lt);
      memo.walk(p, c, t, 0, r.b, true);
      const Busy b = partial_busy(t, 0, r.b, true);
      busy.matrix += b.matrix, busy.dma += b.dma;
      // The senders: the next PEs with units that start inside the tile (their ranges
      // follow this PE's: a copy of the split walker visits them). Each sent its first
      // units, walked from the start; the ready times take few values (a sender holds
      // floor or ceil of units / pes, or the tile's last slices), so they are served by
      // value, lowest first, and each value's senders in PE order (sim::goes_first: every
      // sender has issued one copy), one pass per value.
      // (PartialMemo remembers their walks: a sender's depends only on its slice count and
      // whether they end the tile.)
      const std::int64_t tile_start = r.lt * kt, tile_end = tile_start + kt;
      // visit(ready time) for each sender, in PE order.
      auto for_each_sender = [&](auto&& visit) {
        for (EvenParts q = ranges;;) {
          const Span u = q.next();
          if (u.lo >= tile_end) return;
          if (u.hi == u.lo) continue;
          Pipe s{0, 0, 0, -1, -1};
          memo.walk(s, c, t, u.lo - tile_start, imin(u.hi, tile_end) - tile_start, false);
          visit(s.mm1);
        }
      };
      std::int64_t senders = 0;
      ps_t value = -1;  // the lowest ready time not yet served
      for_each_sender([&](ps_t rq) {
        ++senders;
        if (value < 0 || rq < value) value = rq;
      });
      const KCosts kc = k_costs(g, tk.mi[r.lt / blk.width == blk.last_row], tk.nj[r.lt % blk.width == blk.last_col]);
      sim::Server port;  // the owner's in-port: ADR 0007's rule, claims by (ready, PE)
      gate = p.mm1 + senders * kc.add;  // the adds wait for the owner's own last matmul
      while (value >= 0) {
        ps_t next = -1;
        std::int64_t pos = 0;  // the sender's place in PE order: its add is the pos-th
        for_each_sender([&](ps_t rq) {
          ++pos;
          if (rq == value) {
            const ps_t landed = port.take(value, kc.copy) + kc.copy + kc.lat;
            gate = imax(gate, landed + (senders - pos + 1) * kc.add);
          } else if (rq > value && (next < 0 || rq < next)) {
            next = rq;
          }
        });
        value = next;
      }
    }
    finish(p, c, gate);
    out.latency = imax(out.latency, imax(p.dfree + c.hbm_lat, p.mm1));
    out.busiest.matrix = imax(out.busiest.matrix, busy.matrix);
    out.busiest.dma = imax(out.busiest.dma, busy.dma);
  }
  return out;
}

}  // namespace gemm_detail

}  // namespace kb
