// One PE's compute phase of the batched decode model (decode_model.h): the costs of a chunk
// step and of a merge (vector and matrix times, counted actions), and the max-plus recurrence
// of a PE's steps on its three in-order engines (DMA queue, matrix, vector), jumped over once
// its state repeats, as the GEMM model does (gemm_model.h) (docs/model.md section 12.3).
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "decode_config.h"
#include "../systolic.h"
#include "../vector.h"

namespace kb {
namespace dec_detail {

KB_HD inline ps_t vec_ps(const DecodeConfig& c, VecOp op, std::int64_t rows, std::int64_t cols) {
  return cycles_ps(vector_cycles(op, rows, cols, c.hw.vector_lanes), c.hw.clock_mhz);
}
// The vector ops of merging R rows of partials (m, l, O) into an accumulator:
// t = m1; t = max(t, m2); m1 = exp(m1 - t); m2 = exp(m2 - t); l1 = l1 m1 + l2 m2;
// O1 = O1 m1 + O2 m2 (row broadcasts); m1 = t.
KB_HD inline ps_t merge_ps(const DecodeConfig& c, std::int64_t R) {
  const std::int64_t d = dec_dv(c);
  return 2 * vec_ps(c, VecOp::copy, 1, R) + vec_ps(c, VecOp::max, 1, R) + 2 * vec_ps(c, VecOp::sub, 1, R) +
         2 * vec_ps(c, VecOp::exp, 1, R) + 2 * vec_ps(c, VecOp::mul, 1, R) + vec_ps(c, VecOp::add, 1, R) +
         2 * vec_ps(c, VecOp::row_mul, R, d) + vec_ps(c, VecOp::add, 1, R * d);
}

// Counted actions beyond MACs and HBM bytes: vector element-ops, SRAM bytes read and written.
struct Counts {
  std::int64_t vops, rd, wr;
  KB_HD void add(const Counts& o, std::int64_t times = 1) { vops += times * o.vops, rd += times * o.rd, wr += times * o.wr; }
  KB_HD void vec(VecOp op, std::int64_t rows, std::int64_t cols, std::int64_t times = 1) {
    const SramBytes b = vector_sram(op, rows, cols, 4, 4);  // every vector operand is fp32
    vops += times * vector_element_ops(op, rows, cols), rd += times * b.read, wr += times * b.write;
  }
  KB_HD void sram(const SramBytes& b) { rd += b.read, wr += b.write; }
};
// What merge_ps's ops count, op for op. Every count is R times one row's (no op has a part
// that does not grow with the rows), so callers scale merge_counts(c, 1).
KB_HD inline Counts merge_counts(const DecodeConfig& c, std::int64_t R) {
  Counts k{0, 0, 0};
  k.vec(VecOp::copy, 1, R, 2), k.vec(VecOp::max, 1, R), k.vec(VecOp::sub, 1, R, 2), k.vec(VecOp::exp, 1, R, 2);
  k.vec(VecOp::mul, 1, R, 2), k.vec(VecOp::add, 1, R), k.vec(VecOp::row_mul, R, dec_dv(c), 2), k.vec(VecOp::add, 1, R * dec_dv(c));
  return k;
}
// A chunk step's counts of n positions, its merge left out: the K and V chunks land in SRAM
// (K alone where V is its first d_v values); S = q K^T (q fp16, K as stored, S fp32), the
// softmax passes over S, O = P V (P fp32, V as stored, O fp32).
KB_HD inline Counts chunk_counts(const DecodeConfig& c, std::int64_t n) {
  const std::int64_t d = c.d_head, dv = dec_dv(c), G = dec_group(c), kvb = dec_kv_bytes(c);
  Counts k{0, 0, dec_kv_width(c) * n * kvb};
  k.sram(matmul_sram(G, n, d, 2, kvb, 4, false));
  k.vec(VecOp::scale, 1, G * n), k.vec(VecOp::row_max, G, n), k.vec(VecOp::row_sub, G, n);
  k.vec(VecOp::exp, 1, G * n), k.vec(VecOp::row_sum, G, n);
  k.sram(matmul_sram(G, dv, n, 4, kvb, 4, false));
  return k;
}

// One chunk step's costs.
struct Chunk {
  ps_t ldk, ldv, mm1, mm2, va, vb, merge;  // merge < 0: the first chunk of a unit (no merge)
  std::int64_t cyc;                        // matrix cycles
};
// `merge`: merge_ps(c, G) where the step merges, else -1.
KB_HD inline Chunk chunk(const DecodeConfig& c, std::int64_t n, ps_t merge, std::int64_t sharers) {
  const std::int64_t d = c.d_head, dv = dec_dv(c), G = dec_group(c);
  const HwConfig& h = c.hw;
  Chunk k;
  k.ldk = shared_transfer_ps(d * n * dec_kv_bytes(c), h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
  k.ldv = dec_kv_shared(c) ? 0 : dv == d ? k.ldk : shared_transfer_ps(dv * n * dec_kv_bytes(c), h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
  const std::int64_t c1 = systolic_cycles(G, n, d, h.matrix_rows, h.matrix_cols, h.dataflow);
  const std::int64_t c2 = systolic_cycles(G, dv, n, h.matrix_rows, h.matrix_cols, h.dataflow);
  k.cyc = c1 + c2;
  k.mm1 = cycles_ps(c1, h.clock_mhz);
  k.mm2 = cycles_ps(c2, h.clock_mhz);
  k.va = vec_ps(c, VecOp::scale, 1, G * n) + vec_ps(c, VecOp::row_max, G, n) + vec_ps(c, VecOp::row_sub, G, n) +
         vec_ps(c, VecOp::exp, 1, G * n);
  k.vb = vec_ps(c, VecOp::row_sum, G, n);
  k.merge = merge;
  return k;
}

// The state after a step: the DMA queue's free time, the last two S = q K^T and O = P V ends
// (the matrix engine is free at the last O's), the vector engine's free time, the last
// row-sum's end.
struct Pipe {
  ps_t d, k1, k2, v1, v2, vec, rs;
};

// `shared`: V is in K's buffer (no V load; K's buffer held until O).
KB_HD inline void step(Pipe& p, const Chunk& k, ps_t lat, bool shared) {
  // K buffer of this slot free: S of two steps ago done (O, where it holds V too).
  const ps_t ks = imax(p.d, shared ? p.v2 : p.k2);
  p.d = ks + k.ldk;
  const ps_t kdone = p.d + lat;
  ps_t vdone = kdone;
  if (!shared) {
    const ps_t vs = imax(p.d, p.v2);  // V buffer: O of two steps ago done
    p.d = vs + k.ldv;
    vdone = p.d + lat;
  }
  const ps_t m1 = imax(imax(p.v1, kdone), p.rs) + k.mm1;  // scores buffer: last row-sum done
  const ps_t exp_end = imax(p.vec, m1) + k.va;
  const ps_t rs = exp_end + k.vb;
  const ps_t m2 = imax(imax(m1, exp_end), vdone) + k.mm2;
  p.vec = k.merge >= 0 ? imax(rs, m2) + k.merge : rs;
  p.k2 = p.k1;
  p.k1 = m1;
  p.v2 = p.v1;
  p.v1 = m2;
  p.rs = rs;
}

KB_HD inline bool same_shape(const Pipe& a, const Pipe& b) {
  return a.k1 - a.d == b.k1 - b.d && a.k2 - a.d == b.k2 - b.d && a.v1 - a.d == b.v1 - b.d &&
         a.v2 - a.d == b.v2 - b.d && a.vec - a.d == b.vec - b.d && a.rs - a.d == b.rs - b.d;
}
KB_HD inline void shift(Pipe& p, ps_t x) {
  p.d += x, p.k1 += x, p.k2 += x, p.v1 += x, p.v2 += x, p.vec += x, p.rs += x;
}

// Applies `block` `count` times, jumping once the state repeats with period 1 or 2 (the
// step map is homogeneous: f(x + c) = f(x) + c).
template <class Block>
KB_HD void repeat(Pipe& p, std::int64_t count, const Block& block) {
  if (count <= 2) {  // no state can repeat before a block that is left to jump over
    for (std::int64_t i = 0; i < count; ++i) block(p);
    return;
  }
  Pipe prev1 = p, prev2 = p;
  for (std::int64_t i = 0; i < count; ++i) {
    block(p);
    const std::int64_t rest = count - 1 - i;
    if (rest == 0) return;
    if (i >= 1 && same_shape(p, prev1)) {
      shift(p, rest * (p.d - prev1.d));
      return;
    }
    if (i >= 2 && same_shape(p, prev2)) {
      shift(p, (rest / 2) * (p.d - prev2.d));
      if (rest % 2) block(p);
      return;
    }
    prev2 = prev1;
    prev1 = p;
  }
}

// Costs the check computes on its way (decode_check), for the evaluation to use again rather
// than recompute: a merge of one unit's G rows, a whole chunk's step at `whole_sharers` HBM
// sharers (every PE of a cube, times the tenants), and the merge and division of the most rows
// a PE holds.
struct Known {
  ps_t merge_g;
  Chunk whole;
  std::int64_t whole_sharers;
  std::int64_t rows;
  ps_t merge_rows, div_rows;
};

// One PE's compute phase: its end times and busy totals.
struct PeRun {
  std::int64_t units, len, sharers;  // the key
  ps_t dma, mm, vec;                 // DMA queue free, last matmul end, vector free
  ps_t matrix_busy, vector_busy, dma_busy;
  std::int64_t cycles, macs, read_bytes;
  Counts counts;
};

// `known`: the check's costs, where the caller has them.
KB_HD inline PeRun run_pe(const DecodeConfig& c, std::int64_t units, std::int64_t len, std::int64_t sharers,
                          const Known* known = nullptr) {
  const HwConfig& h = c.hw;
  const std::int64_t d = c.d_head, dv = dec_dv(c), G = dec_group(c), Lc = c.chunk, R = units * G;
  const bool shared = dec_kv_shared(c);
  const ps_t lat = h.hbm_latency_ns * kPsPerNs;
  const std::int64_t J = ceil_div(len, Lc), first = imin(Lc, len), last = len - (J - 1) * Lc;
  // The first chunk of a unit (no merge), the middle ones and the last. With two chunks or
  // more the first is a whole one (first = Lc), so one costing serves the first two kinds.
  const ps_t merge = known ? known->merge_g : merge_ps(c, G);
  const Chunk km = known && first == c.chunk && sharers == known->whole_sharers ? known->whole : chunk(c, first, merge, sharers);
  Chunk kf = km;
  kf.merge = -1;
  const Chunk kl = last == first ? km : chunk(c, last, merge, sharers);
  PeRun r{units, len, sharers, 0, 0, 0, 0, 0, 0, 0, 0, 0, Counts{0, 0, 0}};
  const ps_t bq = shared_transfer_ps(R * d * 2, h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
  Pipe p{bq, 0, 0, 0, 0, 0, 0};
  auto unit = [&](Pipe& s) {
    step(s, kf, lat, shared);
    if (J >= 3) repeat(s, J - 2, [&](Pipe& t) { step(t, km, lat, shared); });
    if (J >= 2) step(s, kl, lat, shared);
  };
  repeat(p, units, unit);
  r.dma = p.d, r.mm = p.v1, r.vec = p.vec;
  auto add = [&](std::int64_t count, const Chunk& k, std::int64_t n) {
    r.matrix_busy += count * (k.mm1 + k.mm2);
    r.vector_busy += count * (k.va + k.vb + (k.merge >= 0 ? k.merge : 0));
    r.dma_busy += count * (k.ldk + k.ldv);
    r.cycles += count * k.cyc;
    r.macs += count * G * n * (d + dv);
    r.read_bytes += count * n * dec_kv_width(c) * dec_kv_bytes(c);
  };
  add(units, kf, first);
  if (J >= 3) add(units * (J - 2), km, Lc);
  if (J >= 2) add(units, kl, last);
  // Counts: every chunk's, and a merge in all but a unit's first.
  const Counts cf = chunk_counts(c, first);
  r.counts.add(cf, units);
  if (J >= 3) r.counts.add(cf, units * (J - 2));  // a middle chunk is a whole one, as the first is
  if (J >= 2) r.counts.add(last == first ? cf : chunk_counts(c, last), units);
  r.counts.add(merge_counts(c, 1), units * (J - 1) * G);
  r.dma_busy += bq;
  r.read_bytes += R * d * 2;
  r.counts.wr += R * d * 2;  // q, fp16
  return r;
}

}  // namespace dec_detail
}  // namespace kb
