// Batched GQA decode-attention model: the latency and resource totals of the reference decode
// kernels (src/host/families/decode/decode_program.cpp), four ways of sharding the KV cache over the cubes and
// PEs of SIP 0, without building a graph. Pure KB_HD code: no allocation, exceptions, virtual
// calls or recursion.
//
// Each working PE runs flash decoding over its KV shard in chunks: a max-plus recurrence over
// its steps (one step = one chunk of one work unit) on three in-order engines (DMA queue,
// matrix, vector), jumped over once its state repeats (decode_pe.h). The partial results (m, l, O) are then merged up trees whose edges are the collectives' reduce
// to the centre root (collective.h): every tree edge has a port pair or a mesh link of its
// own, so the only contention is at one receiver's copy-queue in-port (children of one PE)
// and, in case 1, on one mesh link (PE positions of one cube sending to the same cube); both
// are single-server queues served ready-first, then by the sending PE, then in issue order,
// which is the reference engine's arbitration (ADR 0007) when every copy of a queue is ready
// at an instant set by an op's completion (docs/model.md section 12).
#pragma once

#include <cstdint>

#include "../../common/energy.h"
#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "../../sim/arbitration.h"
#include "../collective/collective.h"
#include "decode_config.h"
#include "decode_pe.h"

namespace kb {

namespace dec_detail {

// The partials of k children (at most 4) into one receiver's copy-queue in-port, a
// single-server queue. Child j's out-port sends its three copies m, l and O back to back from
// `sent[j]` (busy `bm`, `bm`, `bo`), so they are ready at sent[j], + bm, + 2 bm, and claim
// the in-port as PE `pe[j]` with issues 0, 1, 2. Each child's copies are therefore already in
// goes_first order among themselves, and serving the queue in goes_first order is a k-way
// merge of the children's copies; `landed[j]`: when child j's O, its last, has landed.
KB_HD inline void serve_partials(int k, const ps_t* sent, const std::int64_t* pe, ps_t bm, ps_t bo, ps_t latency,
                                 ps_t* landed) {
  if (k == 1) {  // the in-port is free: each copy starts as it is ready
    landed[0] = sent[0] + 2 * bm + bo + latency;
    return;
  }
  // The children in goes_first order of their first copies (an insertion sort of k <= 4).
  int ord[4];
  for (int i = 0; i < k; ++i) {
    int j = i;
    for (; j > 0 && sim::goes_first(sim::Claim{sent[i], pe[i], 0}, sim::Claim{sent[ord[j - 1]], pe[ord[j - 1]], 0}); --j)
      ord[j] = ord[j - 1];
    ord[j] = i;
  }
  // Where each child's last copy goes before the next child's first, every copy of a child
  // goes before every copy of the next (each child's are in order), so the port serves the
  // children one after another: its three copies back to back from max(sent, free).
  bool apart = true;
  for (int i = 1; i < k; ++i)
    apart = apart && sim::goes_first(sim::Claim{sent[ord[i - 1]] + 2 * bm, pe[ord[i - 1]], 2},
                                     sim::Claim{sent[ord[i]], pe[ord[i]], 0});
  if (apart) {
    ps_t free = 0;
    for (int i = 0; i < k; ++i) {
      const int j = ord[i];
      free = imax(sent[j], free) + 2 * bm + bo;
      landed[j] = free + latency;
    }
    return;
  }
  int next[4] = {0, 0, 0, 0};
  sim::Server port;
  for (int n = 0; n < 3 * k; ++n) {
    int j = -1;
    sim::Claim first{0, 0, 0};
    for (int i = 0; i < k; ++i) {
      if (next[i] == 3) continue;
      const sim::Claim x{sent[i] + next[i] * bm, pe[i], next[i]};
      if (j < 0 || sim::goes_first(x, first)) j = i, first = x;
    }
    const ps_t busy = next[j] == 2 ? bo : bm;
    const ps_t end = port.take(first.ready, busy) + busy;
    if (++next[j] == 3) landed[j] = end + latency;
  }
}
// The messages of one PE's partial (m, l, O) to one receiver over one single-server queue,
// all ready at once: served back to back as a bundle (see reduce_across_cubes).
// Its busy time, the three copies', follows from its rows.
struct Bundle {
  ps_t ready;
  std::int32_t pe;    // the sending PE's position in its cube
  std::int32_t rows;  // R
  KB_HD sim::Claim claim() const { return sim::Claim{ready, pe, 0}; }
};

}  // namespace dec_detail

// Resolves an automatic chunk: the longest power of two from 512 down to 16 (and at most the
// longest shard) whose buffers fit the SRAM; 16 (or the shard) when none does.
KB_HD inline void decode_complete(DecodeConfig& c) {
  if (c.chunk != 0) return;
  if (c.s_kv < 1 || c.h_kv < 1 || c.h_q < 1 || c.batch < 1 || c.d_head < 1 || c.decode_case < 1 || c.decode_case > 4 ||
      c.s_kv > kDecMaxSkv || c.batch > kDecMaxBatch || c.h_q > kDecMaxHeads || c.d_head > kDecMaxDHead ||
      c.d_v < -kDecMaxDHead || c.d_v > kDecMaxDHead || !hw_fits(c.hw)) {
    c.chunk = kDecAutoChunk;  // the check reports the real problem
    return;
  }
  const std::int64_t shard = imax(1, dec_max_shard(c)), rows = dec_max_rows(c);
  std::int64_t lc = kDecAutoChunk;
  while (lc > kDecMinAutoChunk && (lc > shard * 2 || dec_sram_bytes(c, rows, imin(lc, shard)) > c.hw.sram_bytes()))
    lc /= 2;
  c.chunk = imin(lc, shard);
}

// Also gives the costs it computed (`known`, valid when it returns kDecOk).
KB_HD inline std::int32_t decode_check(const DecodeConfig& c, dec_detail::Known& known) {
  const HwConfig& h = c.hw;
  if (!hw_fits(h)) return kDecBadHardware;
  if (c.decode_case < 1 || c.decode_case > 4 || c.allreduce < 0 || c.allreduce > 1) return kDecBadCase;
  if (c.kv_bytes < 0 || c.kv_bytes > 2) return kDecBadShape;
  if (c.d_v < -kDecMaxDHead || c.d_v > kDecMaxDHead || (dec_kv_shared(c) && dec_dv(c) > c.d_head))
    return kDecBadShape;
  if (c.s_kv < 1 || c.s_kv > kDecMaxSkv || c.batch < 1 || c.batch > kDecMaxBatch || c.h_q < 1 ||
      c.h_q > kDecMaxHeads || c.h_kv < 1 || c.h_kv > c.h_q || c.h_q % c.h_kv != 0 || c.d_head < 1 ||
      c.d_head > kDecMaxDHead)
    return kDecBadShape;
  if (h.cubes_per_sip() > kDecMaxGrid || h.pes_per_cube() > kDecMaxGrid || h.cubes_per_sip() * h.pes_per_cube() > kDecMaxPes)
    return kDecTooLarge;
  if (c.s_kv < dec_kv_parts(c)) return kDecShortKv;
  if (c.chunk < 1 || c.chunk > c.s_kv) return kDecBadChunk;
  if (c.allreduce && dec_case(c) != DecodeCase::cube_sp_pe_sp) return kDecBadAllreduce;
  const std::int64_t G = dec_group(c), rows = dec_max_rows(c), shard = dec_max_shard(c), lc = imin(c.chunk, shard);
  if (dec_sram_bytes(c, rows, lc, G, rows) > h.sram_bytes()) return kDecSramOverflow;
  if (dec_kv_max_cube_bytes(c) + dec_qo_cube_bytes(c) > h.hbm_capacity_bytes()) return kDecHbmOverflow;
  // Every op's time must be representable, and so the sum of every op's busy time and latency
  // (a bound on any finish time): the largest transfer at the smallest share, the largest
  // matmul and vector op, times the ops of the busiest PE, times the PEs.
  // big > floor(limit / x) exactly when big x > limit, which factors below 2^31 compare
  // without a division.
  const std::int64_t d = imax(c.d_head, dec_dv(c)), P = h.pes_per_cube() * h.tenants();
  const std::int64_t big = imax(imax(d * c.chunk * 2, rows * d * 4), 8), x = kPsPerNs * P * 4;
  if (((big | x) >> 31) == 0 ? big * x > kTimeLimitPs : big > kTimeLimitPs / x) return kDecTimeOverflow;
  known.merge_g = dec_detail::merge_ps(c, G);
  known.whole = dec_detail::chunk(c, c.chunk, known.merge_g, P);
  known.whole_sharers = P;
  known.rows = rows;
  known.merge_rows = dec_detail::merge_ps(c, rows);
  known.div_rows = dec_detail::vec_ps(c, VecOp::row_div, rows, dec_dv(c));
  const dec_detail::Chunk& k = known.whole;
  const std::int64_t steps = sat_mul(ceil_div(rows, G), ceil_div(shard, c.chunk));
  if (4 * dec_units(c) * c.s_kv * d > kTimeLimitPs / kPsPerNs) return kDecTimeOverflow;  // the bounds' bytes
  ps_t per_step = k.ldk + k.ldv + k.mm1 + k.mm2 + k.va + k.vb + k.merge + 2 * h.hbm_latency_ns * kPsPerNs;
  const ps_t comm = 4 * (transfer_ps(rows * (2 + d) * 4, imin(h.ipcq.bandwidth_gbps, h.cube_link.bandwidth_gbps)) +
                         (h.ipcq.latency_ns + h.cube_link.latency_ns + h.hbm_latency_ns) * kPsPerNs) +
                    known.merge_rows + known.div_rows +
                    shared_transfer_ps(rows * d * 4, h.dma_gbps(), h.hbm_bandwidth_gbps, P);
  const ps_t bound = sat_mul(sat_add(sat_mul(steps, per_step), comm), h.cubes_per_sip() * P + 1);
  if (bound >= kTimeLimitPs) return kDecTimeOverflow;
  return kDecOk;
}
KB_HD inline std::int32_t decode_check(const DecodeConfig& c) {
  dec_detail::Known known;
  return decode_check(c, known);
}

namespace dec_detail {

// One decode evaluation as its phases run: each PE's compute, the reduce within cubes, the
// reduce across cubes (or the answers where no reduce is needed), and the stores; the state
// of every PE, the HBM sharers of every cube, and the result they add up to.
//
// A PE's state is two numbers (12 bytes, so every PE of the largest SIP fits in 12 KiB):
// - t: when its partial (m, l, O) may leave, which is when its matrix and vector engines are
//   both free (its compute's last op, or its last merge, done); every later op of the PE
//   starts at t or later, so the engines' separate free times are not needed;
// - rows: R = units x G (0: no work).
// Its DMA queue's free time is not kept either: the queue's last op is the PE's last load,
// which ends before the matmul that reads it, so before t; a store, the only later DMA op,
// starts when the answer is ready (docs/model.md section 12.5).
// `kPes`: the PEs of a SIP the state holds (kDecMaxPes: any config decode_check accepts; fewer:
// the small state nested in another model's first stage, decode_model_small).
template <std::int64_t kPes>
struct DecodeEvalT {
  const DecodeConfig& c;
  const HwConfig& h;
  std::int64_t C, P, d;
  ps_t lat, ipcq_lat, link_lat;
  ps_t t[kPes];
  std::int32_t rows[kPes];  // at most kDecMaxBatch x kDecMaxHeads
  std::int32_t sharers_of[kDecMaxGrid];  // at most kDecMaxGrid x kMaxGrid
  // Cube q's PEs have the states of cube rep[q]'s (rep[q] <= q; rep[q] == q: its own).
  std::int8_t rep[kDecMaxGrid];
  // Cubes that are others' representatives (at most kCubeKinds): their keys and the totals
  // a phase added for them (compute's, then each per_kind phase's in turn).
  static constexpr int kCubeKinds = 4;  // distinct keys remembered (a split has at most 3)
  int nkinds = 0;
  std::int64_t kind_key[kCubeKinds];
  std::int8_t kind_cube[kCubeKinds];
  // The last costs asked for, by what they depend on: a merge's and an answer's division
  // (rows; to begin with, the check's for the most rows), a store's (rows, sharers), a
  // partial's copy over a cube link (rows). Neighbouring PEs mostly ask for the same.
  std::int64_t merge_rows, div_rows, store_rows = -1, store_sharers = -1, link_rows = -1, ipcq_rows = -1;
  ps_t merge_time, div_time, store_time = 0, link_time = 0, ipcq_m = 0, ipcq_o = 0;
  DecodeResult& r;     // the caller's, zeroed word by word (zero_words): a brace-initialised one this size became rep stos
  Counts merge_unit;  // merge_counts(c, 1): a merge of R rows counts R times it
  Counts div_unit;    // an answer's division of one row (row_div over d values): R rows, R times it
  // Rows merged and divided so far: their counts are added once, at the end (counts()).
  std::int64_t merged_rows = 0, divided_rows = 0;

