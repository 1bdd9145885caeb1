// The vector kernels of a whole model's layer program (docs/model.md section 13.4): RMSNorm,
// RoPE, SiLU(gate) x up, a residual add, and the KV cache append, on one tensor-parallel
// rank (a cube, or a SIP's cubes). Rows (tokens) are split evenly over the rank's PEs; a PE
// streams its rows through its SRAM in tiles: it loads a tile of each input from its cube's
// HBM (and RoPE's cos/sin rows for the tile; a norm loads its weights once, first), runs the
// kernel's passes on its vector engine, and stores the tile back. The op list
// and the tiling are shared with the reference program (src/host/families/llm/llm_program.cpp),
// as routes are; the timing below is the model's own.
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "llm_layer.h"
#include "../vector.h"

namespace kb {

// One vector kernel on one rank: `hw` is the rank's (one SIP: its cubes and their PEs).
struct LlmVecConfig {
  HwConfig hw;
  std::int64_t kind;  // LlmKernelKind: norm, l2_norm, rope, residual, silu_mul or kv_append
  std::int64_t rows, cols;
  std::int64_t out_bytes;  // bytes of a stored value: 2 (fp16; 0 means 2), or 1 (kv_append into an 8-bit cache)
  std::int64_t head_dim;      // rope: values of a head (even, dividing cols), the width of its cos/sin table
  std::int64_t weight_bytes;  // norm: bytes of a weight (1 or 2; 0 means 2)
};

// Bytes of a stored value. At 1 byte a tile's output is converted (a copy pass of the
// vector engine into a buffer of its own) before its store.
KB_HD constexpr std::int64_t llm_vec_out_bytes(const LlmVecConfig& c) { return c.out_bytes == 1 ? 1 : 2; }
// A norm's weights (cols values at weight_bytes each), loaded once by each PE with rows.
KB_HD constexpr std::int64_t llm_vec_weight_bytes(const LlmVecConfig& c) {
  return c.kind == static_cast<std::int64_t>(LlmKernelKind::norm) ? c.cols * (c.weight_bytes == 1 ? 1 : 2) : 0;
}
// RoPE's table: per row, head_dim / 2 cosines and as many sines (fp16), loaded with each tile.
KB_HD constexpr std::int64_t llm_vec_table_cols(const LlmVecConfig& c) {
  return c.kind == static_cast<std::int64_t>(LlmKernelKind::rope) ? c.head_dim : 0;
}

struct LlmVecResult {
  std::int32_t status;
  std::int32_t reserved;
  ps_t latency_ps;
  ps_t vector_busy_ps, dma_busy_ps;  // summed over PEs
  std::int64_t hbm_read_bytes, hbm_write_bytes;
  std::int64_t vector_ops, sram_read_bytes, sram_write_bytes;  // counted actions (docs/model.md section 14)
};

constexpr std::int64_t kLlmVecMaxRows = INT64_C(1) << 32, kLlmVecMaxCols = INT64_C(1) << 20;
// RMSNorm's epsilon (LLaMA-3.1's rms_norm_eps): values only, never timing.
constexpr float kLlmRmsNormEps = 1e-5f;

// 0 valid, 1 bad field (kind, rows or cols), 2 a row of the kernel's buffers does not fit
// a PE's SRAM, 3 times could pass int64.
enum LlmVecStatus : std::int32_t { kLlmVecOk = 0, kLlmVecBadField, kLlmVecSramOverflow, kLlmVecTimeOverflow };

// Inputs a tile loads (each `tile` x cols fp16 values): gate and up for silu_mul, the two
// addends for residual, one tensor otherwise. The output overwrites the first.
KB_HD inline int llm_vec_inputs(std::int64_t kind) {
  return kind == static_cast<std::int64_t>(LlmKernelKind::silu_mul) || kind == static_cast<std::int64_t>(LlmKernelKind::residual)
             ? 2
             : 1;
}

// SRAM one PE needs for a tile of t rows: a norm's weights, each input's tile (fp16), RoPE's
// table rows (fp16), the converted output (at 1 byte a value) and a row buffer (f32).
KB_HD inline std::int64_t llm_vec_row_bytes(const LlmVecConfig& c) {
  return llm_vec_inputs(c.kind) * c.cols * 2 + llm_vec_table_cols(c) * 2 + (llm_vec_out_bytes(c) == 1 ? c.cols : 0) + 4;
}
KB_HD inline std::int64_t llm_vec_sram_bytes(const LlmVecConfig& c, std::int64_t t) {
  return llm_vec_weight_bytes(c) + t * llm_vec_row_bytes(c);
}

// Rows of PE g (0..cubes x PEs - 1, cube-major) of the rank: an even split.
KB_HD inline std::int64_t llm_vec_rows_of(const LlmVecConfig& c, std::int64_t g) {
  const std::int64_t parts = c.hw.cubes_per_sip() * c.hw.pes_per_cube();
  return (g + 1) * c.rows / parts - g * c.rows / parts;
}

// A PE's tile: the most rows (at most its own) whose buffers fit its SRAM.
KB_HD inline std::int64_t llm_vec_tile_rows(const LlmVecConfig& c, std::int64_t rows) {
  const std::int64_t fit = (c.hw.sram_bytes() - llm_vec_weight_bytes(c)) / llm_vec_row_bytes(c);
  return fit < rows ? fit : rows;
}

KB_HD inline std::int32_t llm_vec_check(const LlmVecConfig& c) {
  const bool known = c.kind == static_cast<std::int64_t>(LlmKernelKind::norm) ||
                     c.kind == static_cast<std::int64_t>(LlmKernelKind::rope) ||
                     c.kind == static_cast<std::int64_t>(LlmKernelKind::residual) ||
                     c.kind == static_cast<std::int64_t>(LlmKernelKind::silu_mul) ||
                     c.kind == static_cast<std::int64_t>(LlmKernelKind::kv_append) ||
                     c.kind == static_cast<std::int64_t>(LlmKernelKind::l2_norm);
  if (!known || c.rows < 1 || c.rows > kLlmVecMaxRows || c.cols < 1 || c.cols > kLlmVecMaxCols) return kLlmVecBadField;
  if (!hw_fits(c.hw) || c.hw.sips != 1 || c.out_bytes < 0 || c.out_bytes > 2 || c.weight_bytes < 0 || c.weight_bytes > 2)
    return kLlmVecBadField;
  if (c.kind == static_cast<std::int64_t>(LlmKernelKind::rope) &&
      (c.head_dim < 2 || c.head_dim % 2 != 0 || c.head_dim > kLlmVecMaxCols || c.cols % c.head_dim != 0))
    return kLlmVecBadField;
  if (llm_vec_sram_bytes(c, 1) > c.hw.sram_bytes()) return kLlmVecSramOverflow;
  // A bound on any finish: every byte at a share of every PE, every pass, plus latencies.
  const std::int64_t P = c.hw.pes_per_cube() * c.hw.tenants(), bytes = 3 * c.rows * (c.cols + c.head_dim) * 2 + 2 * c.cols;
  if (transfer_overflows(bytes, 2 * P)) return kLlmVecTimeOverflow;
  const std::int64_t passes = 9 * vector_cycles(VecOp::exp, c.rows, c.cols, c.hw.vector_lanes);
  if (passes > kTimeLimitPs / 1000000 / 4) return kLlmVecTimeOverflow;
  const std::int64_t tiles = c.rows;  // at most one a row
  if (sat_mul(tiles, 4 * c.hw.hbm_latency_ns * kPsPerNs) >= kTimeLimitPs / 4) return kLlmVecTimeOverflow;
  return kLlmVecOk;
}

// The counted actions of the kernel, every PE's (docs/model.md section 14): what a tile's loads
// write to SRAM, its passes do, and its store reads, all in proportion to the tile's rows (the
// PEs' tiles together count as one tile of every row) but for the weights a norm's col_mul
// reads once a tile (`tiles`: every PE's tiles); and each PE with rows loads a norm's weights
// once. A pass's operands: the inputs, the output and RoPE's table fp16, the row buffer fp32,
// a norm's weights at weight_bytes, the 8-bit output one byte.
KB_HD inline void llm_vec_counts(const LlmVecConfig& c, std::int64_t tiles, LlmVecResult& r) {
  const std::int64_t R = c.rows, ob = llm_vec_out_bytes(c);
  LlmVecPass p[6];
  int np = llm_vec_passes(c.kind, R, c.cols, p);
  if (ob == 1) p[np++] = LlmVecPass{VecOp::copy, R, c.cols};
  r.vector_ops = 0;
  r.sram_read_bytes = R * c.cols * ob;   // the stores
  r.sram_write_bytes = r.hbm_read_bytes;  // the loads, weights included
  for (int i = 0; i < np; ++i) {
    std::int64_t dst = 2, src = 2;
    switch (p[i].op) {
      case VecOp::row_sumsq: dst = 4; break;                           // into the row buffer
      case VecOp::rsqrt: dst = 4, src = 0; break;                      // the row buffer, in place
      case VecOp::row_mul: src = 4; break;                             // by the row buffer
      case VecOp::col_mul: src = c.weight_bytes == 1 ? 1 : 2; break;  // by the weights
      case VecOp::copy: dst = 1; break;                                // into the 8-bit buffer
      default: break;
    }
    SramBytes b = vector_sram(p[i].op, p[i].rows, p[i].cols, dst, src, llm_vec_table_cols(c));
    if (p[i].op == VecOp::col_mul) b.read += (tiles - 1) * c.cols * src;  // the weights, once a tile
    r.vector_ops += vector_element_ops(p[i].op, p[i].rows, p[i].cols);
    r.sram_read_bytes += b.read, r.sram_write_bytes += b.write;
  }
}

namespace llm_detail {

// One PE's run: its end, and its busy totals.
struct VecPe {
  ps_t end, vector_busy, dma_busy;
  std::int64_t tiles;
};

// A PE streaming `rows` rows, its cube's HBM shared by `sharers` PEs: a norm's weights first,
// then per tile each input's load (and RoPE's table rows) on its DMA queue, the passes on its
// vector engine once the loads have landed, and the store once the passes (and the
// conversion to 8 bits, if any) are done; the queue serves in program order, so the next
// tile's loads follow the store.
KB_HD inline VecPe vec_pe(const LlmVecConfig& c, std::int64_t rows, std::int64_t sharers) {
  const HwConfig& h = c.hw;
  const ps_t lat = h.hbm_latency_ns * kPsPerNs;
  const std::int64_t T = llm_vec_tile_rows(c, rows), inputs = llm_vec_inputs(c.kind), ob = llm_vec_out_bytes(c);
  VecPe r{0, 0, 0, 0};
  ps_t dma = 0, vec = 0;
  if (llm_vec_weight_bytes(c) > 0) {  // lands before the first tile, which follows it on the queue
    dma = shared_transfer_ps(llm_vec_weight_bytes(c), h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
    r.dma_busy = dma;
  }
  for (std::int64_t lo = 0; lo < rows; lo += T) {
    const std::int64_t t = imin(T, rows - lo), bytes = t * c.cols * 2;
    ++r.tiles;
    const ps_t b = shared_transfer_ps(bytes, h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
    const ps_t out = ob == 2 ? b : shared_transfer_ps(t * c.cols * ob, h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
    ps_t landed = 0;
    for (int i = 0; i < inputs; ++i) {
      landed = dma + b + lat;
      dma += b;
    }
    if (llm_vec_table_cols(c) > 0) {
      const ps_t tb = shared_transfer_ps(t * llm_vec_table_cols(c) * 2, h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
      landed = dma + tb + lat;
      dma += tb;
      r.dma_busy += tb;
    }
    r.dma_busy += inputs * b + out;
    LlmVecPass p[6];
    int n = llm_vec_passes(c.kind, t, c.cols, p);
    if (ob == 1) p[n++] = LlmVecPass{VecOp::copy, t, c.cols};
    ps_t done = landed;
    if (n > 0) {
      vec = imax(vec, landed);
      for (int k = 0; k < n; ++k) {
        const ps_t v = cycles_ps(vector_cycles(p[k].op, p[k].rows, p[k].cols, h.vector_lanes), h.clock_mhz);
        vec += v;
        r.vector_busy += v;
      }
      done = vec;
    }
    dma = imax(dma, done) + out;
    r.end = dma + lat;
  }
  return r;
}

}  // namespace llm_detail

// The model: every PE of the rank from time 0. PEs with the same rows and the same share run
// alike, and there are at most two of each: with at least as many rows as PEs every PE
// streams floor(rows / n) or one more (n PEs, rows mod n of them the more) at a share of its
// cube's P PEs; with fewer, a PE streams one row or none, and cube q's PEs
// g = qP .. qP + P - 1 hold floor((q + 1) P rows / n) - floor(q P rows / n) of the rows,
// so many of them share its HBM. A PE's end grows with its rows and its share, so the
// latency is the largest class's.
KB_HD inline LlmVecResult llm_vec_model(const LlmVecConfig& c) {
  LlmVecResult r{};
  r.status = llm_vec_check(c);
  if (r.status != kLlmVecOk) return r;
  const std::int64_t C = c.hw.cubes_per_sip(), P = c.hw.pes_per_cube(), n = C * P, R = c.rows, T = c.hw.tenants();
  std::int64_t tiles = 0;
  auto add = [&](const llm_detail::VecPe& pe, std::int64_t count) {
    if (count == 0) return;
    tiles += count * pe.tiles;
    r.latency_ps = imax(r.latency_ps, pe.end);
    r.vector_busy_ps += count * pe.vector_busy;
    r.dma_busy_ps += count * pe.dma_busy;
  };
  if (R >= n) {
    const std::int64_t lo = R / n, more = R % n;
    add(llm_detail::vec_pe(c, lo, P * T), n - more);
    if (more) add(llm_detail::vec_pe(c, lo + 1, P * T), more);
  } else {
    std::int64_t seen_sharers[2] = {-1, -1};
    llm_detail::VecPe seen[2];
    for (std::int64_t q = 0; q < C; ++q) {
      const std::int64_t s = (q + 1) * P * R / n - q * P * R / n;
      if (s == 0) continue;
      int i = seen_sharers[0] == s ? 0 : seen_sharers[1] == s ? 1 : -1;
      if (i < 0) {
        i = seen_sharers[0] < 0 ? 0 : 1;
        seen_sharers[i] = s;
        seen[i] = llm_detail::vec_pe(c, 1, s * T);
      }
      add(seen[i], s);
    }
  }
  r.hbm_read_bytes = llm_vec_inputs(c.kind) * R * c.cols * 2 + R * llm_vec_table_cols(c) * 2 + imin(R, n) * llm_vec_weight_bytes(c);
  r.hbm_write_bytes = R * c.cols * llm_vec_out_bytes(c);
  llm_vec_counts(c, tiles, r);
  return r;
}

}  // namespace kb
