// A GEMM kernel tuned as a software stack tunes it (docs/model.md section 13.5): of the
// gemm family's tilings of one shape on one machine, the one of least latency on the
// batched model. Whole-model inference (src/device/models/llm/) times each GEMM of a step
// with it unless told to keep the automatic tiling (--kernel-tuning auto). Both engines run
// the tiling chosen here, so their parity does not depend on the choice.
#pragma once

#include <cstdint>

#include "../../common/kb_hd.h"
#include "../../common/kernel_memo.h"
#include "gemm_model.h"

namespace kb {

// The space searched: gemm_auto.h's candidate tiles (at most 4 x 5 x 5 x 8 = 800 of them);
// every split (rows, cols, rows-k, cols-k); 2 or 1 buffer sets. The PEs and cubes are the
// config's (a tuned kernel uses the machine it is given). At most 1600 tilings.

// The tiling of least latency for the shape, hardware, PEs, cubes and B bytes of `base`
// (its tiles, split and buffers are ignored). Ties go to the first met in the order: split
// rows, cols, rows-k, cols-k; then tile_m, tile_n, tile_k ascending; then 2 buffer sets
// before 1. When no tiling of the space is valid, the automatic one (gemm_complete), whose
// status then says why. `prune` (the default) skips the walk of a tiling whose latency is
// bounded above the least so far (gemm_latency_unless_above), and the single buffer set of
// a tiling valid with two; the choice is the same as without (a test holds them equal),
// only faster. Either way a tile_k whose buffers overflow the SRAM ends its row of tile_k.
KB_HD inline GemmConfig gemm_tune(const GemmConfig& base, bool prune = true) {
  using gemm_tune_detail::next_tile;
  GemmConfig best = base;
  auto automatic = [&] {
    GemmConfig a = base;
    a.tile_m = a.tile_n = a.tile_k = 0, a.split = kGemmSplitAuto, a.buffers = 2;
    gemm_complete(a);
    return a;
  };
  ps_t threshold = -1;  // candidates bounded above the least so far are skipped
  GemmConfig g = base;
  g.split = kGemmSplitRows, g.buffers = 2, g.tile_m = g.tile_n = g.tile_k = 1;
  if (gemm_check(g) == kGemmBadShape || gemm_check_machine(g) != kGemmOk) return automatic();  // no tiling is valid
  ps_t best_ps = -1;
  // A first bound to beat: one tiling, walked, that is often near the best (tiles of 64 or the
  // dimension, the longest tile_k whose two buffer sets fit, gemm_split_of's split). Until
  // the search meets it in its order, a tiling as fast is earlier, so it is taken.
  bool before_best = false;
  if (prune) {
    GemmConfig seed = base;
    seed.tile_m = imin(base.m, 64), seed.tile_n = imin(base.n, 64), seed.tile_k = 0, seed.buffers = 2;
    for (std::int64_t tk = next_tile(0, base.k, kGemmTuneTileKMax); tk > 0; tk = next_tile(tk, base.k, kGemmTuneTileKMax)) {
      GemmConfig x = seed;
      x.tile_k = tk;
      if (gemm_tile_sram_bytes(x) > x.hw.sram_bytes()) break;
      seed.tile_k = tk;
    }
    if (seed.tile_k > 0) {
      seed.split = kGemmSplitAuto;
      seed.split = gemm_split_of(seed);
      const ps_t t = gemm_latency_unless_above(seed, -1, true);
      if (t >= 0) best = seed, best_ps = t, threshold = t, before_best = true;
    }
  }
  for (std::int64_t split = kGemmSplitRows; split <= kGemmSplitColsK; ++split)
    for (std::int64_t tm = next_tile(0, base.m, kGemmTuneTileMax); tm > 0; tm = next_tile(tm, base.m, kGemmTuneTileMax))
      for (std::int64_t tn = next_tile(0, base.n, kGemmTuneTileMax); tn > 0; tn = next_tile(tn, base.n, kGemmTuneTileMax))
        for (std::int64_t tk = next_tile(0, base.k, kGemmTuneTileKMax); tk > 0; tk = next_tile(tk, base.k, kGemmTuneTileKMax)) {
          bool larger_fit = true;  // a larger tile_k may fit the SRAM
          for (std::int64_t buffers = 2; buffers >= 1; --buffers) {
            g.split = split, g.tile_m = tm, g.tile_n = tn, g.tile_k = tk, g.buffers = buffers;
            if (gemm_tile_sram_bytes(g) > g.hw.sram_bytes()) {  // invalid, as is every larger tile_k with as many sets
              larger_fit = buffers == 2;
              continue;
            }
            const ps_t t = gemm_latency_unless_above(g, prune ? threshold : -1, true);
            if (t == -1) continue;  // invalid (2 sets may not fit the SRAM where 1 does)
            if (before_best && g.split == best.split && g.tile_m == best.tile_m && g.tile_n == best.tile_n &&
                g.tile_k == best.tile_k && g.buffers == best.buffers)
              before_best = false;  // the first bound's tiling
            if (t >= 0 && (best_ps < 0 || t < best_ps || (t == best_ps && before_best)))
              best = g, best_ps = t, threshold = t, before_best = false;
            // Valid with 2 sets: 1 set is never faster (loads overlap less of the work; the
            // bound is the same), which a test checks on random configs, so it is not walked.
            if (prune) break;
          }
          if (!larger_fit) break;
        }
  return best_ps >= 0 ? best : automatic();
}

// gemm_tune memoised per (shape, hardware) for the whole process: a sweep of whole models
// meets the same GEMMs in config after config (the mappings, algorithms and cases that do not
// change a rank's GEMMs), on every thread. A CUDA thread tunes every time (kernel_memo.h).
KB_HD inline GemmConfig gemm_tuned(const GemmConfig& base) {
  GemmConfig key = base;  // the tiling is no part of the question
  key.tile_m = key.tile_n = key.tile_k = 0, key.split = kGemmSplitAuto, key.buffers = 0;
  return shared_memo_eval<GemmConfig, GemmConfig>(key, [](const GemmConfig& x) { return gemm_tune(x); });
}

// The automatic tiling (gemm_complete) with 2 buffer sets, or with 1 where no tiling of the
// space fits 2 and one fits 1, memoised as gemm_tuned is: whole models run on it with
// --kernel-tuning auto.
KB_HD inline GemmConfig gemm_automatic(const GemmConfig& base) {
  GemmConfig key = base;
  key.tile_m = key.tile_n = key.tile_k = 0, key.split = kGemmSplitAuto, key.buffers = 0;
  return shared_memo_eval<GemmConfig, GemmConfig>(key, [](const GemmConfig& x) {
    GemmConfig two = x;
    two.buffers = 2;
    gemm_complete(two);
    if (gemm_check(two) != kGemmSramOverflow) return two;
    GemmConfig one = x;
    one.buffers = 1;
    gemm_complete(one);
    return gemm_check(one) == kGemmOk ? one : two;
  });
}

}  // namespace kb
