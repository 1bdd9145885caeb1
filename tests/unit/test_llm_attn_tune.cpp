// Attention kernels tuned (src/device/models/llm/llm_attn_tune.h): a prefill attention's
// tile and heads and a decode attention wave's chunk of least latency, written out here as
// a plain search of the same candidates; the automatic choice kept unless one is strictly
// faster; never slower than it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "device/models/llm/llm_attn_tune.h"
#include "host/topology/load.h"

namespace kb {
namespace {

TEST(LlmAttnTune, PrefillTileAndHeadsOfLeastLatency) {
  const HwConfig hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml").hw();
  std::mt19937_64 rng(62);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int faster = 0;
  for (int trial = 0; trial < 40; ++trial) {
    LlmAttnConfig c{};
    c.hw = hw;
    c.hw.sram_kib = std::int64_t{256} << pick(0, 3);
    c.batch = pick(1, 4), c.kv_heads = pick(1, 2), c.q_heads = c.kv_heads * (std::int64_t{1} << pick(0, 3));
    c.head_dim = 64 << pick(0, 1), c.prompt = std::int64_t{1} << pick(4, 13);
    if (trial % 4 == 0) c.prompt += pick(1, 99);  // a ragged last tile
    LlmAttnConfig automatic = c;
    llm_attn_complete(automatic);
    const LlmAttnResult a = llm_attn_model(automatic);
    if (a.status != kLlmAttnOk) continue;
    ps_t least = a.latency_ps;
    LlmAttnConfig want = automatic;
    for (std::int64_t h = 1; h <= c.q_heads / c.kv_heads; ++h)
      for (std::int64_t t = 32; t <= 256; t *= 2) {
        if ((c.q_heads / c.kv_heads) % h != 0 || t >= 2 * c.prompt) continue;
        LlmAttnConfig x = c;
        x.heads = h, x.tile = t;
        const LlmAttnResult r = llm_attn_model(x);
        if (r.status == kLlmAttnOk && r.latency_ps < least) least = r.latency_ps, want = x;
      }
    const LlmAttnConfig got = llm_attn_tune(c);
    EXPECT_EQ(got.tile, want.tile) << trial;
    EXPECT_EQ(got.heads, want.heads) << trial;
    EXPECT_EQ(llm_attn_model(got).latency_ps, least) << trial;
    const LlmAttnConfig memo = llm_attn_tuned(c);
    EXPECT_EQ(std::memcmp(&memo, &got, sizeof got), 0) << trial;
    faster += least < a.latency_ps;
  }
  EXPECT_GT(faster, 0);  // tuning finds something the automatic choice misses
}

TEST(LlmAttnTune, DecodeChunkOfLeastLatency) {
  const HwConfig hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml").hw();
  std::mt19937_64 rng(63);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int faster = 0, valid = 0;
  for (int trial = 0; trial < 200; ++trial) {
    DecodeConfig c{};
    c.hw = hw;
    c.hw.sram_kib = std::int64_t{128} << pick(0, 4);
    c.decode_case = pick(1, 4), c.batch = pick(1, 16), c.h_kv = pick(1, 2), c.h_q = c.h_kv * (std::int64_t{1} << pick(0, 3));
    c.d_head = 128, c.s_kv = pick(64, 40000), c.kv_bytes = pick(1, 2);
    DecodeConfig automatic = c;
    decode_complete(automatic);
    const DecodeResult a = decode_model(automatic);
    if (a.status != kDecOk) continue;
    ++valid;
    ps_t least = a.latency_ps;
    std::int64_t want = automatic.chunk;
    const std::int64_t shard = std::max<std::int64_t>(1, dec_max_shard(c));
    for (std::int64_t lc = 16; lc <= 512; lc *= 2) {
      DecodeConfig x = c;
      x.chunk = std::min(lc, shard);
      const DecodeResult r = decode_model(x);
      if (r.status == kDecOk && r.latency_ps < least) least = r.latency_ps, want = x.chunk;
    }
    const DecodeConfig got = decode_chunk_tune(c);
    EXPECT_EQ(got.chunk, want) << trial;
    EXPECT_EQ(decode_model(got).latency_ps, least) << trial;
    faster += least < a.latency_ps;
  }
  EXPECT_GT(valid, 100);
  EXPECT_GT(faster, 0);
}

}  // namespace
}  // namespace kb
