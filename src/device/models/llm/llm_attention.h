// Causal prefill attention of a whole model's layer program on one tensor-parallel rank
// (docs/model.md section 13.6): flash attention over tiles. The prompt of T tokens is cut into
// query tiles of `tile` tokens; a work item is one tile of one sequence's KV head's query
// heads, `heads` of its G at a time: heads x tile tokens as R rows, against the keys and
// values of every position up to the tile's last token, in chunks of `tile` positions. The causal mask skips every block above
// the diagonal (about half of them); the diagonal block is computed whole, its upper half
// masked. Items are dealt to the rank's PEs longest first, in a snake (round r gives PE p the
// item r n + p, or r n + n - 1 - p in odd rounds), and a PE runs its items in turn: load the
// tile's queries, run flash decoding's chunk loop over its positions (the decode family's
// steps, src/device/models/decode/decode_model.h), divide by the row sums, store the answer.
// The deal and the shapes are shared with the reference program (llm_program.cpp), as routes
// are; the timing is the decode family's per-PE recurrence, which its own reference checks.
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "../decode/decode_model.h"

namespace kb {

// One causal attention kernel on one rank: `hw` is the rank's (one SIP: its cubes and PEs).
struct LlmAttnConfig {
  HwConfig hw;
  std::int64_t batch, q_heads, kv_heads, head_dim, prompt;
  std::int64_t tile;   // tokens a query tile and positions a KV chunk; 0: automatic (llm_attn_complete)
  std::int64_t heads;  // query heads an item holds, dividing the group's; 0: automatic
  std::int64_t v_dim = 0;  // a value head's width (0: head_dim; latent attention's prefill: 128 to q and k's 192)
  // Positions of each sequence cached before the prompt's tokens (a chunk of a prompt whose
  // first `prior` tokens an earlier step took: chunked prefill): every query attends to them
  // too, and its own position is prior + its index.
  std::int64_t prior = 0;
};
KB_HD constexpr std::int64_t llm_attn_dv(const LlmAttnConfig& c) { return c.v_dim > 0 ? c.v_dim : c.head_dim; }

struct LlmAttnResult {
  std::int32_t status;
  std::int32_t reserved;
  ps_t latency_ps;
  ps_t matrix_busy_ps, vector_busy_ps, dma_busy_ps;  // summed over PEs
  std::int64_t macs;                                 // the causal pairs' (the masked half of diagonal blocks not counted)
  std::int64_t hbm_read_bytes, hbm_write_bytes;
  std::int64_t vector_ops, sram_read_bytes, sram_write_bytes;  // counted actions (docs/model.md section 14)
};

constexpr std::int64_t kLlmAttnMaxTile = 256, kLlmAttnMinSplitTile = 32, kLlmAttnMaxItems = INT64_C(1) << 24;

// 0 valid, 1 bad field, 2 a tile's buffers do not fit a PE's SRAM, 3 more items than a model
// walks, 4 times could pass int64.
enum LlmAttnStatus : std::int32_t { kLlmAttnOk = 0, kLlmAttnBadField, kLlmAttnSramOverflow, kLlmAttnTooLarge, kLlmAttnTimeOverflow };

KB_HD inline std::int64_t llm_attn_group(const LlmAttnConfig& c) { return c.q_heads / c.kv_heads; }
// Streams: a sequence's KV head's query heads, `heads` at a time (an item is one tile of one).
KB_HD inline std::int64_t llm_attn_units(const LlmAttnConfig& c) { return c.batch * c.kv_heads * (llm_attn_group(c) / c.heads); }
KB_HD inline std::int64_t llm_attn_tiles(const LlmAttnConfig& c) { return ceil_div(c.prompt, c.tile); }
KB_HD inline std::int64_t llm_attn_items(const LlmAttnConfig& c) { return llm_attn_units(c) * llm_attn_tiles(c); }
KB_HD inline std::int64_t llm_attn_pes(const LlmAttnConfig& c) { return c.hw.cubes_per_sip() * c.hw.pes_per_cube(); }
// Causal query-key pairs of one sequence's head: each of the P tokens with the prior
// positions and those of the prompt up to it (saturating).
KB_HD inline std::int64_t llm_attn_pairs(const LlmAttnConfig& c) {
  const std::int64_t P = c.prompt, own = P % 2 == 0 ? sat_mul(P / 2, P + 1) : sat_mul(P, (P + 1) / 2);
  return sat_add(sat_mul(P, c.prior), own);
}

// SRAM of a PE for tiles of t tokens of h heads: the queries (f16), K and V chunks (f16, two
// each), the scores (f32), a chunk's (m, l, O), and the accumulated (m, l, O) with a scratch
// row (f32): flash decoding's buffers (dec_sram_bytes) for R = t h rows.
KB_HD inline std::int64_t llm_attn_sram_bytes(const LlmAttnConfig& c, std::int64_t t, std::int64_t h) {
  const std::int64_t d = c.head_dim, dv = llm_attn_dv(c), R = t * h;
  return R * d * 2 + 4 * (d + dv) * t + R * t * 4 + R * dv * 4 + 2 * R * 4 + R * (3 + dv) * 4;
}

// Item k (0 .. items - 1), longest first: tile i (from the last) of stream u (batch-major,
// then KV head, then the slice of its query heads).
struct LlmAttnItem {
  std::int64_t unit, tile;
  std::int64_t first, tokens;  // the tile's query tokens [first, first + tokens)
  std::int64_t positions;      // KV positions it attends to: prior + first + tokens (causal)
};
KB_HD inline LlmAttnItem llm_attn_item(const LlmAttnConfig& c, std::int64_t k) {
  const std::int64_t U = llm_attn_units(c), i = llm_attn_tiles(c) - 1 - k / U, first = i * c.tile;
  const std::int64_t tokens = imin(c.tile, c.prompt - first);
  return LlmAttnItem{k % U, i, first, tokens, c.prior + first + tokens};
}
// The item PE g runs in round r (-1: none): the snake deal.
KB_HD inline std::int64_t llm_attn_item_of(const LlmAttnConfig& c, std::int64_t g, std::int64_t r) {
  const std::int64_t n = llm_attn_pes(c), k = r * n + (r % 2 == 0 ? g : n - 1 - g);
  return k < llm_attn_items(c) ? k : -1;
}
// PEs of cube q with work: they share its HBM.
KB_HD inline std::int64_t llm_attn_sharers(const LlmAttnConfig& c, std::int64_t q) {
  const std::int64_t P = c.hw.pes_per_cube(), busy = imin(llm_attn_items(c), llm_attn_pes(c));
  return imax(0, imin(P, busy - q * P)) * c.hw.tenants();
}

// The automatic tile for items of h heads: the largest power of two from 256 down (at most
// the prompt rounded up to one) whose buffers fit the SRAM; 1 when none does (the check
// says so).
KB_HD inline std::int64_t llm_attn_auto_tile(const LlmAttnConfig& c, std::int64_t h) {
  std::int64_t t = kLlmAttnMaxTile;
  while (t > 1 && (t >= 2 * c.prompt || llm_attn_sram_bytes(c, t, h) > c.hw.sram_bytes())) t /= 2;
  return t;
}

// Resolves the automatic fields. Heads: the whole group (its K and V loaded once for all of
// its heads) unless that leaves PEs with fewer than two items (the snake pairs a long item
// with a short one only from two rounds on); then the group split in the fewest slices that
// give every PE two (or one head an item). The tile: llm_attn_auto_tile, halved (down to 32)
// while PEs still have fewer than two items.
KB_HD inline void llm_attn_complete(LlmAttnConfig& c) {
  if (c.q_heads < 1 || c.kv_heads < 1 || c.head_dim < 1 || c.prompt < 1 || c.q_heads % c.kv_heads != 0 ||
      c.q_heads > kDecMaxHeads || c.head_dim > kDecMaxDHead || c.prompt > kDecMaxSkv || c.batch < 1 ||
      c.batch > kDecMaxBatch || !hw_fits(c.hw)) {
    if (c.tile == 0) c.tile = 1;
    if (c.heads == 0) c.heads = 1;
    return;  // the check reports the real problem
  }
  const std::int64_t G = llm_attn_group(c), n = c.hw.cubes_per_sip() * c.hw.pes_per_cube();
  if (c.heads == 0) {
    c.heads = 1;
    for (std::int64_t s = 1; s <= G; ++s) {
      if (G % s != 0) continue;
      const std::int64_t t = c.tile ? c.tile : llm_attn_auto_tile(c, G / s);
      if (c.batch * c.kv_heads * s * ceil_div(c.prompt, t) >= 2 * n) {
        c.heads = G / s;
        break;
      }
    }
  }
  if (c.tile == 0) {
    c.tile = llm_attn_auto_tile(c, c.heads);
    // Still fewer than two items a PE at one head an item: shorter tiles, down to 32 tokens.
    while (c.tile > kLlmAttnMinSplitTile && llm_attn_items(c) < 2 * n) c.tile /= 2;
  }
}

// The decode family's config whose per-PE steps are an item's: R rows as one unit's query
// heads, chunks of `tile` positions, on the rank's hardware.
KB_HD inline DecodeConfig llm_attn_flash(const LlmAttnConfig& c, std::int64_t rows) {
  DecodeConfig d{};
  d.hw = c.hw;
  d.decode_case = 3;
  d.batch = 1, d.h_q = rows, d.h_kv = 1, d.d_head = c.head_dim, d.d_v = c.v_dim;
  d.s_kv = c.prior + c.prompt, d.chunk = c.tile;
  return d;
}

KB_HD inline std::int32_t llm_attn_check(const LlmAttnConfig& c) {
  if (!hw_fits(c.hw) || c.hw.sips != 1) return kLlmAttnBadField;
  if (c.batch < 1 || c.batch > kDecMaxBatch || c.q_heads < 1 || c.q_heads > kDecMaxHeads || c.kv_heads < 1 ||
      c.kv_heads > c.q_heads || c.q_heads % c.kv_heads != 0 || c.head_dim < 1 || c.head_dim > kDecMaxDHead ||
      c.v_dim < 0 || c.v_dim > kDecMaxDHead ||
      c.prompt < 1 || c.prior < 0 || c.prior > kDecMaxSkv - c.prompt || c.tile < 1 || c.tile > kLlmAttnMaxTile || c.heads < 1 ||
      llm_attn_group(c) % c.heads != 0)
    return kLlmAttnBadField;
  if (llm_attn_sram_bytes(c, c.tile, c.heads) > c.hw.sram_bytes()) return kLlmAttnSramOverflow;
  if (llm_attn_items(c) > kLlmAttnMaxItems) return kLlmAttnTooLarge;
  // The useful MACs' count (every causal pair of every head) must hold in int64.
  const std::int64_t pairs = llm_attn_pairs(c);
  if (sat_mul(sat_mul(c.batch * c.kv_heads, llm_attn_group(c) * (c.head_dim + llm_attn_dv(c))), pairs) >= kTimeLimitPs)
    return kLlmAttnTooLarge;
  // A bound on any finish: every chunk step of every item on one PE, each at its costs with
  // two HBM latencies, plus each item's query load, division and store.
  const HwConfig& h = c.hw;
  const std::int64_t R = c.tile * c.heads, d = imax(c.head_dim, llm_attn_dv(c)), P = h.pes_per_cube() * h.tenants();
  if (R * d * 4 > kTimeLimitPs / (kPsPerNs * P * 4)) return kLlmAttnTimeOverflow;
  const DecodeConfig f = llm_attn_flash(c, R);
  const dec_detail::Chunk k = dec_detail::chunk(f, c.tile, true, P);
  const ps_t lat = h.hbm_latency_ns * kPsPerNs;
  const ps_t per_step = k.ldk + k.ldv + k.mm1 + k.mm2 + k.va + k.vb + k.merge + 2 * lat;
  const ps_t per_item = 2 * shared_transfer_ps(R * d * 2, h.dma_gbps(), h.hbm_bandwidth_gbps, P) +
                        dec_detail::vec_ps(f, VecOp::row_div, R, d) + 2 * lat;
  const std::int64_t steps = sat_mul(llm_attn_units(c), sat_mul(llm_attn_tiles(c), ceil_div(c.prior + c.prompt, c.tile)));
  const ps_t bound = sat_add(sat_mul(steps, per_step), sat_mul(llm_attn_items(c), per_item));
  if (bound >= kTimeLimitPs) return kLlmAttnTimeOverflow;
  return kLlmAttnOk;
}

namespace llm_detail {

// An item on a PE whose cube's HBM `sharers` PEs share, from an idle PE at time 0: the DMA
// queue free again after its store (the next item's query load follows in program order),
// its busy totals and HBM bytes.
struct AttnItem {
  std::int64_t tokens, positions, sharers;  // the key
  ps_t dma, matrix_busy, vector_busy, dma_busy;
  std::int64_t read;
  dec_detail::Counts counts;  // its chunks', division's and store's
};
KB_HD inline AttnItem attn_item(const LlmAttnConfig& c, std::int64_t tokens, std::int64_t positions, std::int64_t sharers) {
  const HwConfig& h = c.hw;
  const std::int64_t R = tokens * c.heads, d = llm_attn_dv(c);  // the answer's width
  const DecodeConfig f = llm_attn_flash(c, R);
  const dec_detail::PeRun e = dec_detail::run_pe(f, 1, positions, sharers);
  const ps_t div = dec_detail::vec_ps(f, VecOp::row_div, R, d);
  const ps_t store = shared_transfer_ps(R * d * 2, h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
  const ps_t ready = imax(e.vec, e.mm) + div;
  dec_detail::Counts k = e.counts;
  k.vec(VecOp::row_div, R, d);
  k.rd += R * d * 4;  // the store, from the fp32 answer
  return AttnItem{tokens,           positions,        sharers,
                  imax(e.dma, ready) + store, e.matrix_busy, e.vector_busy + div,
                  e.dma_busy + store, e.read_bytes, k};
}

}  // namespace llm_detail

// The model: every PE of the rank from time 0 runs its items in turn; an item's time depends
// only on its tile's tokens, its positions and its cube's sharers (each starts on an idle PE:
// its store follows the whole of its work, and the next item's loads follow the store), so
// the PE ends its last store's HBM latency after the sum of its items. Items alike share one
// evaluation.
KB_HD inline LlmAttnResult llm_attn_model(const LlmAttnConfig& c) {
  LlmAttnResult r{};
  r.status = llm_attn_check(c);
  if (r.status != kLlmAttnOk) return r;
  const std::int64_t P = c.hw.pes_per_cube(), n = llm_attn_pes(c), G = llm_attn_group(c), d = c.head_dim, dv = llm_attn_dv(c);
  const std::int64_t H = c.heads;
  const ps_t lat = c.hw.hbm_latency_ns * kPsPerNs;
  llm_detail::AttnItem cache[4];
  int ncache = 0, next = 0;
  for (std::int64_t g = 0; g < n; ++g) {
    const std::int64_t sharers = llm_attn_sharers(c, g / P);
    ps_t t = 0;
    bool any = false;
    for (std::int64_t round = 0;; ++round) {
      const std::int64_t k = llm_attn_item_of(c, g, round);
      if (k < 0) break;
      const LlmAttnItem it = llm_attn_item(c, k);
      int hit = -1;
      for (int i = 0; i < ncache; ++i)
        if (cache[i].tokens == it.tokens && cache[i].positions == it.positions && cache[i].sharers == sharers) hit = i;
      if (hit < 0) {
        hit = next;
        cache[hit] = llm_detail::attn_item(c, it.tokens, it.positions, sharers);
        next = (next + 1) % 4;
        if (ncache < 4) ++ncache;
      }
      const llm_detail::AttnItem& e = cache[hit];
      t += e.dma;
      r.matrix_busy_ps += e.matrix_busy, r.vector_busy_ps += e.vector_busy, r.dma_busy_ps += e.dma_busy;
      r.hbm_read_bytes += e.read;
      r.hbm_write_bytes += it.tokens * H * dv * 2;
      r.vector_ops += e.counts.vops, r.sram_read_bytes += e.counts.rd, r.sram_write_bytes += e.counts.wr;
      any = true;
    }
    if (any) r.latency_ps = imax(r.latency_ps, t + lat);
  }
  // Useful work: each token's query heads against the positions up to it.
  r.macs = c.batch * c.kv_heads * G * (d + dv) * llm_attn_pairs(c);
  return r;
}

}  // namespace kb