  bool cubes_apart;  // every cube evaluated on its own (tests compare it with the sharing)

  const Known& known;  // the check's costs

  KB_HD DecodeEvalT(const DecodeConfig& config, const Known& k, DecodeResult& out, bool apart = false)
      : c(config), h(config.hw), C(config.hw.cubes_per_sip()), P(config.hw.pes_per_cube()), d(dec_dv(config)),
        lat(config.hw.hbm_latency_ns * kPsPerNs), ipcq_lat(config.hw.ipcq.latency_ns * kPsPerNs),
        link_lat(config.hw.cube_link.latency_ns * kPsPerNs), merge_rows(k.rows), div_rows(k.rows),
        merge_time(k.merge_rows), div_time(k.div_rows), r(out), merge_unit(merge_counts(config, 1)), div_unit{0, 0, 0},
        cubes_apart(apart), known(k) {
    zero_words(r);
    div_unit.vec(VecOp::row_div, 1, d);
  }

  KB_HD void done(ps_t end) { r.latency_ps = imax(r.latency_ps, end); }
  // Adds the counts of every merge and division (each R rows times one row's).
  KB_HD void counts() {
    add(merge_unit, merged_rows), add(div_unit, divided_rows);
    merged_rows = divided_rows = 0;
  }

  // The totals a phase adds per cube, for a representative's to be repeated by the cubes
  // like it (every time and total of theirs is the same; maxima such as the latency too).
  struct Tally {
    ps_t matrix_busy, vector_busy, dma_busy;
    std::int64_t mac_cycles, macs, hbm_read_bytes, hbm_write_bytes, copies_pe, link_bytes_pe, working_pes;
    std::int64_t vector_ops, sram_read_bytes, sram_write_bytes;
    std::int64_t merged_rows, divided_rows;
  };
  Tally kind_sums[kCubeKinds];  // per kind_cube: what its last phase added to r
  KB_HD Tally tally() const {
    return Tally{r.matrix_busy_ps, r.vector_busy_ps, r.dma_busy_ps,   r.mac_cycles,    r.macs,
                 r.hbm_read_bytes, r.hbm_write_bytes, r.copies_pe, r.link_bytes_pe, r.working_pes,
                 r.vector_ops,     r.sram_read_bytes, r.sram_write_bytes, merged_rows,   divided_rows};
  }
  KB_HD static Tally minus(const Tally& b, const Tally& a) {
    return Tally{b.matrix_busy - a.matrix_busy,         b.vector_busy - a.vector_busy,
                 b.dma_busy - a.dma_busy,               b.mac_cycles - a.mac_cycles,
                 b.macs - a.macs,                       b.hbm_read_bytes - a.hbm_read_bytes,
                 b.hbm_write_bytes - a.hbm_write_bytes, b.copies_pe - a.copies_pe,
                 b.link_bytes_pe - a.link_bytes_pe,     b.working_pes - a.working_pes,
                 b.vector_ops - a.vector_ops,           b.sram_read_bytes - a.sram_read_bytes,
                 b.sram_write_bytes - a.sram_write_bytes, b.merged_rows - a.merged_rows,
                 b.divided_rows - a.divided_rows};
  }
  KB_HD void add(const Tally& x, std::int64_t n = 1) {
    r.matrix_busy_ps += n * x.matrix_busy, r.vector_busy_ps += n * x.vector_busy, r.dma_busy_ps += n * x.dma_busy;
    r.mac_cycles += n * x.mac_cycles, r.macs += n * x.macs, r.hbm_read_bytes += n * x.hbm_read_bytes;
    r.hbm_write_bytes += n * x.hbm_write_bytes, r.copies_pe += n * x.copies_pe, r.link_bytes_pe += n * x.link_bytes_pe;
    r.working_pes += n * x.working_pes;
    r.vector_ops += n * x.vector_ops, r.sram_read_bytes += n * x.sram_read_bytes,
        r.sram_write_bytes += n * x.sram_write_bytes;
    merged_rows += n * x.merged_rows, divided_rows += n * x.divided_rows;
  }
  KB_HD void add(const Counts& k, std::int64_t times = 1) {
    r.vector_ops += times * k.vops, r.sram_read_bytes += times * k.rd, r.sram_write_bytes += times * k.wr;
  }
  // A copy of `bytes` from one PE's SRAM to another's.
  KB_HD void sram_copy(std::int64_t bytes) { r.sram_read_bytes += bytes, r.sram_write_bytes += bytes; }

