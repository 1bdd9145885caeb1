// Batched GEMM model: from a compact config, the latency and resource totals of the tile
// schedule that the reference GEMM kernel (src/host/kernels/gemm.cpp) issues, without
// building a graph. Pure KB_HD code: no allocation, exceptions, virtual calls or recursion.
//
// The schedule of one PE is a max-plus recurrence over its steps (one step = one k-slice
// of one output tile) on two in-order resources, the PE's DMA queue and its matrix engine.
// Identical blocks of steps (k-slices of a tile, tiles of a row, rows of a PE's share) are
// applied until the state, taken relative to the DMA clock, repeats; from then on each
// block only adds a constant, so the rest of the run is one multiplication. The jump is
// exact because the step map is homogeneous: f(x + c) = f(x) + c.
#pragma once

#include <cstdint>

#include "../common/hw.h"
#include "../common/kb_hd.h"
#include "../common/units.h"
#include "systolic.h"

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
// columns (cols); auto takes cols when there are fewer tile rows than cubes and more tile
// columns than rows (a skinny GEMM, e.g. decode), rows otherwise.
enum GemmSplit : std::int32_t { kGemmSplitAuto = 0, kGemmSplitRows, kGemmSplitCols };
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
  X(kGemmBadSplit, "bad_split")                /* split not auto, rows or cols */

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

// Bytes of SRAM one PE needs: `buffers` sets of an A tile, a B tile (fp16) and a C
// accumulator (fp32).
KB_HD constexpr std::int64_t gemm_sram_bytes(const GemmConfig& c) {
  return c.buffers * (2 * (c.tile_m * c.tile_k + c.tile_k * c.tile_n) + 4 * c.tile_m * c.tile_n);
}

KB_HD inline std::int64_t gemm_split_of(std::int64_t split, std::int64_t tiles_m, std::int64_t tiles_n,
                                        std::int64_t cubes) {
  if (split == kGemmSplitRows || split == kGemmSplitCols) return split;
  return tiles_m < cubes && tiles_n > tiles_m ? kGemmSplitCols : kGemmSplitRows;
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
  if (split == kGemmSplitCols) return CubeTiles{0, tiles_m, cube * tiles_n / cubes, (cube + 1) * tiles_n / cubes};
  return CubeTiles{cube * tiles_m / cubes, (cube + 1) * tiles_m / cubes, 0, tiles_n};
}
// A PE's tiles as indices into its cube's block, row-major: tile t is (r0 + t / cols,
// c0 + t % cols).
KB_HD inline TileRange gemm_tiles_of(const CubeTiles& b, std::int64_t pes, std::int64_t pe) {
  const std::int64_t count = b.rows() * b.cols();
  return TileRange{pe * count / pes, (pe + 1) * count / pes};
}

