// Llama 4's attention (docs/model.md section 13.14): layers without RoPE every Nth, chunked
// attention on the others, and the L2 q/k norm without weights; each rule checked by hand.
#include <gtest/gtest.h>

#include <string>

#include "device/models/llm/llm_layer.h"
#include "device/models/llm/llm_model.h"

namespace kb {
namespace {

// Llama-4-Scout's text model, as models/llama-4-scout-17b-16e.json gives it.
LlmShape scout() {
  LlmShape m{};
  m.hidden = 5120, m.intermediate = 16384, m.heads = 40, m.kv_heads = 8, m.head_dim = 128, m.layers = 48, m.vocab = 202048;
  m.experts = 16, m.top_k = 1, m.moe_intermediate = 8192, m.shared_intermediate = 8192, m.qk_norm = 2;
  m.nope_every = 4, m.attn_chunk = 8192;
  return m;
}

TEST(LlmNope, ChunkedAttentionByHand) {
  // A decoded token attends to the positions of its own chunk up to itself.
  EXPECT_EQ(llm_window_positions(16384, 8192), 8192);
  EXPECT_EQ(llm_window_positions(8193, 8192), 1);
  EXPECT_EQ(llm_window_positions(8192, 8192), 8192);
  EXPECT_EQ(llm_window_positions(10000, 8192), 1808);
  EXPECT_EQ(llm_window_positions(100, 0), 100);
  // A prompt of 10 in chunks of 4: two chunks of 4 (1 + 2 + 3 + 4 pairs each) and one of 2 (1 + 2).
  EXPECT_EQ(llm_window_pairs(10, 4), 10 + 10 + 3);
  EXPECT_EQ(llm_window_pairs(3, 4), 6);
  EXPECT_EQ(llm_window_pairs(8, 4), 20);
  EXPECT_EQ(llm_window_pairs(10, 0), 55);
  EXPECT_EQ(llm_window_held(10, 4), 4);
  EXPECT_EQ(llm_window_held(3, 4), 3);
}

TEST(LlmNope, ScoutLayersAndCacheByHand) {
  const LlmShape m = scout();
  EXPECT_EQ(llm_nope_layers(m), 12);  // layers 3, 7, ..., 47
  EXPECT_EQ(llm_chunked_layers(m), 36);
  EXPECT_EQ(llm_alt_layers(m), 12);
  // A sequence of 32,768 positions: 12 layers hold them all, 36 a chunk of 8,192; a token and
  // layer is K and V of 8 heads of 128 values at 2 bytes.
  EXPECT_EQ(llm_kv_bytes(m, 2, m.layers, llm_chunked_layers(m), 32768), (12LL * 32768 + 36LL * 8192) * 2 * 8 * 128 * 2);
  EXPECT_EQ(llm_kv_bytes_per_token(m, 2), 48 * 2 * 8 * 128 * 2);
  // The L2 q/k norm has no weights: a layer's norms are its two RMSNorms.
  EXPECT_EQ(llm_params(m).norms, 2 * 5120);
  // Five stages of 10, 10, 10, 9 and 9 layers hold 2, 3, 2, 2 and 3 layers without RoPE.
  std::int16_t split[kLlmMaxStages] = {};
  LlmRun r{};
  r.pp = 5, r.stage_layers = split;
  const std::int64_t want[] = {2, 3, 2, 2, 3};
  for (std::int64_t s = 0; s < 5; ++s) {
    EXPECT_EQ(llm_stage_nope_layers(m, r, s, llm_stage_layers(m, r, s)), want[s]) << "stage " << s;
    EXPECT_EQ(llm_stage_alt_layers(m, r, s, llm_stage_layers(m, r, s)), want[s]) << "stage " << s;
  }
  EXPECT_EQ(llm_stage_nope_layers(m, r, 1, 1), 0);  // stage 1's first layer is layer 10
  EXPECT_EQ(llm_stage_nope_layers(m, r, 1, 2), 1);  // ... its second layer 11
}

// A layer with RoPE: L2 q and k norms (no weights read), RoPE, attention within a chunk; a
// layer without: neither norm nor RoPE, attention over every position.
TEST(LlmNope, TheTwoKindsOfLayerProgram) {
  const LlmShape m = scout();
  HwConfig h{};
  h.vector_lanes = 64;
  std::int32_t tokens[kMoeMaxExperts] = {};
  tokens[0] = 4;
  LlmRun r{};
  r.phase = static_cast<std::int64_t>(LlmPhase::decode), r.batch = 4, r.context = 10000, r.weight_bytes = 2, r.kv_bytes = 2;
  r.tp = 1, r.pp = 1, r.dispatch_bytes = 2, r.expert_tokens = tokens;
  auto find = [](const LlmKernel* k, int n, const std::string& name) -> const LlmKernel* {
    for (int i = 0; i < n; ++i)
      if (name == k[i].name) return &k[i];
    return nullptr;
  };
  LlmKernel a[kLlmLayerKernels], b[kLlmLayerKernels];
  const int na = llm_layer_program(h, m, r, a), nb = llm_layer_program(h, m, r, b, true);
  const LlmKernel* qn = find(a, na, "q_norm");
  ASSERT_NE(qn, nullptr);
  EXPECT_EQ(qn->kind, LlmKernelKind::l2_norm);
  EXPECT_EQ(qn->hbm_read, 4 * 40 * 128 * 2);  // the queries only: no weights
  ASSERT_NE(find(a, na, "rope"), nullptr);
  EXPECT_EQ(find(b, nb, "rope"), nullptr);
  EXPECT_EQ(find(b, nb, "q_norm"), nullptr);
  EXPECT_EQ(find(b, nb, "k_norm"), nullptr);
  const LlmKernel *ca = find(a, na, "attention"), *cb = find(b, nb, "attention");
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(cb, nullptr);
  EXPECT_EQ(ca->k, 8192);
  EXPECT_EQ(cb->k, 0);
  // Q.K^T and P.V of 4 sequences' 40 heads of 128: over 1,808 positions, or 10,000.
  EXPECT_EQ(ca->macs, 4LL * 2 * 40 * 128 * 1808);
  EXPECT_EQ(cb->macs, 4LL * 2 * 40 * 128 * 10000);
  EXPECT_EQ(ca->hbm_read - cb->hbm_read, 4LL * (1808 - 10000) * 2 * 8 * 128 * 2);
  // Both kinds are MoE layers.
  EXPECT_NE(find(b, nb, "router"), nullptr);
}

// The bounds count each kind's attention: 36 layers over a chunk's positions, 12 over all.
TEST(LlmNope, BoundsCountEachKindOfLayer) {
  LlmShape m = scout();
  std::int32_t tokens[kMoeMaxExperts] = {};
  tokens[0] = 1;
  LlmRun r{};
  r.phase = static_cast<std::int64_t>(LlmPhase::decode), r.batch = 1, r.context = 10000, r.weight_bytes = 2, r.kv_bytes = 2;
  r.tp = 1, r.pp = 1, r.dispatch_bytes = 2, r.expert_tokens = tokens;
  HwConfig h{};
  h.sips = 1, h.cube_rows = h.cube_cols = 1, h.pe_rows = h.pe_cols = 1, h.matrix_rows = h.matrix_cols = 8, h.clock_mhz = 1000;
  h.hbm_bandwidth_gbps = 1000;
  const LlmBounds chunked = llm_bounds(h, m, r);
  m.attn_chunk = 0;
  const LlmBounds global = llm_bounds(h, m, r);
  EXPECT_EQ(global.macs - chunked.macs, 36LL * 2 * 40 * 128 * (10000 - 1808));
  EXPECT_EQ(global.read_bytes - chunked.read_bytes, 36LL * (9999 - 1807) * 2 * 8 * 128 * 2);
}

}  // namespace
}  // namespace kb
