// Batched GEMM model: from a compact config, the latency and resource totals of the tile
// schedule that the reference GEMM kernel (src/host/families/gemm/gemm_program.cpp) issues, without
// building a graph. Pure KB_HD code: no allocation, exceptions, virtual calls or recursion.
//
// The config, partition and check are in gemm_config.h, the max-plus machinery that walks a
// PE's steps in gemm_pipeline.h; this file puts them together into the figures of a config.
#pragma once

#include "../../common/energy.h"
#include "gemm_auto.h"
#include "gemm_pipeline.h"

namespace kb {

namespace gemm_detail {

// What one cube's block of tiles gives: its slowest PE's finish, the busiest PE's busy
// times, and the partial sums it sends (split-K).
struct BlockFigures {
  ps_t latency = 0;
  Busy busy{0, 0};
  std::int64_t sends = 0;
};

// One GEMM evaluation in its two passes: the totals by counting tile kinds (and the bound
// that says whether every time fits), then the latency, cube block by cube block.
struct GemmEval {
  const GemmConfig& g;
  GemmGrid grid;
  std::int64_t tm, tn, kt, m_last, n_last, k_last, split;
  bool by_cols, split_k;
  std::int64_t unit;  // work is handed out in whole tiles, or with split-K in k-slices of tiles ("units")
  // The tile kinds of the last HBM share asked for (cubes alike ask for the same one).
  std::int64_t kinds_share = -1;
  TileKinds kinds;  // set before any use (kinds_share starts unmatched)
  ps_t bound = 0;   // every busy time plus every latency: an upper bound on any finish time
  // The caller's result, filled in place: a copy out of the evaluation would read it in
  // 16-byte words just after the 8-byte stores that wrote it (a store-forwarding stall).
  GemmResult& r;

  KB_HD GemmEval(const GemmConfig& config, const GemmGrid& grid_, GemmResult& result)
      : g(config), grid(grid_), tm(grid.tiles_m), tn(grid.tiles_n), kt(grid.kt),
        m_last(config.m - (grid.tiles_m - 1) * config.tile_m), n_last(config.n - (grid.tiles_n - 1) * config.tile_n),
        k_last(config.k - (grid.kt - 1) * config.tile_k), split(gemm_split_of(config)),
        by_cols(gemm_split_by_cols(split)), split_k(gemm_split_k(split)), unit(split_k ? grid.kt : 1), r(result) {}

  // A cube's PEs split its HBM bandwidth; only those with work access HBM, and a cube
  // with a block of `tiles` tiles gives work to min(pes, tiles · unit) of them.
  // The cube's HBM sharers: its PEs with tiles, times the launches alike beside it.
  KB_HD std::int64_t share_of(std::int64_t tiles) const { return imin(g.pes, tiles * unit) * g.hw.tenants(); }
  KB_HD const TileKinds& kinds_of(std::int64_t tiles) {
    if (share_of(tiles) != kinds_share) {
      kinds_share = share_of(tiles);
      kinds.set(g, Costs{&g, kt, k_last, g.hw.hbm_latency_ns * kPsPerNs, kinds_share}, m_last, n_last);
    }
    return kinds;
  }

  // Totals by counting, per cube: its tile rows (full ones, and the matrix's last row if it
  // holds it) and tile columns each come in a full and a last size, so a cube's schedule
  // holds at most four kinds of tile.
  KB_HD void add_cubes(std::int64_t ncubes, std::int64_t rows, std::int64_t last_r, std::int64_t cols, std::int64_t last_c) {
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
  }
  // Blocks of `len` along the split dimension, `last`: whether they hold its last tile.
  KB_HD void add_blocks(std::int64_t ncubes, std::int64_t len, std::int64_t last) {
    const std::int64_t other = grid.across(by_cols);
    if (by_cols) add_cubes(ncubes, other, 1, len, last);
    else add_cubes(ncubes, len, last, other, 1);
  }