namespace gemm_detail {


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

KB_HD inline void finish(Pipe& p, const Ctx& c) {
  if (c.buffers == 2 && p.st2 >= 0) p.dfree = imax(p.dfree, p.mm2) + p.st2;
  if (p.st1 >= 0) p.dfree = imax(p.dfree, p.mm1) + p.st1;
}

KB_HD inline bool same_shape(const Pipe& a, const Pipe& b) {
  return a.mm1 - a.dfree == b.mm1 - b.dfree && a.mm2 - a.dfree == b.mm2 - b.dfree && a.st1 == b.st1 &&
         a.st2 == b.st2;
}

KB_HD inline void shift(Pipe& p, ps_t d) {
  p.dfree += d;
  p.mm1 += d;
  p.mm2 += d;
}

// Applies `block` `count` times, jumping once the state repeats with period 1 or 2.
template <class Block>
KB_HD void repeat(Pipe& p, std::int64_t count, const Block& block, const Ctx& c) {
  Pipe prev1 = p, prev2 = p;
  for (std::int64_t i = 0; i < count; ++i) {
    block(p, c);
    const std::int64_t rest = count - 1 - i;
    if (rest == 0) return;
    if (i >= 1 && same_shape(p, prev1)) {
      shift(p, rest * (p.dfree - prev1.dfree));
      return;
    }
    if (i >= 2 && same_shape(p, prev2)) {
      shift(p, (rest / 2) * (p.dfree - prev2.dfree));
      if (rest % 2) block(p, c);
      return;
    }
    prev2 = prev1;
    prev1 = p;
  }
}

struct StepBlock {
  Step s;
  KB_HD void operator()(Pipe& p, const Ctx& c) const { apply_step(p, s, c); }
};

// One output tile: kt-1 full k-slices, then the last (possibly ragged) one with the store.
struct TileBlock {
  Step body, last;
  std::int64_t kt;
  KB_HD void operator()(Pipe& p, const Ctx& c) const {
    repeat(p, kt - 1, StepBlock{body}, c);
    apply_step(p, last, c);
  }
};

// A run of tiles in one tile row: `regular` full-width tiles, then maybe the ragged one.
struct RowBlock {
  TileBlock regular, edge;
  std::int64_t nregular;
  bool has_edge;
  KB_HD void operator()(Pipe& p, const Ctx& c) const {
    repeat(p, nregular, regular, c);
    if (has_edge) edge(p, c);
  }
};

struct Costs {
  const GemmConfig* g;
  std::int64_t kt, k_last;
  std::int64_t sharers;  // PEs of the cube that access its HBM: those with at least one tile
  KB_HD ps_t xfer(std::int64_t bytes) const {
    return shared_transfer_ps(bytes, g->hw.dma_gbps(), g->hw.hbm_bandwidth_gbps, sharers);
  }
  KB_HD std::int64_t cycles(std::int64_t mi, std::int64_t nj, std::int64_t kc) const {
    return systolic_cycles(mi, nj, kc, g->hw.matrix_rows, g->hw.matrix_cols, g->hw.dataflow);
  }
  // A step of `cyc` matrix-engine cycles.
  KB_HD Step step(std::int64_t mi, std::int64_t nj, std::int64_t kc, bool last, std::int64_t cyc) const {
    Step s;
    s.load = xfer(2 * mi * kc) + xfer(2 * kc * nj);
    s.mm = cycles_ps(cyc, g->hw.clock_mhz);
    s.store = last ? xfer(2 * mi * nj) : -1;
    return s;
  }
};

// The four tiles of a cube's schedule, by (last tile row?, last tile column?), and the
// matrix-engine cycles of their full and last k-slices: computed once per HBM share (the
// number of PEs a cube's block keeps busy) for the totals and the walks alike, rather than
// per run of tiles (the divisions in the transfer and cycle helpers dominated the model).
struct TileKinds {
  TileBlock t[2][2];
  std::int64_t cycles[2][2][2];  // [last row][last column][last k-slice]
  KB_HD static TileKinds of(const GemmConfig& g, const Costs& cost, std::int64_t m_last, std::int64_t n_last) {
    TileKinds k;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) {
        const std::int64_t mi = a ? m_last : g.tile_m, nj = b ? n_last : g.tile_n;
        k.cycles[a][b][0] = cost.cycles(mi, nj, g.tile_k);
        k.cycles[a][b][1] = cost.cycles(mi, nj, cost.k_last);
        k.t[a][b] = TileBlock{cost.step(mi, nj, g.tile_k, false, k.cycles[a][b][0]),
                              cost.step(mi, nj, cost.k_last, true, k.cycles[a][b][1]), cost.kt};
      }
    return k;
  }
};

// A PE's tiles [lo, hi) in row-major order are: part of a first tile row, some whole
// middle rows (all alike, never the ragged last row of the matrix), and part of a last
// row. Calls visit(count, row, j0, j1) for each such run of `count` identical rows
// covering tile columns j0..j1.
template <class Visit>
KB_HD void for_each_row_run(std::int64_t lo, std::int64_t hi, std::int64_t tiles_n, Visit&& visit) {
  const std::int64_t first_row = lo / tiles_n, last_row = (hi - 1) / tiles_n;
  if (first_row == last_row) {
    visit(std::int64_t{1}, first_row, lo % tiles_n, (hi - 1) % tiles_n);
    return;
  }
  visit(std::int64_t{1}, first_row, lo % tiles_n, tiles_n - 1);
  if (last_row - first_row > 1) visit(last_row - first_row - 1, first_row + 1, std::int64_t{0}, tiles_n - 1);
  visit(std::int64_t{1}, last_row, std::int64_t{0}, (hi - 1) % tiles_n);
}

struct Busy {
  ps_t matrix, dma;
};

// A cube's block as a PE's walk sees it: `width` tile columns; the local row that is the
// matrix's last tile row and the local column that is its last tile column (-1: not in
// this block), where tiles may be ragged.
struct BlockShape {
  std::int64_t width, last_row, last_col;
};

// Busy times of one PE that computes tiles [lo, hi) of its cube's block, by counting its
// tiles of each size.
KB_HD inline Busy worker_busy(const TileKinds& tk, std::int64_t lo, std::int64_t hi, const BlockShape& blk) {
  Busy b{0, 0};
  auto add_tiles = [&](std::int64_t count, const TileBlock& t) {
    b.matrix += count * ((t.kt - 1) * t.body.mm + t.last.mm);
    b.dma += count * ((t.kt - 1) * t.body.load + t.last.load + t.last.store);
  };
  auto add_row = [&](std::int64_t count, std::int64_t i, std::int64_t j0, std::int64_t j1) {
    const int last = i == blk.last_row;
    const bool edge = j1 == blk.last_col;
    add_tiles(count * (j1 - j0 + (edge ? 0 : 1)), tk.t[last][0]);
    if (edge) add_tiles(count, tk.t[last][1]);
  };
  for_each_row_run(lo, hi, blk.width, add_row);
  return b;
}

