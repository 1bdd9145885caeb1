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

// The space searched: tile_m and tile_n each a power of two in 32..512, tile_k one in
// 32..4096, each below its matrix dimension, or the dimension itself where that is at most
// the bound (a GEMM of m = 8 tiles m by 8; one of k = 100 has tile_k 32, 64 or 100); every
// split (rows, cols, rows-k, cols-k); 2 or 1 buffer sets. The PEs and cubes are the
// config's (a tuned kernel uses the machine it is given). At most 4 x 5 x 5 x 8 x 2 = 1600
// tilings.
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

}  // namespace gemm_tune_detail

// The tiling of least latency for the shape, hardware, PEs, cubes and B bytes of `base`
// (its tiles, split and buffers are ignored). Ties go to the first met in the order: split
// rows, cols, rows-k, cols-k; then tile_m, tile_n, tile_k ascending; then 2 buffer sets
// before 1. When no tiling of the space is valid, the automatic one (gemm_complete), whose
// status then says why. `prune` (the default) skips the walk of a tiling whose latency is
// bounded above the least so far, or above the automatic tiling's (itself in the space),
// and the single buffer set of a tiling valid with two; the choice is the same as without
// (a test holds them equal), only faster.
KB_HD inline GemmConfig gemm_tune(const GemmConfig& base, bool prune = true) {
  using gemm_tune_detail::next_tile;
  GemmConfig best = base;
  best.tile_m = best.tile_n = best.tile_k = 0, best.split = kGemmSplitAuto, best.buffers = 2;
  gemm_complete(best);
  const GemmConfig automatic = best;
  // Candidates bounded above this are skipped; a candidate is taken when it is faster than the
  // one taken before, or (none yet) no slower than this.
  ps_t threshold = prune ? gemm_latency_unless_above(automatic, -1) : -1;
  GemmConfig g = base;
  ps_t best_ps = -1;
  for (std::int64_t split = kGemmSplitRows; split <= kGemmSplitColsK; ++split)
    for (std::int64_t tm = next_tile(0, base.m, kGemmTuneTileMax); tm > 0; tm = next_tile(tm, base.m, kGemmTuneTileMax))
      for (std::int64_t tn = next_tile(0, base.n, kGemmTuneTileMax); tn > 0; tn = next_tile(tn, base.n, kGemmTuneTileMax))
        for (std::int64_t tk = next_tile(0, base.k, kGemmTuneTileKMax); tk > 0; tk = next_tile(tk, base.k, kGemmTuneTileKMax))
          for (std::int64_t buffers = 2; buffers >= 1; --buffers) {
            g.split = split, g.tile_m = tm, g.tile_n = tn, g.tile_k = tk, g.buffers = buffers;
            const ps_t t = gemm_latency_unless_above(g, prune ? threshold : -1);
            if (t == -1) continue;  // invalid (2 sets may not fit the SRAM where 1 does)
            if (t >= 0 && (best_ps >= 0 ? t < best_ps : threshold < 0 || t <= threshold))
              best = g, best_ps = t, threshold = t;
            // Valid with 2 sets: 1 set is never faster (loads overlap less of the work; the
            // bound is the same), which a test checks on random configs, so it is not walked.
            if (prune) break;
          }
  return best_ps >= 0 ? best : automatic;
}

// gemm_tune memoised per (shape, hardware) for the whole process: a sweep of whole models
// meets the same GEMMs in config after config (the mappings, algorithms and cases that do not
// change a rank's GEMMs), on every thread. A CUDA thread tunes every time (kernel_memo.h).
KB_HD inline GemmConfig gemm_tuned(const GemmConfig& base) {
  GemmConfig key = base;  // the tiling is no part of the question
  key.tile_m = key.tile_n = key.tile_k = 0, key.split = kGemmSplitAuto, key.buffers = 0;
  return shared_memo_eval<GemmConfig, GemmConfig>(key, [](const GemmConfig& x) { return gemm_tune(x); });
}

}  // namespace kb
