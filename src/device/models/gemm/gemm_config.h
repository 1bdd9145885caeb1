// The GEMM family's config and result, its statuses, the tile grid and how output tiles are
// split over cubes and PEs (gemm_tiles_of), the SRAM a PE needs, the validity check and the
// roofline: everything both engines share before any timing (the model: gemm_model.h).
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "../systolic.h"
#include "../vector.h"

namespace kb {

constexpr std::int64_t kGemmMaxDim = INT64_C(1) << 20;

// Every field is an int64 (sweep axes set fields by offset). A tile of 0 means automatic:
// chosen with the split by least estimated latency (gemm_auto.h), resolved by gemm_complete.
struct GemmConfig {
  HwConfig hw;
  // problem and schedule
  std::int64_t m, n, k;
  std::int64_t tile_m, tile_n, tile_k;
  std::int64_t pes;    // PEs per cube
  std::int64_t cubes;  // cubes of SIP 0
  std::int64_t buffers;  // 1 or 2 SRAM buffer sets
  std::int64_t split;    // GemmSplit: how output tiles go to cubes
  std::int64_t b_bytes;  // bytes of a B value: 2 (fp16; 0 means 2) or 1 (8-bit weights, multiplied as fp16)
};
// Bytes of an A value (fp16) and of a B value (b_bytes; 0 stands for the fp16 default).
constexpr std::int64_t kGemmABytes = 2;
KB_HD constexpr std::int64_t gemm_b_bytes(const GemmConfig& c) { return c.b_bytes == 1 ? 1 : 2; }
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
  X(kGemmBadBuffers, "bad_buffers")            /* buffers not 1 or 2, or b_bytes not 0..2 */   \
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
  // Counted actions beyond MACs and HBM bytes (docs/model.md section 14): split-K's adds and
  // partial sums over the copy queues, and every PE's SRAM traffic.
  std::int64_t vector_ops, sram_read_bytes, sram_write_bytes, link_bytes_pe;
};

// Bytes of SRAM one PE needs for its tiles: `buffers` sets of an A tile (fp16), a B tile
// (b_bytes a value) and a C accumulator (fp32).
KB_HD constexpr std::int64_t gemm_tile_sram_bytes(const GemmConfig& c) {
  return c.buffers * (kGemmABytes * c.tile_m * c.tile_k + gemm_b_bytes(c) * c.tile_k * c.tile_n + 4 * c.tile_m * c.tile_n);
}

// The tile grid: tile rows, tile columns, k-slices per tile.
struct GemmGrid {
  std::int64_t tiles_m, tiles_n, kt;
  // Tiles along the dimension split over cubes, and across it.
  KB_HD std::int64_t along(bool by_cols) const { return by_cols ? tiles_n : tiles_m; }
  KB_HD std::int64_t across(bool by_cols) const { return by_cols ? tiles_m : tiles_n; }
};
KB_HD inline GemmGrid gemm_grid(const GemmConfig& c) {
  return GemmGrid{ceil_div(c.m, c.tile_m), ceil_div(c.n, c.tile_n), ceil_div(c.k, c.tile_k)};
}

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
  const std::int64_t shortest = imax(1, div_fast(g.along(by_cols), c.cubes));
  const std::int64_t least = div_fast(shortest * g.across(by_cols) * g.kt, c.pes);  // units per PE in the smallest block
  std::int64_t senders = imin(c.pes - 1, g.kt - 1);
  if (least >= 1) senders = imin(senders, ceil_div(g.kt - 1, least));
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
  const std::int64_t largest = ceil_div(g.along(by_cols), c.cubes) * g.across(by_cols);  // tiles of the largest block
  const std::int64_t whole = ceil_div(largest, c.pes) * g.kt, split = ceil_div(largest * g.kt, c.pes);
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

// The checks of the config's status that do not depend on its tiling: the machine, buffers,
// B's bytes, PEs, cubes and the split's range (gemm_check, after the shape and tiles).
KB_HD inline std::int32_t gemm_check_machine(const GemmConfig& g) {
  const HwConfig& h = g.hw;
  if (!hw_fits(h)) return kGemmBadHardware;
  if (g.buffers != 1 && g.buffers != 2) return kGemmBadBuffers;
  if (g.b_bytes < 0 || g.b_bytes > 2) return kGemmBadBuffers;
  if (g.pes < 1 || g.pes > h.pes_per_cube()) return kGemmBadPes;
  if (g.cubes < 1 || g.cubes > h.cubes_per_sip()) return kGemmBadCubes;
  if (g.split < kGemmSplitAuto || g.split > kGemmSplitColsK) return kGemmBadSplit;
  return kGemmOk;
}