  // The totals and the counts; false when some time could pass the time limit (the
  // config's status is then kGemmTimeOverflow). Cubes come in at most three kinds along
  // the split dimension: the last (it holds the matrix's last tile row or column), and among
  // the others those with floor(T / cubes) + 1 rows or columns and those with
  // floor(T / cubes). The other dimension is whole.
  KB_HD bool totals() {
    const std::int64_t total = grid.along(by_cols), other = grid.across(by_cols);
    const std::int64_t q = total / g.cubes, bigger = total % g.cubes;  // that many cubes have q + 1
    if (q >= 1 && q * other * unit >= g.pes) {
      add_blocks(1, total, 1);  // every cube gives work to all its PEs: one share for all, summed at once
    } else {
      const CubeTiles last = gemm_cube_tiles(tm, tn, g.cubes, split, g.cubes - 1);  // never empty: it ends at T
      const std::int64_t last_len = by_cols ? last.cols() : last.rows();
      const std::int64_t others_bigger = bigger - (last_len == q + 1 ? 1 : 0);
      add_blocks(1, last_len, 1);
      add_blocks(others_bigger, q + 1, 0);
      add_blocks(g.cubes - 1 - others_bigger, q, 0);
    }
    bound = sat_add(bound, r.matrix_busy_ps);
    if (split_k) {  // at most one partial sent per PE, each copied, waited for and added
      const KCosts kc = k_costs(g, g.tile_m, g.tile_n);
      bound = sat_add(bound, sat_mul(g.pes * g.cubes, 2 * kc.copy + kc.lat + kc.add));
    }
    if (bound >= kTimeLimitPs || r.mac_cycles >= kTimeLimitPs) return false;
    r.macs = g.m * g.n * g.k;
    r.hbm_read_bytes = kGemmABytes * tn * g.m * g.k + gemm_b_bytes(g) * tm * g.n * g.k;
    r.hbm_write_bytes = 2 * g.m * g.n;
    r.ops = tm * tn * (3 * kt + 1);
    return true;
  }

  // A cube's block: with split-K the k-slices' schedule, else the PEs' tile ranges walked.
  KB_HD BlockFigures block(const CubeTiles& ct, bool has_last_row, bool has_last_col) {
    const bool ragged_m = m_last != g.tile_m, ragged_n = n_last != g.tile_n;
    const std::int64_t w = ct.cols();
    // (Tiles of the last row or column that are not ragged are regular ones.)
    const BlockShape blk{w, has_last_row && ragged_m ? ct.rows() - 1 : -1, has_last_col && ragged_n ? w - 1 : -1};
    const TileKinds& tk = kinds_of(ct.rows() * w);
    BlockFigures out;
    if (split_k) {
      const KBlock kb = k_block(g, tk, ct.rows() * w, kt, blk);
      out.latency = kb.latency;
      out.busy = kb.busiest;
      out.sends = kb.sends;
      return out;
    }
    std::int64_t seen_col = -1, seen_len = -1;
    Memo2 rows;
    rows.clear();
    ps_t latency = 0;
    Busy busy{0, 0};
    // The PEs' ranges [lo, hi) of gemm_tiles_of, walked; and the row and column of lo and
    // of hi - 1, advanced by a range's length (q or q + 1 tiles, whose rows and columns are
    // divided out once).
    EvenParts ranges(ct.rows() * w, g.pes);
    const std::int64_t q = ranges.per;
    const std::int64_t rows_q1 = div_fast(q - 1, w), rows_q = div_fast(q, w);
    const std::int64_t span_rows[2] = {rows_q1, rows_q}, span_cols[2] = {q - 1 - rows_q1 * w, q - rows_q * w};
    std::int64_t lo_row = 0, lo_col = 0;
    for (std::int64_t pe = 0; pe < g.pes; ++pe) {
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
      out.latency = imax(out.latency, latency);
      out.busy.matrix = imax(out.busy.matrix, busy.matrix);
      out.busy.dma = imax(out.busy.dma, busy.dma);
      lo_row = end_row, lo_col = end_col + 1;
      if (lo_col == w) lo_col = 0, ++lo_row;
    }
    return out;
  }