  // Compute: PEs alike (units, shard length, HBM sharers) share one evaluation, and cubes
  // alike (cube_key) share their PEs' states: a cube like an earlier one, its representative
  // rep[q], adds the same totals, and its states are the representative's until a phase
  // needs them apart (materialize). Out of line on the device, as the cross-cube reduce.
  KB_HD KB_NOINLINE void compute() {
    const std::int64_t G = dec_group(c);
    PeRun cache[4];
    int ncache = 0, next = 0;
    // Cubes like an earlier one, per kind; PEs of the current cube, per cache entry: their
    // totals are added once, times the count (the same sums as adding them one by one).
    std::int64_t alike[kCubeKinds] = {0, 0, 0, 0}, used[4] = {0, 0, 0, 0};
    auto flush = [&](int j) {
      const PeRun& e = cache[j];
      const std::int64_t n = used[j];
      r.matrix_busy_ps += n * e.matrix_busy, r.vector_busy_ps += n * e.vector_busy, r.dma_busy_ps += n * e.dma_busy;
      r.mac_cycles += n * e.cycles, r.macs += n * e.macs, r.hbm_read_bytes += n * e.read_bytes;
      add(e.counts, n);
      r.latency_ps = imax(r.latency_ps, imax(e.mm, imax(e.vec, e.dma + lat)));
      r.working_pes += n;
      used[j] = 0;
    };
    for (std::int64_t q = 0; q < C; ++q) {
      const std::int64_t key = cube_key(q);
      int hit_cube = -1;
      for (int i = 0; i < nkinds; ++i)
        if (kind_key[i] == key) hit_cube = i;
      if (hit_cube >= 0) {
        rep[q] = kind_cube[hit_cube];
        sharers_of[q] = sharers_of[rep[q]];
        ++alike[hit_cube];
        continue;
      }
      rep[q] = static_cast<std::int8_t>(q);
      const Tally before = tally();
      // Each PE's work lengths, held until its state replaces them: units in rows[i], the KV
      // shard's length in t[i] (0 and 0: no work).
      std::int64_t sharers = 0;
      dec_cube_works_each(c, q, [&](std::int64_t p, const DecWork& w) {
        const bool works = dec_works(w);
        rows[q * P + p] = works ? static_cast<std::int32_t>(w.units.len) : 0;
        t[q * P + p] = works ? w.kv.len : 0;
        sharers += works;
      });
      sharers *= h.tenants();  // identical launches beside this one share the cube too
      sharers_of[q] = static_cast<std::int32_t>(sharers);
      // Runs of neighbouring PEs with the same work: one lookup a run.
      for (std::int64_t p = 0, end = 0; p < P; p = end) {
        const std::int64_t units = rows[q * P + p], len = t[q * P + p];
        for (end = p + 1; end < P && rows[q * P + end] == units && t[q * P + end] == len;) ++end;
        if (units == 0) continue;
        int hit = -1;
        for (int j = 0; j < ncache; ++j)
          if (cache[j].units == units && cache[j].len == len && cache[j].sharers == sharers) hit = j;
        if (hit < 0) {
          hit = next;
          if (used[hit]) flush(hit);
          cache[hit] = run_pe(c, units, len, sharers, &known);
          next = (next + 1) % 4;
          if (ncache < 4) ++ncache;
        }
        const PeRun& e = cache[hit];
        const ps_t free = imax(e.vec, e.mm);
        const std::int32_t R = static_cast<std::int32_t>(units * G);
        for (std::int64_t i = q * P + p; i < q * P + end; ++i) t[i] = free, rows[i] = R;
        used[hit] += end - p;
      }
      for (int j = 0; j < ncache; ++j)
        if (used[j]) flush(j);
      if (nkinds < kCubeKinds)
        kind_key[nkinds] = key, kind_cube[nkinds] = static_cast<std::int8_t>(q), kind_sums[nkinds++] = minus(tally(), before);
    }
    for (int i = 0; i < nkinds; ++i) add(kind_sums[i], alike[i]);
  }