// The rest of the status, of a config whose shape and tiles are in range and that passes
// gemm_check_machine: what the tiling needs of SRAM, HBM and the time limit. A search over
// tilings of one machine checks it once and each tiling with this.
KB_HD inline std::int32_t gemm_check_tiling(const GemmConfig& g, GemmGrid* grid_out = nullptr) {
  const HwConfig& h = g.hw;
  if (gemm_sram_bytes(g) > h.sram_bytes()) return kGemmSramOverflow;
  // Every cube holds A and B whole and its block of C's tile rows or columns.
  const GemmGrid grid = gemm_grid(g);
  if (grid_out) *grid_out = grid;
  const bool by_cols = gemm_split_by_cols(gemm_split_of(g));
  const std::int64_t c_rows = by_cols ? g.m : imin(g.m, ceil_div(grid.tiles_m, g.cubes) * g.tile_m);
  const std::int64_t c_cols = by_cols ? imin(g.n, ceil_div(grid.tiles_n, g.cubes) * g.tile_n) : g.n;
  if (kGemmABytes * (g.m * g.k + c_rows * c_cols) + gemm_b_bytes(g) * g.k * g.n > h.hbm_capacity_bytes())
    return kGemmHbmOverflow;
  // One op's time must be representable: the largest transfer through the shared HBM
  // port, and the largest matmul (dimensions <= 2^20 and arrays <= 4096 keep the cycle
  // count itself below 2^61).
  const std::int64_t tile_bytes = 2 * imax(imax(g.tile_m * g.tile_k, g.tile_k * g.tile_n), g.tile_m * g.tile_n);
  if (over_limit(tile_bytes, kPsPerNs * g.pes * h.tenants())) return kGemmTimeOverflow;
  const std::int64_t cycles = systolic_cycles(g.tile_m, g.tile_n, g.tile_k, h.matrix_rows, h.matrix_cols, h.dataflow);
  if (cycles > kTimeLimitPs / 1000000) return kGemmTimeOverflow;
  return kGemmOk;
}

// The config's status (kGemmOk: valid). `grid_out`, where the check gets that far, receives
// the tile grid (the model evaluates with it).
KB_HD inline std::int32_t gemm_check(const GemmConfig& g, GemmGrid* grid_out = nullptr) {
  if (g.m < 1 || g.n < 1 || g.k < 1 || g.m > kGemmMaxDim || g.n > kGemmMaxDim || g.k > kGemmMaxDim)
    return kGemmBadShape;
  if (g.tile_m < 1 || g.tile_n < 1 || g.tile_k < 1 || g.tile_m > g.m || g.tile_n > g.n || g.tile_k > g.k)
    return kGemmBadTile;
  const std::int32_t machine = gemm_check_machine(g);
  if (machine != kGemmOk) return machine;
  return gemm_check_tiling(g, grid_out);
}

// Roofline: all used PEs computing at peak, and the compulsory traffic through the used
// cubes' HBM (each PE limited by its DMA rate). Closed-form bounds of the problem; both
// engines report them.
KB_HD inline void gemm_roofline(const GemmConfig& g, GemmResult& r) {
  const std::int64_t workers = g.pes * g.cubes;
  r.compute_roof_ps = cycles_ps(ceil_div(g.m * g.n * g.k, g.hw.matrix_rows * g.hw.matrix_cols * workers), g.hw.clock_mhz);
  const std::int64_t min_bytes = kGemmABytes * (g.m * g.k + g.m * g.n) + gemm_b_bytes(g) * g.k * g.n;
  r.hbm_roof_ps = transfer_ps(min_bytes, imin(g.cubes * g.hw.hbm_bandwidth_gbps, workers * g.hw.dma_gbps()));
  r.roofline_ps = imax(r.compute_roof_ps, r.hbm_roof_ps);
}

}  // namespace kb
