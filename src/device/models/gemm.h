// Batched GEMM model: from a compact config, the latency and resource totals of the tile
// schedule that the reference GEMM kernel (src/host/kernels/gemm.cpp) issues, without
// building a graph. Pure KB_HD code: no allocation, exceptions, virtual calls or recursion.
//
// The schedule of one PE is a max-plus recurrence over its steps (one step = one k-slice
// of one output tile) on two in-order resources, the PE's DMA queue and its matrix engine.
// Identical blocks of steps (k-slices of a tile, tiles of a row, rows of a PE's share) are
// applied until the state, taken relative to the DMA clock, repeats; from then on each
// block only adds a constant, so the rest of the run is one multiplication. The jump is
// exact because the step map is homogeneous: f(x + c) = f(x) + c. For the same reason tiles
// and middle rows remember the last two state shapes they met and their results (Memo2).
// Single-buffered, a PE is serial and its finish time is in closed form (worker_latency).
// With split-K every PE of a block is walked; see k_block.
#pragma once

#include <cstdint>

#include "../common/hw.h"
#include "../common/kb_hd.h"
#include "../common/units.h"
#include "systolic.h"
#include "vector.h"

namespace kb {

constexpr std::int64_t kGemmMaxDim = INT64_C(1) << 20;

// Every field is an int64 (sweep axes set fields by offset). A tile of 0 means automatic:
// min(kGemmAutoTile, its matrix dimension), resolved by gemm_complete.
struct GemmConfig {
  HwConfig hw;
  // problem and schedule
  std::int64_t m, n, k;
  std::int64_t tile_m, tile_n, tile_k;
  std::int64_t pes;    // PEs per cube
  std::int64_t cubes;  // cubes of SIP 0
  std::int64_t buffers;  // 1 or 2 SRAM buffer sets
  std::int64_t split;    // GemmSplit: how output tiles go to cubes
};
// Output tiles go to cubes in contiguous blocks of whole tile rows (rows) or of whole tile
// columns (cols). Inside a cube, the plain splits give each PE a contiguous run of whole
// output tiles; the -k splits (rows-k, cols-k) split the cube's work evenly at k-slice
// granularity instead (stream-K): a tile whose k-slices fall to several PEs is owned by the
// PE holding its first slice, which adds the others' fp32 partial sums, copied to it PE to
// PE, before storing it. auto: see gemm_split_of.
enum GemmSplit : std::int32_t { kGemmSplitAuto = 0, kGemmSplitRows, kGemmSplitCols, kGemmSplitRowsK, kGemmSplitColsK };
constexpr const char* kGemmSplitNames[] = {"auto", "rows", "cols", "rows-k", "cols-k"};
KB_HD constexpr bool gemm_split_by_cols(std::int64_t split) { return split == kGemmSplitCols || split == kGemmSplitColsK; }
KB_HD constexpr bool gemm_split_k(std::int64_t split) { return split == kGemmSplitRowsK || split == kGemmSplitColsK; }
constexpr std::int64_t kGemmAutoTile = 128;

// The statuses, once: X(enumerator, name in reports). 0 is the valid one.
#define KB_GEMM_STATUSES(X)                                                                    \
  X(kGemmOk, "valid")                                                                          \
  X(kGemmBadShape, "bad_shape")                /* a dimension outside 1..2^20 */               \
  X(kGemmBadTile, "tile_larger_than_matrix")   /* a tile dimension outside 1..its dimension */ \
  X(kGemmBadBuffers, "bad_buffers")            /* buffers not 1 or 2 */                        \
  X(kGemmBadPes, "too_many_pes")               /* pes outside 1..pes_per_cube */               \
  X(kGemmBadCubes, "too_many_cubes")           /* cubes outside 1..cubes_per_sip */            \
  X(kGemmSramOverflow, "sram_overflow")        /* the tile buffers do not fit the SRAM */      \
  X(kGemmHbmOverflow, "hbm_overflow")          /* A, B and the C shard do not fit the HBM */   \
  X(kGemmTimeOverflow, "time_overflow")        /* times would exceed int64 picoseconds */      \
  X(kGemmBadHardware, "bad_hardware")          /* hardware no topology file could hold */ \
  X(kGemmBadSplit, "bad_split")                /* split not auto, rows, cols, rows-k or cols-k */

enum GemmStatus : std::int32_t {
#define KB_GEMM_ENUM(e, name) e,
  KB_GEMM_STATUSES(KB_GEMM_ENUM)
#undef KB_GEMM_ENUM
  kGemmStatusCount
};
#define KB_GEMM_NAME(e, name) name,
constexpr const char* kGemmStatusNames[] = {KB_GEMM_STATUSES(KB_GEMM_NAME)};
#undef KB_GEMM_NAME
// Pareto costs a sweep can trade latency against (1-based; 0: none).
enum GemmCost : std::int32_t { kGemmCostPes = 1, kGemmCostSram, kGemmCostHbm };

struct GemmResult {
  std::int32_t status;
  std::int32_t reserved;  // explicit, zeroed padding: results compare bytewise
  ps_t latency_ps;
  std::int64_t mac_cycles;
  std::int64_t macs;
  ps_t matrix_busy_ps;
  ps_t dma_busy_ps;
  ps_t max_pe_matrix_busy_ps;  // the busiest PE's matrix engine
  ps_t max_pe_dma_busy_ps;     // the busiest PE's DMA queue
  std::int64_t hbm_read_bytes, hbm_write_bytes;
  std::int64_t ops;
  ps_t compute_roof_ps, hbm_roof_ps, roofline_ps;
};

// Bytes of SRAM one PE needs for its tiles: `buffers` sets of an A tile, a B tile (fp16)
// and a C accumulator (fp32).
KB_HD constexpr std::int64_t gemm_tile_sram_bytes(const GemmConfig& c) {
  return c.buffers * (2 * (c.tile_m * c.tile_k + c.tile_k * c.tile_n) + 4 * c.tile_m * c.tile_n);
}

// The tile grid: tile rows, tile columns, k-slices per tile.
struct GemmGrid {
  std::int64_t tiles_m, tiles_n, kt;
  // Tiles along the dimension split over cubes, and across it.
  KB_HD std::int64_t along(bool by_cols) const { return by_cols ? tiles_n : tiles_m; }
  KB_HD std::int64_t across(bool by_cols) const { return by_cols ? tiles_m : tiles_n; }
};
KB_HD inline GemmGrid gemm_grid(const GemmConfig& c) {
  return GemmGrid{(c.m + c.tile_m - 1) / c.tile_m, (c.n + c.tile_n - 1) / c.tile_n, (c.k + c.tile_k - 1) / c.tile_k};
}

// `total` items over `parts` in contiguous runs, part p getting [floor(p·total / parts),
// floor((p+1)·total / parts)) (cubes' blocks, PEs' tiles and PEs' split-K units alike),
// visited in order with the floor carried as a remainder: no division per part, and no
// product that could overflow.
struct Span {
  std::int64_t lo, hi;
};
struct EvenSplit {
  std::int64_t per, left, parts;  // total = per·parts + left
  std::int64_t lo = 0, carry = 0;
  KB_HD EvenSplit(std::int64_t total, std::int64_t parts_) : per(total / parts_), left(total % parts_), parts(parts_) {}
  // The next part, in order.
  KB_HD Span next() {
    carry += left;
    const bool longer = carry >= parts;
    if (longer) carry -= parts;
    const Span part{lo, lo + per + (longer ? 1 : 0)};
    lo = part.hi;
    return part;
  }
};

// Stream-K: a block of `tiles` output tiles is tiles·kt units (tile-major, k-slice minor);
// PE p of `pes` gets units [start(p), start(p+1)), start(p) = floor(p·units / pes), computed
// without overflow.
KB_HD inline std::int64_t gemm_unit_start(std::int64_t units, std::int64_t pes, std::int64_t pe) {
  const std::int64_t q = units / pes, r = units % pes;
  return pe * q + (pe * r) / pes;
}
KB_HD inline bool gemm_pe_has_units(std::int64_t units, std::int64_t pes, std::int64_t pe) {
  return gemm_unit_start(units, pes, pe + 1) > gemm_unit_start(units, pes, pe);
}
// The PE whose units hold unit u: the last p with start(p) <= u.
KB_HD inline std::int64_t gemm_pe_of_unit(std::int64_t units, std::int64_t pes, std::int64_t u) {
  std::int64_t lo = 0, hi = pes - 1;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (gemm_unit_start(units, pes, mid) <= u) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// Slots of fp32 C tiles each PE holds for split-K partial sums: one for the partial it
// sends, and one per partial it may receive. The PEs that send to one owner start inside
// the owner's tile, at least floor(units / pes) units apart in the smallest block, so they
// are at most ceil((kt - 1) / that) (and at most kt - 1 and pes - 1).
KB_HD inline std::int64_t gemm_k_slots(const GemmConfig& c, const GemmGrid& g, bool by_cols) {
  const std::int64_t shortest = imax(1, g.along(by_cols) / c.cubes);
  const std::int64_t least = shortest * g.across(by_cols) * g.kt / c.pes;  // units per PE in the smallest block
  std::int64_t senders = imin(c.pes - 1, g.kt - 1);
  if (least >= 1) senders = imin(senders, (g.kt - 1 + least - 1) / least);
  return 1 + senders;
}

// Whether the shape, tiling and counts are in range, so that the grid and split are defined.
KB_HD inline bool gemm_grid_defined(const GemmConfig& c) {
  return c.m >= 1 && c.n >= 1 && c.k >= 1 && c.m <= kGemmMaxDim && c.n <= kGemmMaxDim && c.k <= kGemmMaxDim &&
         c.tile_m >= 1 && c.tile_n >= 1 && c.tile_k >= 1 && c.tile_m <= c.m && c.tile_n <= c.n && c.tile_k <= c.k &&
         c.pes >= 1 && c.pes <= kMaxMachinePes && c.cubes >= 1 && c.cubes <= kMaxMachinePes;
}
// The split a config runs with: rows, cols, rows-k or cols-k. auto takes cols when there
// are fewer tile rows than cubes and more tile columns than tile rows (a skinny GEMM, e.g.
// decode), rows otherwise; and splits k too (rows-k, cols-k) when that cuts the k-slices of
// the busiest PE of the largest block by more than a tenth (whole tiles: ceil(tiles / pes)
// · kt; split-K: ceil(tiles · kt / pes)) and the partial-sum slots fit the SRAM. Needs a
// valid shape and tiling (gemm_grid_defined).
KB_HD inline std::int64_t gemm_split_of(const GemmConfig& c) {
  if (c.split != kGemmSplitAuto || !gemm_grid_defined(c)) return c.split;
  const GemmGrid g = gemm_grid(c);
  const bool by_cols = g.tiles_m < c.cubes && g.tiles_n > g.tiles_m;
  const std::int64_t largest = (g.along(by_cols) + c.cubes - 1) / c.cubes * g.across(by_cols);  // tiles of the largest block
  const std::int64_t whole = (largest + c.pes - 1) / c.pes * g.kt, split = (largest * g.kt + c.pes - 1) / c.pes;
  if (split + whole / 10 < whole &&
      gemm_tile_sram_bytes(c) + gemm_k_slots(c, g, by_cols) * 4 * c.tile_m * c.tile_n <= c.hw.sram_bytes())
    return by_cols ? kGemmSplitColsK : kGemmSplitRowsK;
  return by_cols ? kGemmSplitCols : kGemmSplitRows;
}

// Bytes of SRAM one PE needs: its tile buffers, and with split-K its partial-sum slots.
KB_HD inline std::int64_t gemm_sram_bytes(const GemmConfig& c) {
  const std::int64_t split = gemm_split_of(c);
  if (!gemm_split_k(split) || !gemm_grid_defined(c)) return gemm_tile_sram_bytes(c);
  return gemm_tile_sram_bytes(c) + gemm_k_slots(c, gemm_grid(c), gemm_split_by_cols(split)) * 4 * c.tile_m * c.tile_n;
}

// Which output tiles a PE computes: the tile grid is split over cubes in contiguous blocks
// of tile rows or of tile columns (C is placed the same way, at tile granularity); each
// cube's block, in row-major order, is split over its PEs in contiguous runs.
struct TileRange {
  std::int64_t lo, hi;
};
// A cube's block: tile rows [r0, r1) x tile columns [c0, c1).
struct CubeTiles {
  std::int64_t r0, r1, c0, c1;
  KB_HD std::int64_t rows() const { return r1 - r0; }
  KB_HD std::int64_t cols() const { return c1 - c0; }
};
// `split` resolved (gemm_split_of).
KB_HD inline CubeTiles gemm_cube_tiles(std::int64_t tiles_m, std::int64_t tiles_n, std::int64_t cubes,
                                       std::int64_t split, std::int64_t cube) {
  if (gemm_split_by_cols(split)) return CubeTiles{0, tiles_m, cube * tiles_n / cubes, (cube + 1) * tiles_n / cubes};
  return CubeTiles{cube * tiles_m / cubes, (cube + 1) * tiles_m / cubes, 0, tiles_n};
}
// A PE's tiles as indices into its cube's block, row-major: tile t is (r0 + t / cols,
// c0 + t % cols).
KB_HD inline TileRange gemm_tiles_of(const CubeTiles& b, std::int64_t pes, std::int64_t pe) {
  const std::int64_t count = b.rows() * b.cols();
  return TileRange{pe * count / pes, (pe + 1) * count / pes};
}

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
      for (int a = 0; a < na; ++a) load_a[a][q] = cost.xfer(2 * k.mi[a] * kc[q]);
      for (int b = 0; b < nb; ++b) load_b[q][b] = cost.xfer(2 * kc[q] * k.nj[b]);
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
  EvenSplit ranges(units, g.pes);  // gemm_unit_start, walked
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
      // value, lowest first, and each value's senders in PE order: one pass per value.
      // (PartialMemo remembers their walks: a sender's depends only on its slice count and
      // whether they end the tile.)
      const std::int64_t tile_start = r.lt * kt, tile_end = tile_start + kt;
      // visit(ready time) for each sender, in PE order.
      auto for_each_sender = [&](auto&& visit) {
        for (EvenSplit q = ranges;;) {
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
      ps_t port = 0;
      gate = p.mm1 + senders * kc.add;  // the adds wait for the owner's own last matmul
      while (value >= 0) {
        ps_t next = -1;
        std::int64_t pos = 0;  // the sender's place in PE order: its add is the pos-th
        for_each_sender([&](ps_t rq) {
          ++pos;
          if (rq == value) {
            port = imax(port, value) + kc.copy;
            gate = imax(gate, port + kc.lat + (senders - pos + 1) * kc.add);
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

KB_HD inline std::int32_t gemm_check(const GemmConfig& g) {
  const HwConfig& h = g.hw;
  if (g.m < 1 || g.n < 1 || g.k < 1 || g.m > kGemmMaxDim || g.n > kGemmMaxDim || g.k > kGemmMaxDim)
    return kGemmBadShape;
  if (g.tile_m < 1 || g.tile_n < 1 || g.tile_k < 1 || g.tile_m > g.m || g.tile_n > g.n || g.tile_k > g.k)
    return kGemmBadTile;
  // The ranges topology files allow, for the fields the model reads.
  if (h.matrix_rows < 1 || h.matrix_rows > kMaxArray || h.matrix_cols < 1 || h.matrix_cols > kMaxArray ||
      static_cast<std::int64_t>(h.dataflow) < 0 || static_cast<std::int64_t>(h.dataflow) > 2 || h.clock_mhz < 1 ||
      h.clock_mhz > kMaxClockMhz || h.dma_engines < 1 || h.dma_engines > kMaxDmaEngines || h.dma_bandwidth_gbps < 1 ||
      h.dma_bandwidth_gbps > kMaxBandwidthGbps || h.hbm_bandwidth_gbps < 1 || h.hbm_bandwidth_gbps > kMaxBandwidthGbps ||
      h.hbm_latency_ns < 0 || h.hbm_latency_ns > kMaxLatencyNs || h.pe_rows < 1 || h.pe_rows > kMaxGrid ||
      h.pe_cols < 1 || h.pe_cols > kMaxGrid || h.cube_rows < 1 || h.cube_rows > kMaxGrid || h.cube_cols < 1 ||
      h.cube_cols > kMaxGrid || h.sram_kib < 1 || h.sram_kib > kMaxCapacity || h.hbm_capacity_mib < 1 ||
      h.hbm_capacity_mib > kMaxCapacity || h.sips < 1 || h.sips > kMaxSips || h.vector_lanes < 1 ||
      h.vector_lanes > kMaxLanes || h.ipcq.bandwidth_gbps < 1 || h.ipcq.bandwidth_gbps > kMaxBandwidthGbps ||
      h.ipcq.latency_ns < 0 || h.ipcq.latency_ns > kMaxLatencyNs || !hw_fits(h))
    return kGemmBadHardware;
  if (g.buffers != 1 && g.buffers != 2) return kGemmBadBuffers;
  if (g.pes < 1 || g.pes > h.pes_per_cube()) return kGemmBadPes;
  if (g.cubes < 1 || g.cubes > h.cubes_per_sip()) return kGemmBadCubes;
  if (g.split < kGemmSplitAuto || g.split > kGemmSplitColsK) return kGemmBadSplit;
  if (gemm_sram_bytes(g) > h.sram_bytes()) return kGemmSramOverflow;
  // Every cube holds A and B whole and its block of C's tile rows or columns.
  const GemmGrid grid = gemm_grid(g);
  const bool by_cols = gemm_split_by_cols(gemm_split_of(g));
  const std::int64_t c_rows = by_cols ? g.m : imin(g.m, ((grid.tiles_m + g.cubes - 1) / g.cubes) * g.tile_m);
  const std::int64_t c_cols = by_cols ? imin(g.n, ((grid.tiles_n + g.cubes - 1) / g.cubes) * g.tile_n) : g.n;
  if (2 * (g.m * g.k + g.k * g.n + c_rows * c_cols) > h.hbm_capacity_bytes()) return kGemmHbmOverflow;
  // One op's time must be representable: the largest transfer through the shared HBM
  // port, and the largest matmul (dimensions <= 2^20 and arrays <= 4096 keep the cycle
  // count itself below 2^61).
  const std::int64_t tile_bytes = 2 * imax(imax(g.tile_m * g.tile_k, g.tile_k * g.tile_n), g.tile_m * g.tile_n);
  if (tile_bytes > kTimeLimitPs / (kPsPerNs * g.pes)) return kGemmTimeOverflow;
  const std::int64_t cycles = systolic_cycles(g.tile_m, g.tile_n, g.tile_k, h.matrix_rows, h.matrix_cols, h.dataflow);
  if (cycles > kTimeLimitPs / 1000000) return kGemmTimeOverflow;
  return kGemmOk;
}

// Roofline: all used PEs computing at peak, and the compulsory traffic through the used
// cubes' HBM (each PE limited by its DMA rate). Closed-form bounds of the problem; both
// engines report them.
KB_HD inline void gemm_roofline(const GemmConfig& g, GemmResult& r) {
  const std::int64_t workers = g.pes * g.cubes;
  r.compute_roof_ps = cycles_ps(ceil_div(g.m * g.n * g.k, g.hw.matrix_rows * g.hw.matrix_cols * workers), g.hw.clock_mhz);
  const std::int64_t min_bytes = 2 * (g.m * g.k + g.k * g.n + g.m * g.n);
  r.hbm_roof_ps = transfer_ps(min_bytes, imin(g.cubes * g.hw.hbm_bandwidth_gbps, workers * g.hw.dma_gbps()));
  r.roofline_ps = imax(r.compute_roof_ps, r.hbm_roof_ps);
}

KB_HD inline GemmResult gemm_model(const GemmConfig& g) {
  using namespace gemm_detail;
  GemmResult r{};
  r.status = gemm_check(g);
  if (r.status != kGemmOk) return r;

  const GemmGrid grid = gemm_grid(g);
  const std::int64_t tm = grid.tiles_m, tn = grid.tiles_n, kt = grid.kt;
  const std::int64_t m_last = g.m - (tm - 1) * g.tile_m;
  const std::int64_t n_last = g.n - (tn - 1) * g.tile_n;
  const std::int64_t k_last = g.k - (kt - 1) * g.tile_k;
  const std::int64_t split = gemm_split_of(g);
  const bool by_cols = gemm_split_by_cols(split), split_k = gemm_split_k(split);
  // Work is handed out in whole tiles, or with split-K in k-slices of tiles ("units").
  const std::int64_t unit = split_k ? kt : 1;
  // A cube's PEs split its HBM bandwidth; only those with work access HBM, and a cube
  // with a block of `tiles` tiles gives work to min(pes, tiles · unit) of them.
  auto share_of = [&](std::int64_t tiles) { return imin(g.pes, tiles * unit); };
  // The tile kinds of the last HBM share asked for (cubes alike ask for the same one).
  std::int64_t kinds_share = -1;
  TileKinds kinds;  // set before any use (kinds_share starts unmatched)
  auto kinds_of = [&](std::int64_t tiles) -> const TileKinds& {
    if (share_of(tiles) != kinds_share) {
      kinds_share = share_of(tiles);
      kinds.set(g, Costs{&g, kt, k_last, g.hw.hbm_latency_ns * kPsPerNs, kinds_share}, m_last, n_last);
    }
    return kinds;
  };

  // Totals by counting, per cube: its tile rows (full ones, and the matrix's last row if it
  // holds it) and tile columns each come in a full and a last size, so a cube's schedule
  // holds at most four kinds of tile.
  ps_t bound = 0;  // every busy time plus every latency: an upper bound on any finish time
  // Cubes come in at most three kinds along the split dimension: the last (it holds the
  // matrix's last tile row or column), and among the others those with floor(T / cubes) + 1
  // rows or columns and those with floor(T / cubes). The other dimension is whole.
  auto add_cubes = [&](std::int64_t ncubes, std::int64_t rows, std::int64_t last_r, std::int64_t cols,
                       std::int64_t last_c) {
    if (ncubes <= 0 || rows <= 0 || cols <= 0) return;
    const TileKinds& tk = kinds_of(rows * cols);
    const std::int64_t mc[2] = {ncubes * (rows - last_r), ncubes * last_r};
    const std::int64_t nc[2] = {cols - last_c, last_c};
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) {
        const std::int64_t tiles = mc[a] * nc[b];
        if (tiles == 0) continue;
        const TileBlock& t = tk.at(a, b);
        r.mac_cycles = sat_add(r.mac_cycles, sat_mul(tiles, t.cycles));
        r.matrix_busy_ps = sat_add(r.matrix_busy_ps, sat_mul(tiles, t.busy.matrix));
        r.dma_busy_ps = sat_add(r.dma_busy_ps, sat_mul(tiles, t.busy.dma));
        bound = sat_add(bound, sat_mul(tiles, t.bound));
      }
  };
  {
    const std::int64_t total = grid.along(by_cols), other = grid.across(by_cols);
    // Blocks of `len` along the split dimension, `last`: whether they hold its last tile.
    auto add = [&](std::int64_t ncubes, std::int64_t len, std::int64_t last) {
      if (by_cols) add_cubes(ncubes, other, 1, len, last);
      else add_cubes(ncubes, len, last, other, 1);
    };
    const std::int64_t q = total / g.cubes, bigger = total % g.cubes;  // that many cubes have q + 1
    if (q >= 1 && q * other * unit >= g.pes) {
      add(1, total, 1);  // every cube gives work to all its PEs: one share for all, summed at once
    } else {
      const CubeTiles last = gemm_cube_tiles(tm, tn, g.cubes, split, g.cubes - 1);  // never empty: it ends at T
      const std::int64_t last_len = by_cols ? last.cols() : last.rows();
      const std::int64_t others_bigger = bigger - (last_len == q + 1 ? 1 : 0);
      add(1, last_len, 1);
      add(others_bigger, q + 1, 0);
      add(g.cubes - 1 - others_bigger, q, 0);
    }
  }
  bound = sat_add(bound, r.matrix_busy_ps);
  if (split_k) {  // at most one partial sent per PE, each copied, waited for and added
    const KCosts kc = k_costs(g, g.tile_m, g.tile_n);
    bound = sat_add(bound, sat_mul(g.pes * g.cubes, 2 * kc.copy + kc.lat + kc.add));
  }
  if (bound >= kTimeLimitPs || r.mac_cycles >= kTimeLimitPs) {
    r = GemmResult{};  // an invalid config's result is its status
    r.status = kGemmTimeOverflow;
    return r;
  }
  r.macs = g.m * g.n * g.k;
  r.hbm_read_bytes = 2 * (tn * g.m * g.k + tm * g.n * g.k);
  r.hbm_write_bytes = 2 * g.m * g.n;
  r.ops = tm * tn * (3 * kt + 1);

  // A PE's schedule depends only on the shape of its tile range (where it starts in a tile
  // row, how many tiles), unless the range reaches a ragged last tile row; and the ranges
  // inside a cube depend only on its block's shape. So cubes alike share one evaluation,
  // and inside a cube PEs alike share one walk.
  const bool ragged_m = m_last != g.tile_m, ragged_n = n_last != g.tile_n;
  std::int64_t seen_rows = -1, seen_cols = -1;
  Busy cube_busy{0, 0};
  ps_t cube_latency = 0;
  std::int64_t cube_sends = 0, sends = 0;
  // The cubes' blocks of gemm_cube_tiles, walked.
  EvenSplit blocks(grid.along(by_cols), g.cubes);
  for (std::int64_t cube = 0; cube < g.cubes; ++cube) {
    const Span b = blocks.next();
    const CubeTiles ct = by_cols ? CubeTiles{0, tm, b.lo, b.hi} : CubeTiles{b.lo, b.hi, 0, tn};
    if (ct.rows() <= 0 || ct.cols() <= 0) continue;
    const bool has_last_row = ct.r1 == tm, has_last_col = ct.c1 == tn;
    if (ct.rows() != seen_rows || ct.cols() != seen_cols) {
      const std::int64_t w = ct.cols();
      // (Tiles of the last row or column that are not ragged are regular ones.)
      const BlockShape blk{w, has_last_row && ragged_m ? ct.rows() - 1 : -1, has_last_col && ragged_n ? w - 1 : -1};
      const TileKinds& tk = kinds_of(ct.rows() * w);
      cube_busy = Busy{0, 0};
      cube_latency = 0;
      if (split_k) {
        const KBlock kb = k_block(g, tk, ct.rows() * w, kt, blk);
        cube_latency = kb.latency;
        cube_busy = kb.busiest;
        cube_sends = kb.sends;
      }
      std::int64_t seen_col = -1, seen_len = -1;
      Memo2 rows;
      rows.clear();
      ps_t latency = 0;
      Busy busy{0, 0};
      // The PEs' ranges [lo, hi) of gemm_tiles_of, walked; and the row and column of lo and
      // of hi - 1, advanced by a range's length (q or q + 1 tiles, whose rows and columns are
      // divided out once).
      EvenSplit ranges(ct.rows() * w, g.pes);
      const std::int64_t q = ranges.per;
      const std::int64_t span_rows[2] = {(q - 1) / w, q / w}, span_cols[2] = {(q - 1) % w, q % w};
      std::int64_t lo_row = 0, lo_col = 0;
      for (std::int64_t pe = 0; pe < (split_k ? 0 : g.pes); ++pe) {
        const Span t = ranges.next();
        const std::int64_t lo = t.lo, hi = t.hi, len = hi - lo;
        const int longer = len > q ? 1 : 0;
        if (len == 0) continue;
        std::int64_t end_row = lo_row + span_rows[longer], end_col = lo_col + span_cols[longer];  // of hi - 1
        if (end_col >= w) end_col -= w, ++end_row;
        // Where a range starts matters only when the block has a ragged last column and the
        // range spans rows or reaches that column. A range that reaches a ragged last row
        // is walked unless it matches the previous PE's, whose result it may then take:
        // its own is no larger (a ragged tile's every transfer and matmul is no longer, and
        // the recurrence is monotone), and only the largest over the PEs is kept. The PE
        // after it is always walked.
        const bool one_row = lo_row == end_row, at_edge = end_col == w - 1;
        const std::int64_t col = (one_row && !at_edge) || blk.last_col < 0 ? 0 : lo_col;
        if (col != seen_col || len != seen_len) {
          busy = Busy{0, 0};
          latency = worker_latency(g, tk, RowSpan{lo_row, lo_col, end_row, end_col}, blk, len, rows, busy);
          seen_col = blk.last_row >= 0 && end_row == blk.last_row ? -1 : col;
          seen_len = len;
        }
        cube_latency = imax(cube_latency, latency);
        cube_busy.matrix = imax(cube_busy.matrix, busy.matrix);
        cube_busy.dma = imax(cube_busy.dma, busy.dma);
        lo_row = end_row, lo_col = end_col + 1;
        if (lo_col == w) lo_col = 0, ++lo_row;
      }
      // A block that holds the ragged last tiles along the split dimension is unlike the
      // blocks after it (every block holds the other dimension's last tile alike).
      const bool unlike = by_cols ? ragged_n && has_last_col : ragged_m && has_last_row;
      seen_rows = unlike ? -1 : ct.rows();
      seen_cols = unlike ? -1 : ct.cols();
    }
    r.latency_ps = imax(r.latency_ps, cube_latency);
    sends += cube_sends;
    r.max_pe_matrix_busy_ps = imax(r.max_pe_matrix_busy_ps, cube_busy.matrix);
    r.max_pe_dma_busy_ps = imax(r.max_pe_dma_busy_ps, cube_busy.dma);
  }
  // A partial sum sent is a copy over two ports, the receiver's signal and wait, and an add.
  r.ops += 5 * sends;

  gemm_roofline(g, r);
  return r;
}

// Resolves the automatic split (gemm_split_of), when the shape and tiling are defined.
KB_HD inline void gemm_resolve_split(GemmConfig& c) { c.split = gemm_split_of(c); }

// Resolves automatic (0) tiles: min(kGemmAutoTile, the matrix dimension); then the split.
KB_HD inline void gemm_complete(GemmConfig& c) {
  if (c.tile_m == 0) c.tile_m = c.m < kGemmAutoTile ? c.m : kGemmAutoTile;
  if (c.tile_n == 0) c.tile_n = c.n < kGemmAutoTile ? c.n : kGemmAutoTile;
  if (c.tile_k == 0) c.tile_k = c.k < kGemmAutoTile ? c.k : kGemmAutoTile;
  gemm_resolve_split(c);
}

// The family as the generic sweep engine sees it (src/device/sweep/).
struct GemmModel {
  using Config = GemmConfig;
  using Result = GemmResult;
  static constexpr int kStatuses = kGemmStatusCount;
  KB_HD static void complete(Config& c) { gemm_complete(c); }
  KB_HD static Result evaluate(const Config& c) { return gemm_model(c); }
  // Pareto cost `kind` (GemmCost) of a valid config.
  KB_HD static std::int64_t cost(std::int32_t kind, const Config& c, const Result& r) {
    switch (kind) {
      case kGemmCostPes: return c.pes * c.cubes;
      case kGemmCostSram: return gemm_sram_bytes(c);
      case kGemmCostHbm: return r.hbm_read_bytes + r.hbm_write_bytes;
      default: return 0;
    }
  }
};

}  // namespace kb