  // What decides a cube's PEs' work lengths (dec_cube_works), and so their states and the
  // cube's HBM sharers: cubes with equal keys compute alike. Cases 1 and 4: the length of the
  // cube's part of S_kv; case 2: how many of its units are left for the cube (0..P x block);
  // case 3: the cube's units.
  KB_HD std::int64_t cube_key(std::int64_t q) const {
    if (cubes_apart) return -1 - q;  // a key no other cube has
    const std::int64_t U = dec_units(c);
    switch (dec_case(c)) {
      case DecodeCase::cube_repl_pe_tp: {
        const std::int64_t k = ceil_div(U, C * P);
        return imin(P * k, imax(0, U - q * P * k));
      }
      case DecodeCase::cube_repl_pe_sp: return U >= C ? dec_block(U, C, q).len : 1;
      default: return dec_part(c.s_kv, C, q).len;
    }
  }

  // Merges one child's partial into PE i, arriving at `arrival`.
  KB_HD void merge_one(std::int64_t i, ps_t arrival) {
    const std::int64_t R = rows[i];
    if (R != merge_rows) merge_rows = R, merge_time = merge_ps(c, R);
    t[i] = imax(t[i], arrival) + merge_time;
    r.vector_busy_ps += merge_time;
    merged_rows += R;
  }

