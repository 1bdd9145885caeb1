// Attention kernels tuned as GEMM kernels are (docs/model.md section 13.5, --kernel-tuning
// best): where a kernel's chunk or tile is a free choice, the one of least latency on the
// rank's machine, by the kernel's own batched model.
//
// - A prefill attention (llm_attention.h): its tile (a power of two from 32 to 256, below
//   twice the prompt) and heads an item (a divisor of the group's).
// - A decode attention wave (the decode family's model): its chunk (a power of two from 16
//   to 512, at most the longest shard, which then stands for the longer ones).
//
// The automatic choice is kept unless a candidate is strictly faster; among candidates, the
// first in ascending order (heads, then tile) wins a tie. Both are memoised per config for the
// process, as gemm_tuned is; a CUDA thread tunes every time.
#pragma once

#include <cstdint>

#include "../../common/kb_hd.h"
#include "../../common/kernel_memo.h"
#include "../decode/decode_model.h"
#include "llm_attention.h"

namespace kb {

constexpr std::int64_t kLlmAttnTuneMinTile = 32;

KB_HD inline LlmAttnConfig llm_attn_tune(const LlmAttnConfig& base) {
  LlmAttnConfig best = base;
  best.tile = best.heads = 0;
  llm_attn_complete(best);
  const LlmAttnResult automatic = llm_attn_model(best);
  if (automatic.status != kLlmAttnOk) return best;  // its status says why
  ps_t least = automatic.latency_ps;
  const std::int64_t G = llm_attn_group(base);
  LlmAttnConfig x = base;
  for (std::int64_t h = 1; h <= G; ++h) {
    if (G % h != 0) continue;
    for (std::int64_t t = kLlmAttnTuneMinTile; t <= kLlmAttnMaxTile && t < 2 * base.prompt; t *= 2) {
      x.heads = h, x.tile = t;
      if (llm_attn_sram_bytes(x, t, h) > x.hw.sram_bytes()) break;  // nor any longer tile
      const LlmAttnResult r = llm_attn_model(x);
      if (r.status == kLlmAttnOk && r.latency_ps < least) least = r.latency_ps, best = x;
    }
  }
  return best;
}

KB_HD inline DecodeConfig decode_chunk_tune(const DecodeConfig& base) {
  DecodeConfig best = base;
  best.chunk = 0;
  decode_complete(best);
  const DecodeResult automatic = decode_model(best);
  if (automatic.status != kDecOk) return best;
  ps_t least = automatic.latency_ps;
  const std::int64_t shard = imax(1, dec_max_shard(base));
  DecodeConfig x = base;
  for (std::int64_t lc = kDecMinAutoChunk; lc <= kDecAutoChunk; lc *= 2) {
    x.chunk = imin(lc, shard);
    const DecodeResult r = decode_model(x);
    if (r.status == kDecOk && r.latency_ps < least) least = r.latency_ps, best = x;
    if (lc >= shard) break;  // longer chunks are the shard again
  }
  return best;
}

// The two memoised per config (the choice is no part of the question).
KB_HD inline LlmAttnConfig llm_attn_tuned(const LlmAttnConfig& base) {
  LlmAttnConfig key = base;
  key.tile = key.heads = 0;
  return shared_memo_eval<LlmAttnConfig, LlmAttnConfig>(key, [](const LlmAttnConfig& x) { return llm_attn_tune(x); });
}
KB_HD inline DecodeConfig decode_chunk_tuned(const DecodeConfig& base) {
  DecodeConfig key = base;
  key.chunk = 0;
  return shared_memo_eval<DecodeConfig, DecodeConfig>(key, [](const DecodeConfig& x) { return decode_chunk_tune(x); });
}

}  // namespace kb
