// The automatic tiling of a GEMM (docs/model.md section 9.7): of the gemm family's tilings
// (gemm_tune.h's space), the one of least estimated latency, where the estimate is the
// schedule of the busiest PE of the largest cube block as if every tile were a full one:
// its tile count (or, with split-K, its share of k-slices) run through the PE's pipeline
// recurrence (gemm_pipeline.h), plus one partial sum's reduction with split-K. It leaves out
// ragged edge tiles, the other PEs, and the other cubes, so it is a closed form per tiling
// with no walk of a cube's block. Over the GEMMs of the shipped models' steps it lands within
// 5 % of the best tiling on more than 95 % of shapes (tests/unit/test_gemm_tune.cpp).
#pragma once

#include <cstdint>

#include "../../common/kb_hd.h"
#include "gemm_pipeline.h"

namespace kb {

// The candidate tiles: tile_m and tile_n powers of two in 32..512, tile_k in 32..4096, each
// below its matrix dimension, or the dimension itself where that is at most the bound (a
// GEMM of m = 8 tiles m by 8; one of k = 100 has tile_k 32, 64 or 100).
constexpr std::int64_t kGemmTuneTileMin = 32, kGemmTuneTileMax = 512, kGemmTuneTileKMax = 4096;

namespace gemm_tune_detail {

// The candidates of one tile dimension, in ascending order: the one after `v` (0: the
// first), or 0 after the last.
KB_HD inline std::int64_t next_tile(std::int64_t v, std::int64_t dim, std::int64_t hi) {
  const std::int64_t last = dim < hi ? dim : hi;
  if (v == 0) return kGemmTuneTileMin < last ? kGemmTuneTileMin : last;
  if (v >= last) return 0;
  const std::int64_t up = 2 * v;
  return up < last ? up : last;
}

// The candidates of a tile field: every one above when it is automatic (0), else its value.
KB_HD inline std::int64_t next_field(std::int64_t set, std::int64_t v, std::int64_t dim, std::int64_t hi) {
  if (set != 0) return v == 0 ? set : 0;
  return next_tile(v, dim, hi);
}

}  // namespace gemm_tune_detail

// The estimated latency of a valid config whose tiles and split are set (see the top of
// the file), or -1 when a time of the estimate could pass the time limit, or -2 when it is
// at least `above` (>= 0; < 0: no bound asked for) by a bound found without the recurrence:
// the PE's DMA work or its matrix work, each served one at a time.
KB_HD inline ps_t gemm_estimate(const GemmConfig& g, ps_t above = -1) {
  using namespace gemm_detail;
  const GemmGrid grid = gemm_grid(g);
  const bool by_cols = gemm_split_by_cols(g.split), split_k = gemm_split_k(g.split);
  const std::int64_t block = ceil_div(grid.along(by_cols), g.cubes) * grid.across(by_cols);  // the largest
  const std::int64_t unit = split_k ? grid.kt : 1;
  const Costs cost{&g, grid.kt, g.k - (grid.kt - 1) * g.tile_k, g.hw.hbm_latency_ns * kPsPerNs,
                   imin(g.pes, block * unit) * g.hw.tenants()};
  TileBlock t;
  t.memo.clear();
  t.body = full_slice(g, cost, g.tile_k);
  t.last = cost.k_last != g.tile_k ? full_slice(g, cost, cost.k_last) : t.body;
  t.last.store = cost.xfer(2 * g.tile_m * g.tile_n);
  t.kt = grid.kt;
  // The busiest PE's k-slices: whole tiles, or with split-K an even share of the block's.
  const std::int64_t slices = split_k ? ceil_div(block * grid.kt, g.pes) : ceil_div(block, g.pes) * grid.kt;
  const ps_t per_slice = t.body.load + t.body.mm + t.last.store + 2 * cost.lat;
  if (over_limit(slices, per_slice)) return -1;
  const std::int64_t tiles = slices / grid.kt, rest = slices % grid.kt;
  if (above >= 0) {
    const ps_t dma = tiles * ((grid.kt - 1) * t.body.load + t.last.load + t.last.store) +
                     (rest ? rest * t.body.load + t.last.store : 0);
    const ps_t matrix = tiles * ((grid.kt - 1) * t.body.mm + t.last.mm) + rest * t.body.mm;
    if (imax(dma, matrix) >= above) return -2;
  }
  const Ctx ctx = ctx_of(g);
  Pipe p{0, 0, 0, -1, -1};
  t.run(p, tiles, ctx);
  if (rest) walk_partial(p, ctx, t, 0, rest, true);
  finish(p, ctx);
  ps_t latency = p.dfree + cost.lat;
  if (split_k) {  // one partial sum copied in and added
    const KCosts k = k_costs(g, g.tile_m, g.tile_n);
    latency += k.copy + k.lat + k.add;
  }
  return latency;
}

namespace gemm_tune_detail {

// Whether any tiling of `c` may be valid: its shape in range, the tiles it sets in range of
// their dimensions, and its machine (gemm_check_machine), all checked once for a search.
KB_HD inline bool tiling_possible(const GemmConfig& c) {
  if (!(c.m >= 1 && c.n >= 1 && c.k >= 1 && c.m <= kGemmMaxDim && c.n <= kGemmMaxDim && c.k <= kGemmMaxDim)) return false;
  auto fits = [](std::int64_t tile, std::int64_t dim) { return tile == 0 || (tile >= 1 && tile <= dim); };
  if (!fits(c.tile_m, c.m) || !fits(c.tile_n, c.n) || !fits(c.tile_k, c.k)) return false;
  GemmConfig machine = c;
  if (machine.split == kGemmSplitAuto) machine.split = kGemmSplitRows;
  return gemm_check_machine(machine) == kGemmOk;
}

// One row of tile_k of gemm_choose_tiling (x's split, tile_m and tile_n set; `tile_k` the
// config's, 0: automatic), folded into the least estimate so far and its tiling. tile_k goes
// from the largest that fits the SRAM down, so the least estimate is usually met first and
// later ones skipped by their bound; of equal estimates the smaller tile_k is the earlier in
// the order.
KB_HD inline void choose_in_k_row(GemmConfig& x, std::int64_t tile_k, ps_t& least, GemmConfig& best) {
  std::int64_t ks[16], nk = 0;  // at most 8
  for (std::int64_t tk = next_field(tile_k, 0, x.k, kGemmTuneTileKMax); tk > 0 && nk < 16; tk = next_field(tile_k, tk, x.k, kGemmTuneTileKMax)) {
    x.tile_k = tk;
    if (gemm_tile_sram_bytes(x) > x.hw.sram_bytes()) break;  // nor any larger tile_k
    ks[nk++] = tk;
  }
  while (nk > 0) {
    x.tile_k = ks[--nk];
    if (gemm_check_tiling(x) != kGemmOk) continue;
    const ps_t t = gemm_estimate(x, least >= 0 ? least + 1 : -1);
    const bool same_row = least >= 0 && best.split == x.split && best.tile_m == x.tile_m && best.tile_n == x.tile_n;
    if (t >= 0 && (least < 0 || t < least || (t == least && same_row))) least = t, best = x;
  }
}

}  // namespace gemm_tune_detail

// Sets the automatic fields of `c`: tiles that are 0 and an automatic split (kGemmSplitAuto),
// to the tiling of least estimated latency among those valid with c's buffers (ties go to
// the first in the order split rows, cols, rows-k, cols-k, then tile_m, tile_n, tile_k
// ascending). When none is valid, the tiles become min(kGemmAutoTile, the dimension) and
// the split gemm_split_of's, whose status then says why. A config with every tile set keeps
// gemm_split_of's split. Not inlined: a sweep's kernel calls it only for automatic tiles, and
// inlined it doubled the registers of the gemm family's CUDA kernel (128 to 255).
KB_HD KB_NOINLINE inline void gemm_choose_tiling(GemmConfig& c) {
  using gemm_tune_detail::next_field;
  const bool any_split = c.split == kGemmSplitAuto;
  const std::int64_t s0 = any_split ? std::int64_t{kGemmSplitRows} : c.split;
  const std::int64_t s1 = any_split ? std::int64_t{kGemmSplitColsK} : c.split;
  GemmConfig x = c, best = c;
  ps_t least = -1;
  if (gemm_tune_detail::tiling_possible(c)) {
    for (std::int64_t split = s0; split <= s1; ++split)
      for (std::int64_t tm = next_field(c.tile_m, 0, c.m, kGemmTuneTileMax); tm > 0; tm = next_field(c.tile_m, tm, c.m, kGemmTuneTileMax))
        for (std::int64_t tn = next_field(c.tile_n, 0, c.n, kGemmTuneTileMax); tn > 0; tn = next_field(c.tile_n, tn, c.n, kGemmTuneTileMax)) {
          x.split = split, x.tile_m = tm, x.tile_n = tn;
          gemm_tune_detail::choose_in_k_row(x, c.tile_k, least, best);
        }
  }
  if (least >= 0) {
    c = best;
    return;
  }
  if (c.tile_m == 0) c.tile_m = c.m < kGemmAutoTile ? c.m : kGemmAutoTile;
  if (c.tile_n == 0) c.tile_n = c.n < kGemmAutoTile ? c.n : kGemmAutoTile;
  if (c.tile_k == 0) c.tile_k = c.k < kGemmAutoTile ? c.k : kGemmAutoTile;
  c.split = gemm_split_of(c);
}

}  // namespace kb
