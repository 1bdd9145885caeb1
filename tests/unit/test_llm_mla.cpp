// Multi-head latent attention (docs/model.md section 13.12): a layer program worked by hand,
// its weights, cache and bounds, and the expanded prefill attention's value heads of their
// own width on both engines.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "device/models/llm/llm_layer.h"
#include "host/families/llm/llm_program.h"
#include "topologies.h"

namespace kb {
namespace {

// hidden 64, 4 heads of q and k 24 (16 + 8 rotated) and v 12, a KV latent of 32, a query
// latent of 24, 3 layers.
LlmShape small() {
  LlmShape m{};
  m.hidden = 64, m.intermediate = 96, m.heads = 4, m.kv_heads = 4, m.head_dim = 24, m.layers = 3, m.vocab = 100, m.tied = 0;
  m.kv_lora = 32, m.q_lora = 24, m.rope_dim = 8, m.v_head = 12;
  return m;
}

const LlmKernel* find(const LlmKernel* k, int n, const std::string& name) {
  for (int i = 0; i < n; ++i)
    if (name == k[i].name) return &k[i];
  return nullptr;
}

TEST(LatentAttention, TheLayerProgramByHand) {
  const HwConfig h = unittest::topo("default.yaml").hw();
  const LlmShape m = small();
  LlmRun r{};
  r.phase = static_cast<std::int64_t>(LlmPhase::decode), r.batch = 2, r.context = 10, r.prompt = 1;
  r.weight_bytes = 2, r.kv_bytes = 2, r.tp = 2, r.tp_level = static_cast<std::int64_t>(CollLevel::cube), r.pp = 1;
  LlmKernel k[kLlmLayerKernels];
  const int n = llm_attention_program(h, m, r, k);
  // Two heads a rank, two tokens.
  const std::vector<std::string> order = {"attn_norm", "q_kv_a", "q_a_norm", "kv_a_norm", "q_b", "rope", "kv_append",
                                          "q_absorb",  "attention", "v_absorb", "o_proj", "attn_allreduce", "attn_residual"};
  ASSERT_EQ(n, static_cast<int>(order.size()));
  for (int i = 0; i < n; ++i) EXPECT_EQ(std::string(k[i].name), order[static_cast<std::size_t>(i)]);
  const LlmKernel* a = find(k, n, "q_kv_a");  // hidden -> query latent 24, KV latent 32 and rotated k 8
  EXPECT_EQ(a->m, 2);
  EXPECT_EQ(a->k, 64);
  EXPECT_EQ(a->n, 24 + 32 + 8);
  const LlmKernel* qb = find(k, n, "q_b");  // query latent -> 2 heads of 24
  EXPECT_EQ(qb->k, 24);
  EXPECT_EQ(qb->n, 48);
  const LlmKernel* rope = find(k, n, "rope");  // the rank's 2 queries' rotated 8 and the shared k's
  EXPECT_EQ(rope->cols, 3 * 8);
  EXPECT_EQ(find(k, n, "kv_append")->bytes, 2 * 40 * 2);  // the latent and rotated k, fp16
  const LlmKernel* qa = find(k, n, "q_absorb");  // each head's q_nope (16) into the latent (32)
  EXPECT_EQ(qa->k, 16);
  EXPECT_EQ(qa->n, 32);
  EXPECT_EQ(qa->repeat, 2);
  const LlmKernel* at = find(k, n, "attention");  // 2 heads against one shared latent KV head
  EXPECT_EQ(at->rows, 2);
  EXPECT_EQ(at->cols, 1);
  EXPECT_EQ(at->macs, 2 * 2 * (40 + 32) * 10);  // q.k over 40 values, p.v over the latent's 32
  EXPECT_EQ(at->hbm_read, 2 * 10 * 40 * 2 + 2 * 2 * 40 * 2);
  const LlmKernel* va = find(k, n, "v_absorb");  // each head's latent output (32) to its v (12)
  EXPECT_EQ(va->k, 32);
  EXPECT_EQ(va->n, 12);
  EXPECT_EQ(va->repeat, 2);
  EXPECT_EQ(find(k, n, "o_proj")->k, 2 * 12);
  // Prefill, expanded: kv_b gives the rank's 2 heads' k_nope (16) and v (12) from each latent.
  r.phase = static_cast<std::int64_t>(LlmPhase::prefill), r.batch = 1, r.prompt = 5;
  const int np = llm_attention_program(h, m, r, k);
  const LlmKernel* kvb = find(k, np, "kv_b");
  ASSERT_NE(kvb, nullptr);
  EXPECT_EQ(kvb->m, 5);
  EXPECT_EQ(kvb->k, 32);
  EXPECT_EQ(kvb->n, 2 * (16 + 12));
  const LlmKernel* ap = find(k, np, "attention");
  EXPECT_EQ(ap->rows, 2);
  EXPECT_EQ(ap->cols, 2);
  EXPECT_EQ(ap->macs, 1 * 2 * (24 + 12) * 15);  // 15 causal pairs of 5 tokens
  EXPECT_EQ(find(k, np, "q_absorb"), nullptr);
}

TEST(LatentAttention, WeightsCacheAndBoundsByHand) {
  const LlmShape m = small();
  // Down-projections 64 x (24 + 40); q_b 24 x 4 x 24, kv_b 32 x 4 x (16 + 12), O 4 x 12 x 64.
  EXPECT_EQ(llm_mla_replicated(m), 4096);
  EXPECT_EQ(llm_mla_split(m), 2304 + 3584 + 3072);
  EXPECT_EQ(llm_params(m).attention, 4096 + 8960);
  EXPECT_EQ(llm_params(m).norms, 2 * 64 + 24 + 32);
  EXPECT_EQ(llm_kv_bytes_per_token(m, 2), 3 * 40 * 2);  // the latent and rotated k, every layer
  LlmRun r{};
  r.phase = static_cast<std::int64_t>(LlmPhase::decode), r.batch = 2, r.context = 10, r.prompt = 1;
  r.weight_bytes = 2, r.kv_bytes = 2, r.tp = 2, r.tp_level = static_cast<std::int64_t>(CollLevel::cube), r.pp = 1;
  // Each tensor-parallel rank holds the down-projections whole, half of the rest, and every
  // head's cache: the latent is not split by heads.
  const LlmRankBytes b = llm_rank_bytes(m, r, 0);
  EXPECT_EQ(b.kv, 3 * 40 * 2 * 10 * 2);
  const std::int64_t mlp = 3 * 64 * 48, norms = 2 * 64 + 24 + 32, vocab = 50 * 64;
  EXPECT_EQ(b.weights, (3 * (4096 + 8960 / 2 + mlp + norms) + vocab + 64 + vocab) * 2);
  // The attention's MACs in the bound: a decoded token's 4 heads x (40 + 32) a position.
  const HwConfig h = unittest::topo("default.yaml").hw();
  const LlmBounds all = llm_bounds(h, m, r);
  const LlmParams p = llm_params(m);
  EXPECT_EQ(all.macs, 2 * (p.matmul - 100 * 64) + 2 * 100 * 64 + 3 * 2 * 4 * 72 * 10);
}

// Expanded prefill: value heads narrower than q and k, on random kernels and machines.
TEST(LatentAttention, PrefillValueHeadsModelEqualsReference) {
  std::mt19937_64 rng(20261207);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const HwConfig base = unittest::topo("default.yaml").hw();
  int done = 0;
  for (int i = 0; i < 400 && done < 150; ++i) {
    LlmAttnConfig c{};
    c.hw = base;
    c.hw.cube_rows = pick(1, 2), c.hw.cube_cols = pick(1, 2), c.hw.pe_rows = pick(1, 2), c.hw.pe_cols = pick(1, 3);
    c.hw.hbm_latency_ns = pick(0, 200), c.hw.vector_lanes = pick(4, 64);
    c.batch = pick(1, 2), c.kv_heads = pick(1, 3), c.q_heads = c.kv_heads * pick(1, 2);
    c.head_dim = 8 * pick(1, 8), c.v_dim = pick(1, 80), c.prompt = pick(1, 70);
    llm_attn_complete(c);
    if (llm_attn_check(c) != kLlmAttnOk) continue;
    const LlmAttnResult m = llm_attn_model(c), r = llm_attn_reference(c, nullptr);
    ASSERT_EQ(m.latency_ps, r.latency_ps) << i;
    ASSERT_EQ(m.matrix_busy_ps, r.matrix_busy_ps) << i;
    ASSERT_EQ(m.vector_busy_ps, r.vector_busy_ps) << i;
    ASSERT_EQ(m.dma_busy_ps, r.dma_busy_ps) << i;
    ASSERT_EQ(m.macs, r.macs) << i;
    ASSERT_EQ(m.hbm_read_bytes, r.hbm_read_bytes) << i;
    ASSERT_EQ(m.hbm_write_bytes, r.hbm_write_bytes) << i;
    ASSERT_EQ(m.vector_ops, r.vector_ops) << i;
    ASSERT_EQ(m.sram_read_bytes, r.sram_read_bytes) << i;
    ASSERT_EQ(m.sram_write_bytes, r.sram_write_bytes) << i;
    ++done;
  }
  EXPECT_GT(done, 100);
}

}  // namespace
}  // namespace kb