  // The answer: O / l on the PE once its partial is complete at `ready`, then (when it
  // writes) a store of O (f16) through its DMA queue. Returns the division's end.
  KB_HD ps_t finish(ps_t ready, std::int64_t R, std::int64_t cube, bool writes) {
    if (R != div_rows) div_rows = R, div_time = vec_ps(c, VecOp::row_div, R, d);
    const ps_t end = ready + div_time;
    r.vector_busy_ps += div_time;
    divided_rows += R;
    done(end);
    if (writes) store(end, R, cube);
    return end;
  }

  // A store of `R` rows of O (f16) through a DMA queue that is free by `ready`, when the
  // answer is there.
  KB_HD void store(ps_t ready, std::int64_t R, std::int64_t cube) {
    if (R != store_rows || sharers_of[cube] != store_sharers) {
      store_rows = R, store_sharers = sharers_of[cube];
      store_time = shared_transfer_ps(R * d * 2, h.dma_gbps(), h.hbm_bandwidth_gbps, store_sharers);
    }
    r.dma_busy_ps += store_time;
    r.hbm_write_bytes += R * d * 2;
    r.sram_read_bytes += R * d * 4;  // from the fp32 answer
    done(ready + store_time + lat);
  }

  // One cube's PEs reduce to its centre PE over the PE tree.
  KB_HD void reduce_cube(std::int64_t q, const DecPlan& plan) {
    for (int i = 0; i < plan.n; ++i) {
      const std::int64_t n = plan.node[i];
      std::int64_t ch[4];
      const int k = plan.children(i, ch);
      const std::int64_t R = rows[q * P + n];
      if (R != ipcq_rows) ipcq_rows = R, ipcq_m = transfer_ps(R * 4, h.ipcq.bandwidth_gbps), ipcq_o = transfer_ps(R * d * 4, h.ipcq.bandwidth_gbps);
      ps_t sent[4], arrival[4];
      for (int j = 0; j < k; ++j) sent[j] = t[q * P + ch[j]];
      r.copies_pe += 3 * k;
      r.link_bytes_pe += k * R * (2 + d) * 4;
      sram_copy(k * R * (2 + d) * 4);
      serve_partials(k, sent, ch, ipcq_m, ipcq_o, ipcq_lat, arrival);  // every claim is known: the senders' last ops are done
      for (int j = 0; j < k; ++j) merge_one(q * P + n, arrival[j]);  // children in order
    }
  }