  // The latency and the busiest PE, cube by cube. A PE's schedule depends only on the shape
  // of its tile range (where it starts in a tile row, how many tiles), unless the range
  // reaches a ragged last tile row; and the ranges inside a cube depend only on its
  // block's shape. So cubes alike share one evaluation, and inside a cube PEs alike share
  // one walk.
  KB_HD void latencies() {
    const bool ragged_m = m_last != g.tile_m, ragged_n = n_last != g.tile_n;
    std::int64_t seen_rows = -1, seen_cols = -1, sends = 0;
    BlockFigures fig;
    // The cubes' blocks of gemm_cube_tiles, walked.
    EvenParts blocks(grid.along(by_cols), g.cubes);
    for (std::int64_t cube = 0; cube < g.cubes; ++cube) {
      const Span b = blocks.next();
      const CubeTiles ct = by_cols ? CubeTiles{0, tm, b.lo, b.hi} : CubeTiles{b.lo, b.hi, 0, tn};
      if (ct.rows() <= 0 || ct.cols() <= 0) continue;
      const bool has_last_row = ct.r1 == tm, has_last_col = ct.c1 == tn;
      if (ct.rows() != seen_rows || ct.cols() != seen_cols) {
        fig = block(ct, has_last_row, has_last_col);
        // A block that holds the ragged last tiles along the split dimension is unlike the
        // blocks after it (every block holds the other dimension's last tile alike).
        const bool unlike = by_cols ? ragged_n && has_last_col : ragged_m && has_last_row;
        seen_rows = unlike ? -1 : ct.rows();
        seen_cols = unlike ? -1 : ct.cols();
      }
      r.latency_ps = imax(r.latency_ps, fig.latency);
      sends += fig.sends;
      r.max_pe_matrix_busy_ps = imax(r.max_pe_matrix_busy_ps, fig.busy.matrix);
      r.max_pe_dma_busy_ps = imax(r.max_pe_dma_busy_ps, fig.busy.dma);
    }
    // A partial sum sent is a copy over two ports, the receiver's signal and wait, and an add.
    r.ops += 5 * sends;
    counts(split_k ? split_k_sent() : 0);
  }

  // Split-K: the values of the partial sums every cube's block sends. What a block sends
  // depends on whether it holds the ragged last tiles, unlike its timing, so blocks are keyed
  // by their shape and raggedness (at most a few kinds).
  KB_HD KB_NOINLINE std::int64_t split_k_sent() const {
    const bool ragged_m = m_last != g.tile_m, ragged_n = n_last != g.tile_n;
    std::int64_t sent = 0, key[4] = {-1, -1, -1, -1}, block = 0;
    EvenParts blocks(grid.along(by_cols), g.cubes);
    for (std::int64_t cube = 0; cube < g.cubes; ++cube) {
      const Span b = blocks.next();
      const CubeTiles ct = by_cols ? CubeTiles{0, tm, b.lo, b.hi} : CubeTiles{b.lo, b.hi, 0, tn};
      if (ct.rows() <= 0 || ct.cols() <= 0) continue;
      const std::int64_t k[4] = {ct.rows(), ct.cols(), ct.r1 == tm && ragged_m, ct.c1 == tn && ragged_n};
      if (k[0] != key[0] || k[1] != key[1] || k[2] != key[2] || k[3] != key[3]) {
        for (int i = 0; i < 4; ++i) key[i] = k[i];
        block = block_sent(ct, k[2] != 0, k[3] != 0);
      }
      sent = sat_add(sent, block);
    }
    return sent;
  }

  // Split-K: the values of the partial sums a cube's block sends, each sender's first tile (the
  // block's last row or column ragged when `ragged_row` or `ragged_col`).
  KB_HD std::int64_t block_sent(const CubeTiles& ct, bool ragged_row, bool ragged_col) const {
    const std::int64_t w = ct.cols();
    std::int64_t sent = 0;
    EvenParts ranges(ct.rows() * w * kt, g.pes);  // gemm_unit_start, walked
    for (std::int64_t pe = 0; pe < g.pes; ++pe) {
      const Span u = ranges.next();
      if (u.hi <= u.lo || u.lo % kt == 0) continue;
      const std::int64_t t = u.lo / kt;
      const bool short_row = ragged_row && t / w == ct.rows() - 1, short_col = ragged_col && t % w == w - 1;
      sent += (short_row ? m_last : g.tile_m) * (short_col ? n_last : g.tile_n);
    }
    return sent;
  }