// Finish time of one PE that computes tiles [lo, hi) of its cube's block.
KB_HD inline ps_t worker_latency(const GemmConfig& g, const TileKinds& tk, std::int64_t lo, std::int64_t hi,
                                 const BlockShape& blk) {
  const Ctx c{g.buffers, g.hw.hbm_latency_ns * kPsPerNs};
  Pipe p{0, 0, 0, -1, -1};
  // Only the last tile row of the matrix can be ragged in m, and its last column in n.
  auto row = [&](std::int64_t i, std::int64_t j0, std::int64_t j1) {
    const int last = i == blk.last_row;
    RowBlock rb;
    rb.regular = tk.t[last][0];
    rb.edge = tk.t[last][1];
    rb.has_edge = j1 == blk.last_col;
    rb.nregular = j1 - j0 + (rb.has_edge ? 0 : 1);
    return rb;
  };
  for_each_row_run(lo, hi, blk.width, [&](std::int64_t count, std::int64_t i, std::int64_t j0, std::int64_t j1) {
    if (count == 1) row(i, j0, j1)(p, c);
    else repeat(p, count, row(i, j0, j1), c);
  });
  finish(p, c);
  return p.dfree + c.hbm_lat;
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
      h.hbm_capacity_mib > kMaxCapacity || h.sips < 1 || h.sips > kMaxSips || !hw_fits(h))
    return kGemmBadHardware;
  if (g.buffers != 1 && g.buffers != 2) return kGemmBadBuffers;
  if (g.pes < 1 || g.pes > h.pes_per_cube()) return kGemmBadPes;
  if (g.cubes < 1 || g.cubes > h.cubes_per_sip()) return kGemmBadCubes;
  if (gemm_sram_bytes(g) > h.sram_bytes()) return kGemmSramOverflow;
  if (g.split < kGemmSplitAuto || g.split > kGemmSplitCols) return kGemmBadSplit;
  // Every cube holds A and B whole and its block of C's tile rows or columns.
  const std::int64_t tiles_m = (g.m + g.tile_m - 1) / g.tile_m, tiles_n = (g.n + g.tile_n - 1) / g.tile_n;
  const bool by_cols = gemm_split_of(g.split, tiles_m, tiles_n, g.cubes) == kGemmSplitCols;
  const std::int64_t c_rows = by_cols ? g.m : imin(g.m, ((tiles_m + g.cubes - 1) / g.cubes) * g.tile_m);
  const std::int64_t c_cols = by_cols ? imin(g.n, ((tiles_n + g.cubes - 1) / g.cubes) * g.tile_n) : g.n;
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

  const std::int64_t tm = (g.m + g.tile_m - 1) / g.tile_m;
  const std::int64_t tn = (g.n + g.tile_n - 1) / g.tile_n;
  const std::int64_t kt = (g.k + g.tile_k - 1) / g.tile_k;
  const std::int64_t m_last = g.m - (tm - 1) * g.tile_m;
  const std::int64_t n_last = g.n - (tn - 1) * g.tile_n;
  const std::int64_t k_last = g.k - (kt - 1) * g.tile_k;
  const std::int64_t split = gemm_split_of(g.split, tm, tn, g.cubes);
  // A cube's PEs split its HBM bandwidth; only those with tiles access HBM, and a cube
  // with a block of `tiles` tiles gives a tile to min(pes, tiles) of them.
  auto cost_of = [&](std::int64_t tiles) { return Costs{&g, kt, k_last, imin(g.pes, tiles)}; };
  // The tile kinds of the last HBM share asked for (cubes alike ask for the same one).
  std::int64_t kinds_share = -1;
  TileKinds kinds{};
  auto kinds_of = [&](std::int64_t tiles) -> const TileKinds& {
    if (imin(g.pes, tiles) != kinds_share) {
      kinds = TileKinds::of(g, cost_of(tiles), m_last, n_last);
      kinds_share = imin(g.pes, tiles);
    }
    return kinds;
  };

  // Totals by counting, per cube: its tile rows (full ones, and the matrix's last row if it
  // holds it), tile columns and k-slices each come in a full and a last size, so a cube's
  // schedule holds at most eight kinds of step.
  const std::int64_t kc[2] = {kt - 1, 1};
  ps_t bound = 0;  // every busy time plus every latency: an upper bound on any finish time
  const ps_t lat = g.hw.hbm_latency_ns * kPsPerNs;
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
        const TileBlock& t = tk.t[a][b];
        const ps_t st = t.last.store;
        r.dma_busy_ps = sat_add(r.dma_busy_ps, sat_mul(tiles, st));
        bound = sat_add(bound, sat_mul(tiles, st + lat));
        for (int q = 0; q < 2; ++q) {
          const std::int64_t steps = tiles * kc[q];
          if (steps == 0) continue;
          const Step& s = q ? t.last : t.body;
          r.mac_cycles = sat_add(r.mac_cycles, sat_mul(steps, tk.cycles[a][b][q]));
          r.matrix_busy_ps = sat_add(r.matrix_busy_ps, sat_mul(steps, s.mm));
          r.dma_busy_ps = sat_add(r.dma_busy_ps, sat_mul(steps, s.load));
          bound = sat_add(bound, sat_mul(steps, s.load + 2 * lat));
        }
      }
  };
  {
    const bool by_cols = split == kGemmSplitCols;
    const std::int64_t total = by_cols ? tn : tm, other = by_cols ? tm : tn;
    // Blocks of `len` along the split dimension, `last`: whether they hold its last tile.
    auto add = [&](std::int64_t ncubes, std::int64_t len, std::int64_t last) {
      if (by_cols) add_cubes(ncubes, other, 1, len, last);
      else add_cubes(ncubes, len, last, other, 1);
    };
    const std::int64_t q = total / g.cubes, bigger = total % g.cubes;  // that many cubes have q + 1
    if (q >= 1 && q * other >= g.pes) {
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
  if (bound >= kTimeLimitPs || r.mac_cycles >= kTimeLimitPs) {
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
  for (std::int64_t cube = 0; cube < g.cubes; ++cube) {
    const CubeTiles ct = gemm_cube_tiles(tm, tn, g.cubes, split, cube);
    if (ct.rows() <= 0 || ct.cols() <= 0) continue;
    const bool has_last_row = ct.r1 == tm, has_last_col = ct.c1 == tn;
    if (ct.rows() != seen_rows || ct.cols() != seen_cols) {
      const std::int64_t w = ct.cols();
      const BlockShape blk{w, has_last_row ? ct.rows() - 1 : -1, has_last_col ? w - 1 : -1};
      const TileKinds& tk = kinds_of(ct.rows() * w);
      cube_busy = Busy{0, 0};
      cube_latency = 0;
      std::int64_t seen_col = -1, seen_len = -1;
      ps_t latency = 0;
      Busy busy{0, 0};
      for (std::int64_t pe = 0; pe < g.pes; ++pe) {
        const TileRange t = gemm_tiles_of(ct, g.pes, pe);
        if (t.hi <= t.lo) continue;
        // Where a range starts matters only when it spans rows or reaches the block's last column.
        const bool one_row = t.lo / w == (t.hi - 1) / w, at_edge = (t.hi - 1) % w == w - 1;
        const std::int64_t col = one_row && !at_edge ? 0 : t.lo % w, len = t.hi - t.lo;
        if (col != seen_col || len != seen_len) {
          latency = worker_latency(g, tk, t.lo, t.hi, blk);
          busy = worker_busy(tk, t.lo, t.hi, blk);
          seen_col = ragged_m && blk.last_row >= 0 && (t.hi - 1) / w == blk.last_row ? -1 : col;
          seen_len = len;
        }
        cube_latency = imax(cube_latency, latency);
        cube_busy.matrix = imax(cube_busy.matrix, busy.matrix);
        cube_busy.dma = imax(cube_busy.dma, busy.dma);
      }
      // A block that holds the ragged last tiles along the split dimension is unlike the
      // blocks after it (every block holds the other dimension's last tile alike).
      const bool unlike = split == kGemmSplitCols ? ragged_n && has_last_col : ragged_m && has_last_row;
      seen_rows = unlike ? -1 : ct.rows();
      seen_cols = unlike ? -1 : ct.cols();
    }
    r.latency_ps = imax(r.latency_ps, cube_latency);
    r.max_pe_matrix_busy_ps = imax(r.max_pe_matrix_busy_ps, cube_busy.matrix);
    r.max_pe_dma_busy_ps = imax(r.max_pe_dma_busy_ps, cube_busy.dma);
  }

  gemm_roofline(g, r);
  return r;
}

// Resolves the automatic split from the tile grid (gemm_split_of), when the grid is defined.
KB_HD inline void gemm_resolve_split(GemmConfig& c) {
  if (c.split == kGemmSplitAuto && c.m >= 1 && c.n >= 1 && c.tile_m >= 1 && c.tile_n >= 1 && c.cubes >= 1)
    c.split = gemm_split_of(c.split, (c.m + c.tile_m - 1) / c.tile_m, (c.n + c.tile_n - 1) / c.tile_n, c.cubes);
}

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
