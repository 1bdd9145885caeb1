// Causal prefill attention (docs/model.md section 13.6): the batched model equals the
// reference engine on random kernels and machines (several rounds of items, idle PEs,
// partial tiles, many chunks), the snake deal gives every item to one PE, and a hand-timed
// example pins the rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "host/families/llm/llm_program.h"
#include "host/kernels/kernel_values.h"
#include "host/runtime/numeric.h"
#include "topologies.h"

namespace kb {
namespace {

std::string describe(const LlmAttnConfig& c) {
  return "batch " + std::to_string(c.batch) + " heads " + std::to_string(c.q_heads) + "/" + std::to_string(c.kv_heads) + " d " +
         std::to_string(c.head_dim) + " prompt " + std::to_string(c.prompt) + " tile " + std::to_string(c.tile) + " heads " +
         std::to_string(c.heads) + " cubes " +
         std::to_string(c.hw.cube_rows) + "x" + std::to_string(c.hw.cube_cols) + " pes " + std::to_string(c.hw.pe_rows) + "x" +
         std::to_string(c.hw.pe_cols) + " sram_kib " + std::to_string(c.hw.sram_kib);
}

void expect_same(const LlmAttnConfig& c) {
  const LlmAttnResult m = llm_attn_model(c), r = llm_attn_reference(c);
  ASSERT_EQ(m.status, kLlmAttnOk) << describe(c);
  EXPECT_EQ(m.latency_ps, r.latency_ps) << describe(c);
  EXPECT_EQ(m.matrix_busy_ps, r.matrix_busy_ps) << describe(c);
  EXPECT_EQ(m.vector_busy_ps, r.vector_busy_ps) << describe(c);
  EXPECT_EQ(m.dma_busy_ps, r.dma_busy_ps) << describe(c);
  EXPECT_EQ(m.macs, r.macs) << describe(c);
  EXPECT_EQ(m.hbm_read_bytes, r.hbm_read_bytes) << describe(c);
  EXPECT_EQ(m.hbm_write_bytes, r.hbm_write_bytes) << describe(c);
}

TEST(LlmAttention, ModelEqualsReferenceOnRandomKernels) {
  std::mt19937_64 rng(20261202);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const HwConfig base = unittest::topo("default.yaml").hw();
  const std::int64_t arrays[] = {4, 8, 16, 32};
  int run = 0, rounds = 0, idle = 0, partial = 0, chunks = 0, split = 0;
  for (int i = 0; i < 3000 && run < 1500; ++i) {
    LlmAttnConfig c{};
    c.hw = base;
    c.hw.sips = 1;
    c.hw.cube_rows = pick(1, 2), c.hw.cube_cols = pick(1, 3);
    c.hw.pe_rows = pick(1, 2), c.hw.pe_cols = pick(1, 4);
    c.hw.sram_kib = pick(16, 2048);
    c.hw.matrix_rows = arrays[pick(0, 3)], c.hw.matrix_cols = arrays[pick(0, 3)];
    c.hw.dataflow = static_cast<Dataflow>(pick(0, 2));
    c.hw.vector_lanes = std::int64_t{1} << pick(2, 7);
    c.hw.hbm_bandwidth_gbps = pick(50, 2000), c.hw.hbm_latency_ns = pick(0, 300);
    c.hw.dma_engines = pick(1, 4), c.hw.dma_bandwidth_gbps = pick(16, 256);
    c.hw.clock_mhz = pick(500, 2500);
    c.batch = pick(1, 3);
    c.kv_heads = pick(1, 3);
    c.q_heads = c.kv_heads * pick(1, 4);
    c.head_dim = pick(1, 3) == 1 ? pick(1, 40) : std::int64_t{8} << pick(0, 3);
    c.prompt = pick(1, 3) == 1 ? pick(1, 12) : pick(1, 300);
    c.tile = pick(0, 1) == 0 ? pick(1, 48) : 0;  // any tile, or the automatic one
    const std::int64_t G = c.q_heads / c.kv_heads;
    c.heads = pick(0, 1) == 0 ? 0 : (G % 2 == 0 && pick(0, 1) ? G / 2 : pick(0, 1) ? 1 : G);
    llm_attn_complete(c);
    if (llm_attn_check(c) != kLlmAttnOk || llm_attn_reference_ops(c) > 60000) continue;
    ++run;
    const std::int64_t items = llm_attn_items(c), n = llm_attn_pes(c);
    rounds += items > n;
    idle += items < n;
    partial += c.prompt % c.tile != 0;
    chunks += llm_attn_tiles(c) >= 4;
    split += c.heads < c.q_heads / c.kv_heads;
    expect_same(c);
    if (HasFailure()) return;
  }
  EXPECT_GE(run, 1500);
  EXPECT_GT(rounds, 100);   // PEs running several items in turn
  EXPECT_GT(idle, 100);     // fewer items than PEs: cubes' HBM shared by fewer
  EXPECT_GT(partial, 200);  // a last tile shorter than the others
  EXPECT_GT(chunks, 200);   // items of many chunks
  EXPECT_GT(split, 200);    // a KV head's query heads over several items
}

// Every item goes to exactly one PE, and the deal keeps the PEs within one item's length;
// the automatic split gives every PE an item where the heads allow.
TEST(LlmAttention, TheSnakeDealsEveryItemOnceAndEvenly) {
  LlmAttnConfig c{};
  c.hw = unittest::topo("default.yaml").hw();
  c.batch = 3, c.q_heads = 16, c.kv_heads = 4, c.head_dim = 64, c.tile = 64, c.heads = 2;
  for (const std::int64_t prompt : {1, 63, 64, 65, 1000, 4096, 5000}) {
    c.prompt = prompt;
    const std::int64_t n = llm_attn_pes(c), items = llm_attn_items(c);
    std::vector<int> seen(static_cast<std::size_t>(items), 0);
    std::int64_t most = 0, least = INT64_MAX;
    for (std::int64_t g = 0; g < n; ++g) {
      std::int64_t work = 0;
      for (std::int64_t r = 0; llm_attn_item_of(c, g, r) >= 0; ++r) {
        const std::int64_t k = llm_attn_item_of(c, g, r);
        ++seen[static_cast<std::size_t>(k)];
        work += llm_attn_item(c, k).positions;
      }
      if (g < items) most = std::max(most, work), least = std::min(least, work);
    }
    for (std::int64_t k = 0; k < items; ++k) EXPECT_EQ(seen[static_cast<std::size_t>(k)], 1) << "prompt " << prompt << " item " << k;
    EXPECT_LE(most - least, prompt) << "prompt " << prompt;
  }
  LlmAttnConfig a = c;
  a.batch = 1, a.prompt = 512, a.tile = 0, a.heads = 0;  // 4 streams of 2..8 tiles: split to fill 64 PEs
  llm_attn_complete(a);
  EXPECT_GE(llm_attn_items(a), llm_attn_pes(a));
  EXPECT_LT(a.heads, 4);
  a.batch = 64, a.tile = 0, a.heads = 0;  // plenty of streams: the group stays whole
  llm_attn_complete(a);
  EXPECT_EQ(a.heads, 4);
}

// One PE, one item of 2 tokens (one query head, d = 4) against its 2 positions in one chunk
// of 2, on a 4x4 output-stationary array at 1 GHz, 4 vector lanes, 16 GB/s of HBM with
// 100 ns latency: loads of q, K and V (16 bytes each) 0-1000-2000-3000 ps, K landed at
// 102000; S = q K^T, 10 cycles, to 112000; scale 1, row max 4, row subtract 1, exp 4 cycles,
// to 122000; O = P V, 8 cycles, to 130000 (the row sum, 4 cycles, ends at 126000); O / l,
// 2 cycles, to 132000; the store 132000-133000, landed at 233000.
TEST(LlmAttention, HandTimedItem) {
  LlmAttnConfig c{};
  c.hw = unittest::topo("default.yaml").hw();
  c.hw.cube_rows = c.hw.cube_cols = c.hw.pe_rows = c.hw.pe_cols = 1;
  c.hw.matrix_rows = c.hw.matrix_cols = 4, c.hw.dataflow = Dataflow::os;
  c.hw.clock_mhz = 1000, c.hw.vector_lanes = 4;
  c.hw.dma_engines = 2, c.hw.dma_bandwidth_gbps = 64, c.hw.hbm_bandwidth_gbps = 16, c.hw.hbm_latency_ns = 100;
  c.batch = 1, c.q_heads = c.kv_heads = 1, c.head_dim = 4, c.prompt = 2, c.tile = 2, c.heads = 1;
  EXPECT_EQ(llm_attn_model(c).latency_ps, 233000);
  expect_same(c);
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// A chunk of a prompt after positions an earlier step cached (chunked prefill: --prior): the
// batched model equals the reference engine, and the reference's values are causal attention
// over the cached positions and the chunk's own, in float64.
TEST(LlmAttentionPrior, ModelEqualsReferenceAfterCachedPositions) {
  std::mt19937_64 rng(20261207);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const HwConfig base = unittest::topo("default.yaml").hw();
  int run = 0, unaligned = 0;
  for (int i = 0; i < 2000 && run < 400; ++i) {
    LlmAttnConfig c{};
    c.hw = base;
    c.hw.sips = 1;
    c.hw.cube_rows = pick(1, 2), c.hw.cube_cols = pick(1, 2);
    c.hw.pe_rows = pick(1, 2), c.hw.pe_cols = pick(1, 4);
    c.hw.sram_kib = pick(32, 1024);
    c.hw.hbm_latency_ns = pick(0, 300), c.hw.vector_lanes = std::int64_t{1} << pick(2, 6);
    c.batch = pick(1, 2), c.kv_heads = pick(1, 2), c.q_heads = c.kv_heads * pick(1, 3);
    c.head_dim = std::int64_t{8} << pick(0, 2);
    c.prompt = pick(1, 120), c.prior = pick(1, 300);
    c.tile = pick(0, 1) == 0 ? pick(1, 48) : 0;
    llm_attn_complete(c);
    if (llm_attn_check(c) != kLlmAttnOk || llm_attn_reference_ops(c) > 60000) continue;
    ++run;
    unaligned += c.prior % c.tile != 0;
    expect_same(c);
    if (HasFailure()) return;
  }
  EXPECT_GE(run, 400);
  EXPECT_GT(unaligned, 100);  // a diagonal across two chunks of positions
}

TEST(LlmAttentionPrior, ValuesAreCausalOverCachedAndOwnPositions) {
  LlmAttnConfig c{};
  c.hw = unittest::topo("default.yaml").hw();
  c.batch = 1, c.q_heads = 4, c.kv_heads = 2, c.head_dim = 16, c.prompt = 21, c.prior = 37, c.tile = 16;
  llm_attn_complete(c);
  ASSERT_EQ(llm_attn_check(c), kLlmAttnOk);
  const std::int64_t KV = c.kv_heads, T = c.prompt, T0 = c.prior, G = c.q_heads / c.kv_heads, d = c.head_dim, S = T0 + T;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  KernelValues v;
  v.in = {std::vector<float>(static_cast<std::size_t>(KV * T * G * d)), std::vector<float>(static_cast<std::size_t>(KV * d * S)),
          std::vector<float>(static_cast<std::size_t>(KV * S * d))};
  for (auto& t : v.in)
    for (float& x : t) x = round_to(DType::f16, u(rng));
  llm_attn_reference(c, nullptr, &v);
  double worst = 0;
  for (std::int64_t h = 0; h < KV; ++h)
    for (std::int64_t i = 0; i < T; ++i)
      for (std::int64_t g = 0; g < G; ++g) {
        const float* q = &v.in[0][static_cast<std::size_t>(((h * T + i) * G + g) * d)];
        std::vector<double> s(static_cast<std::size_t>(T0 + i + 1));
        double top = -1e300, sum = 0;
        for (std::int64_t p = 0; p <= T0 + i; ++p) {
          double dot = 0;
          for (std::int64_t e = 0; e < d; ++e) dot += double(q[e]) * v.in[1][static_cast<std::size_t>((h * d + e) * S + p)];
          s[static_cast<std::size_t>(p)] = dot / std::sqrt(double(d));
          top = std::max(top, s[static_cast<std::size_t>(p)]);
        }
        for (double& x : s) sum += (x = std::exp(x - top));
        for (std::int64_t e = 0; e < d; ++e) {
          double o = 0;
          for (std::int64_t p = 0; p <= T0 + i; ++p) o += s[static_cast<std::size_t>(p)] * v.in[2][static_cast<std::size_t>((h * S + p) * d + e)];
          const double got = v.out[static_cast<std::size_t>(((h * T + i) * G + g) * d + e)];
          worst = std::max(worst, std::abs(got - o / sum));
        }
      }
  EXPECT_LT(worst, 5e-3);  // fp16 operands, fp32 accumulation
}

}  // namespace
}  // namespace kb