  // Runs phase(q) on each representative cube and adds its totals again for every cube whose
  // states are that cube's (rep[q] < q). Only cubes compute() remembered (kind_cube) can be
  // another's representative, and they come first in cube order.
  template <class Phase>
  KB_HD void per_kind(const Phase& phase) {
    for (std::int64_t q = 0; q < C; ++q) {
      if (rep[q] != q) {
        for (int i = 0; i < nkinds; ++i)
          if (kind_cube[i] == rep[q]) add(kind_sums[i]);
        continue;
      }
      const Tally before = tally();
      phase(q);
      for (int i = 0; i < nkinds; ++i)
        if (kind_cube[i] == q) kind_sums[i] = minus(tally(), before);
    }
  }
  // The positions among `lo`..`hi` - 1 where some cube has work, in order: the representatives'
  // (a cube's states are its representative's). Returns how many.
  KB_HD int working_positions(std::int64_t lo, std::int64_t hi, std::int8_t* act) const {
    std::int8_t reps[kDecMaxGrid];
    int nr = 0;
    for (std::int64_t q = 0; q < C; ++q)
      if (rep[q] == q) reps[nr++] = static_cast<std::int8_t>(q);
    int na = 0;
    for (std::int64_t p = lo; p < hi; ++p) {
      bool any = false;
      for (int j = 0; j < nr && !any; ++j) any = rows[reps[j] * P + p] != 0;
      if (any) act[na++] = static_cast<std::int8_t>(p);
    }
    return na;
  }
  // Gives every cube its own copy of its representative's states at the positions `act`, for
  // the phases that change cubes apart; the other positions of such a cube are left unset (no
  // cube has work there).
  KB_HD void materialize(const std::int8_t* act, int na) {
    for (std::int64_t q = 0; q < C; ++q) {
      if (rep[q] == q) continue;
      for (int a = 0; a < na; ++a) {
        const std::int64_t p = act[a];
        t[q * P + p] = t[rep[q] * P + p], rows[q * P + p] = rows[rep[q] * P + p];
      }
      rep[q] = static_cast<std::int8_t>(q);
    }
  }

  // Intra-cube reduce (cases 3 and 4): each cube's PEs to its centre PE; a cube like an
  // earlier one reduces alike.
  KB_HD void reduce_in_cubes(const DecTree& pt) {
    const DecPlan plan(pt);
    per_kind([&](std::int64_t q) {
      if (rows[q * P] != 0) reduce_cube(q, plan);  // a cube without units (case 3) has none
    });
  }