  // The counted actions (docs/model.md section 14.2), from the totals and the `sent` values of
  // split-K's partial sums (fp32). Every slice's matmul reads its A and B tiles as loaded
  // (hbm_read_bytes) and writes its fp32 accumulator (4·kt·m·n in all); it reads the
  // accumulator too, except on a tile's first slice and a sender's first; a sent partial is read,
  // copied and written into the owner's slot, then added (two reads, one write); a store reads
  // the accumulator (4·m·n). Reads and writes come to the same sum.
  KB_HD void counts(std::int64_t sent) {
    const std::int64_t acc = sat_mul(4 * kt, g.m * g.n);
    const std::int64_t sram = sat_add(sat_add(r.hbm_read_bytes, acc), sat_mul(8, sent));
    r.vector_ops = sent;
    r.link_bytes_pe = sat_mul(4, sent);
    r.sram_read_bytes = sram;
    r.sram_write_bytes = sram;
  }
};

// A bound below the latency without counting or walking. Full tiles are those of neither the
// matrix's ragged last tile row nor column; a full k-slice is one of a full tile and not a
// ragged last slice of k. A cube block is at least ceil(T_along / cubes) - 1 (if ragged)
// full tiles along the split: the last block, the longest, holds the ragged one; the others,
// ceil((T_along - the last's) / (cubes - 1)) at the longest, hold none. Of a block's full
// k-slices (split-K) or full tiles, some PE holds at least an even share, rounded up: its
// N full slices keep its DMA queue busy N loads (and a store a full tile), its matrix engine
// N matmuls, and a slice's matmul ends no sooner than its load and an HBM latency after the
// matmul `buffers` slices before it (which frees the buffer the load fills), so one of the
// PE's `buffers` chains of slices holds ceil(N / buffers) loads, latencies and matmuls in turn.
KB_HD inline ps_t busiest_full_bound(const GemmConfig& g, const GemmGrid& grid) {
  const std::int64_t split = gemm_split_of(g);
  const bool by_cols = gemm_split_by_cols(split), split_k = gemm_split_k(split);
  const bool ragged_m = g.m % g.tile_m != 0, ragged_n = g.n % g.tile_n != 0, ragged_k = g.k % g.tile_k != 0;
  const bool ragged_along = by_cols ? ragged_n : ragged_m, ragged_across = by_cols ? ragged_m : ragged_n;
  const std::int64_t along = grid.along(by_cols), across = grid.across(by_cols);
  const std::int64_t len = ceil_div(along, g.cubes);  // the last block's (the longest)
  std::int64_t block = len, full_along = len - (ragged_along ? 1 : 0);
  if (ragged_along && g.cubes > 1 && ceil_div(along - len, g.cubes - 1) > full_along)
    block = full_along = ceil_div(along - len, g.cubes - 1);
  const std::int64_t full = full_along * (across - (ragged_across ? 1 : 0));
  if (full <= 0) return 0;
  // The block's HBM sharers (at least; a transfer is no faster with more).
  const std::int64_t unit = split_k ? grid.kt : 1;
  const Costs cost{&g, grid.kt, g.k - (grid.kt - 1) * g.tile_k, g.hw.hbm_latency_ns * kPsPerNs,
                   imin(g.pes, block * across * unit) * g.hw.tenants()};
  const Step slice = full_slice(g, cost, g.tile_k);
  const ps_t load = slice.load, mm = slice.mm;
  const std::int64_t body = ragged_k ? grid.kt - 1 : grid.kt;  // a full tile's full slices
  std::int64_t slices = 0;
  ps_t stores = 0;
  if (split_k) {
    slices = ceil_div(sat_mul(full, body), g.pes);
  } else {
    const std::int64_t tiles = ceil_div(full, g.pes);
    slices = sat_mul(tiles, body), stores = sat_mul(tiles, cost.xfer(2 * g.tile_m * g.tile_n));
  }
  // (The PE's last DMA op is followed by an HBM latency, and its first matmul waits one.)
  const ps_t dma = sat_add(sat_add(sat_mul(slices, load), stores), cost.lat), matrix = sat_add(sat_mul(slices, mm), cost.lat);
  const ps_t chain = sat_mul(ceil_div(slices, g.buffers), load + cost.lat + mm);
  return imax(imax(dma, matrix), chain);
}

}  // namespace gemm_detail

KB_HD inline GemmResult gemm_model(const GemmConfig& g) {
  GemmResult r;
  zero_words(r);  // word by word (a brace-initialised result this size became rep stos)
  GemmGrid grid;
  r.status = gemm_check(g, &grid);
  if (r.status != kGemmOk) return r;
  gemm_detail::GemmEval e(g, grid, r);
  if (!e.totals()) {
    zero_words(r);
    r.status = kGemmTimeOverflow;  // an invalid config's result is its status
    return r;
  }
  e.latencies();
  gemm_roofline(g, r);
  return r;
}

// The latency of `g` as gemm_model gives it, or -1 when the config is invalid, or -2 when a
// bound below its latency is above `above` (>= 0; < 0: no bound asked for), found from the
// totals without the walk. The bound: the PEs' matrix work, or their DMA queues' work, over
// the PEs used (each PE's matrix engine and DMA queue serve one thing at a time, so no PE
// finishes before its own work on either, and the busiest PE's is at least the average).
// For a search of the least latency (gemm_tune.h), which may have checked the machine
// (gemm_check_machine) and the tiles' range once for all its tilings (`machine_checked`).
KB_HD inline ps_t gemm_latency_unless_above(const GemmConfig& g, ps_t above, bool machine_checked = false) {
  GemmResult r;
  zero_words(r);
  GemmGrid grid;
  if ((machine_checked ? gemm_check_tiling(g, &grid) : gemm_check(g, &grid)) != kGemmOk) return -1;
  if (above >= 0 && gemm_detail::busiest_full_bound(g, grid) > above) return -2;
  gemm_detail::GemmEval e(g, grid, r);
  if (!e.totals()) return -1;
  if (above >= 0 && imax(r.matrix_busy_ps, r.dma_busy_ps) / (g.pes * g.cubes) > above) return -2;
  e.latencies();
  return r.latency_ps;
}

// Resolves the automatic split (gemm_split_of), when the shape and tiling are defined.
KB_HD inline void gemm_resolve_split(GemmConfig& c) { c.split = gemm_split_of(c); }

// Resolves automatic (0) tiles and split: the tiling of least estimated latency
// (gemm_auto.h). A config with every tile set gets gemm_split_of's split when automatic.
KB_HD inline void gemm_complete(GemmConfig& c) {
  if (c.tile_m == 0 || c.tile_n == 0 || c.tile_k == 0) gemm_choose_tiling(c);
  else gemm_resolve_split(c);
}

// The family as the generic sweep engine sees it (src/device/sweep/).
struct GemmModel {
  using Config = GemmConfig;
  using Result = GemmResult;
  static constexpr int kStatuses = kGemmStatusCount;
  KB_HD static void complete(Config& c) { gemm_complete(c); }
  // Every field gemm_complete writes, put back (the sweep's odometer keeps one config).
  KB_HD static void uncomplete(Config& c, const Config& raw) {
    c.tile_m = raw.tile_m, c.tile_n = raw.tile_n, c.tile_k = raw.tile_k, c.split = raw.split;
  }
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
  static constexpr bool kCounts = true;
  KB_HD static Actions actions(const Config&, const Result& r) {
    return Actions{r.macs,           r.vector_ops,      r.sram_read_bytes, r.sram_write_bytes, r.hbm_read_bytes,
                   r.hbm_write_bytes, r.link_bytes_pe, 0,                 0};
  }
  KB_HD static Energy energy(const Config& c, const Result& r) { return energy_of(c.hw, actions(c, r), r.latency_ps); }
};

}  // namespace kb