  // Cross-cube reduce (cases 1 and 4): PE position p of each cube to the centre cube's; in
  // case 4 only the cubes' centre PEs, each waiting until the receiver's inboxes are free.
  // A child cube's positions share its one link to the parent, a single-server queue. Each
  // position sends m, l and O all ready at once (issues 0, 1, 2), and no other position's
  // claim has its PE, so goes_first puts the three together, in issue order: once the first
  // starts the other two follow back to back. The queue therefore serves each position's
  // three copies as one bundle of their summed busy time, in goes_first order of the
  // bundles' first claims, and O, the last, lands at the bundle's end plus the latency.
  // Every child's partial is merged in turn (left, right, top, bottom), by every position
  // that has work, arriving at 0 from a child position without work.
  // `act`: the positions that take part and have work in some cube (the rest never send or
  // merge), `na` of them.
  KB_HD KB_NOINLINE void reduce_across_cubes(std::int64_t pr, const DecTree& ct, bool flow, const std::int8_t* act, int na) {
    const DecPlan plan(ct);
    for (int i = 0; i < plan.n; ++i) {
      const std::int64_t x = plan.node[i];
      std::int64_t ch[4];
      const int k = plan.children(i, ch);
      const ps_t free_x = flow ? t[x * P + pr] : 0;  // case 4: when x's centre PE has merged its own cube
      for (int j = 0; j < k; ++j) {
        // One per PE position of a cube: a reduce across cubes has two cubes or more, so at
        // most kPes / 2 positions.
        Bundle b[kPes / 2 < kDecMaxGrid ? kPes / 2 : kDecMaxGrid];
        int nb = 0;
        std::int64_t sent_rows = 0;
        for (int a = 0; a < na; ++a) {
          const std::int64_t p = act[a], s = ch[j] * P + p, R = rows[s];
          if (R == 0) {  // no partial from this child: a position that has work merges as if it came at 0
            if (rows[x * P + p] != 0) merge_one(x * P + p, 0);
            continue;
          }
          b[nb++] = Bundle{flow ? imax(t[s], free_x) : t[s], static_cast<std::int32_t>(p), rows[s]};
          sent_rows += R;
        }
        r.copies_cube += 3 * nb;
        r.link_bytes_cube += sent_rows * (2 + d) * 4;
        sram_copy(sent_rows * (2 + d) * 4);
        sim::serve_all(b, nb, link_lat, [&](const Bundle& x) { return link_busy(x.rows); });
        for (int e = 0; e < nb; ++e)  // one child's merges: positions apart, so in any order
          if (rows[x * P + b[e].pe] != 0) merge_one(x * P + b[e].pe, b[e].ready);
      }
    }
  }

  // A partial's three copies over a cube link (m and l, then O, f32), for R rows; neighbouring
  // positions mostly hold as many rows.
  KB_HD ps_t link_busy(std::int64_t R) {
    if (R != link_rows) link_rows = R, link_time = 2 * transfer_ps(R * 4, h.cube_link.bandwidth_gbps) + transfer_ps(R * d * 4, h.cube_link.bandwidth_gbps);
    return link_time;
  }

  // Allreduce: O (f32) broadcast from the root cube's centre PE down the cube tree; every
  // cube stores its answer.
  // Each edge carries one copy, after the copy into its parent: cube q has it `depth` copies
  // after the root's division.
  KB_HD void broadcast_answer(std::int64_t rc, std::int64_t pr, const DecTree& ct) {
    const std::int64_t R = rows[rc * P + pr];
    const ps_t root = finish(t[rc * P + pr], R, rc, false);
    const ps_t hop = transfer_ps(R * d * 4, h.cube_link.bandwidth_gbps) + link_lat;
    for (std::int64_t q = 0; q < C; ++q) {
      std::int64_t depth = 0;
      for (std::int64_t n = q; n != rc; n = ct.parent(n)) ++depth;
      const ps_t got = root + depth * hop;
      if (q != rc) {
        r.copies_cube += 1;
        r.link_bytes_cube += R * d * 4;
        sram_copy(R * d * 4);
        done(got);
      }
      store(got, R, q);
    }
  }

  // The answers, by case: where they are and who stores them.
  KB_HD void answer(DecodeCase kase, const DecTree& pt, const DecTree& ct) {
    const std::int64_t pr = pt.root();
    if (kase == DecodeCase::cube_repl_pe_tp) {
      per_kind([&](std::int64_t q) {
        for (std::int64_t p = 0; p < P; ++p)
          if (rows[q * P + p] > 0) finish(t[q * P + p], rows[q * P + p], q, true);
      });
      return;
    }
    if (kase == DecodeCase::cube_repl_pe_sp) {
      for (std::int64_t q = 0; q < C; ++q) {  // whether a cube writes is its own
        const std::int64_t s = rep[q] * P + pr;
        if (rows[s] > 0) finish(t[s], rows[s], q, dec_writer(c, q));
      }
      return;
    }
    const bool flow = kase == DecodeCase::cube_sp_pe_sp;
    std::int8_t act[kDecMaxGrid] = {};
    int na = 1;  // case 4: the centre PEs only (each cube has work there: one part of S_kv)
    if (flow) act[0] = static_cast<std::int8_t>(pr);
    else na = working_positions(0, P, act);
    materialize(act, na);
    reduce_across_cubes(pr, ct, flow, act, na);
    const std::int64_t rc = ct.root();
    if (kase == DecodeCase::cube_sp_pe_tp) {
      for (int a = 0; a < na; ++a) {
        const std::int64_t i = rc * P + act[a];
        if (rows[i] > 0) finish(t[i], rows[i], rc, true);
      }
    } else if (!c.allreduce) {
      finish(t[rc * P + pr], rows[rc * P + pr], rc, true);
    } else {
      broadcast_answer(rc, pr, ct);
    }
  }
};

using DecodeEval = DecodeEvalT<kDecMaxPes>;

// The PEs of a SIP the small state holds: decode nested in another model's first stage
// (llm_model.h), whose own state shares the 16 KiB (docs/adr/0023-two-stage-evaluation.md).
constexpr std::int64_t kDecSmallPes = 256;
// The PEs of a SIP decode's own first stage holds (DecodeModel::evaluate_small): a state in
// 4 KiB of a device thread's local memory (docs/adr/0023-two-stage-evaluation.md). The
// topologies shipped have 64 PEs a SIP.
constexpr std::int64_t kDecFirstPes = 64;

}  // namespace dec_detail

// The model in a state of kPes PEs; a config with more PEs a SIP than it holds is
// kStatusDeferred (after its check: a config decode_check refuses has its own status).
// `cubes_apart`: evaluate every cube on its own rather than once per kind (the same result;
// tests compare the two).
template <std::int64_t kPes>
KB_HD inline DecodeResult decode_model_in(const DecodeConfig& c, bool cubes_apart = false) {
  DecodeResult r;  // one object returned on every path, which compilers build in place
  dec_detail::Known known;
  std::int32_t status = decode_check(c, known);
  if (status == kDecOk && c.hw.cubes_per_sip() * c.hw.pes_per_cube() > kPes) status = kStatusDeferred;
  if (status != kDecOk) {
    zero_words(r);
    r.status = status;
    return r;
  }
  dec_detail::DecodeEvalT<kPes> e(c, known, r, cubes_apart);
  e.compute();
  const DecTree pt = dec_pe_tree(c), ct = dec_cube_tree(c);
  if (dec_intra_reduce(c)) e.reduce_in_cubes(pt);
  e.answer(dec_case(c), pt, ct);
  e.counts();
  r.kv_footprint_bytes = dec_kv_total_bytes(c);
  r.kv_max_cube_bytes = dec_kv_max_cube_bytes(c);
  return r;
}
KB_HD inline DecodeResult decode_model(const DecodeConfig& c, bool cubes_apart = false) {
  return decode_model_in<kDecMaxPes>(c, cubes_apart);
}
// The same in the small state (dec_detail::kDecSmallPes PEs), or kStatusDeferred: decode
// nested in the llm model's first stage.
KB_HD KB_NOINLINE inline DecodeResult decode_model_small(const DecodeConfig& c) {
  return decode_model_in<dec_detail::kDecSmallPes>(c);
}

// The family as the generic sweep engine sees it (src/device/sweep/).
struct DecodeModel {
  using Config = DecodeConfig;
  using Result = DecodeResult;
  static constexpr int kStatuses = kDecStatusCount;
  static constexpr bool kCounts = true;
  KB_HD static void complete(Config& c) { decode_complete(c); }
  KB_HD static KB_NOINLINE Result evaluate(const Config& c) { return decode_model(c); }
  // Two stages where a system runs one config per work item (two_stage.h, the CUDA backend):
  // a SIP of at most kDecFirstPes PEs in the first, a larger one deferred to `evaluate`.
  KB_HD static KB_NOINLINE Result evaluate_small(const Config& c) {
    return decode_model_in<dec_detail::kDecFirstPes>(c);
  }
  KB_HD static std::int64_t cost(std::int32_t kind, const Config& c, const Result& r) {
    switch (kind) {
      case kDecCostFootprint: return r.kv_footprint_bytes;
      case kDecCostLinkBytes: return r.link_bytes_pe + r.link_bytes_cube + r.link_bytes_sip;
      case kDecCostPes: return r.working_pes;
      default: (void)c; return 0;
    }
  }
  KB_HD static Actions actions(const Config&, const Result& r) {
    return Actions{r.macs,           r.vector_ops,     r.sram_read_bytes, r.sram_write_bytes, r.hbm_read_bytes,
                   r.hbm_write_bytes, r.link_bytes_pe, r.link_bytes_cube, r.link_bytes_sip};
  }
  KB_HD static Energy energy(const Config& c, const Result& r) { return energy_of(c.hw, actions(c, r), r.latency_ps); }
};

}  // namespace kb
