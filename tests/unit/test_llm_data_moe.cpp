// Data mode of a mixture-of-experts model (docs/model.md section 13.9): the router's rules by
// hand; tiny random MoE models on the reference engine against a float64 forward pass, with
// softmax and sigmoid routers, group-limited routing, shared experts, first dense layers,
// expert-parallel ranks with redundant copies, pipeline stages and micro-batches; each MoE
// layer takes the time the timing run gives the routing its router's values made.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "host/common/error.h"
#include "host/families/llm/llm_data.h"
#include "host/families/llm/llm_data_moe.h"
#include "host/families/llm/llm_program.h"
#include "host/llm/moe_routing.h"
#include "tiny_llm.h"

namespace kb {
namespace {

using llm_data::Dims;
using llm_data::route_rows;
using llm_data::Routing;

Dims router_dims(std::int64_t experts, std::int64_t top_k, std::int64_t groups, std::int64_t topk_groups, bool sigmoid) {
  Dims a{};
  a.E = experts, a.K = top_k, a.groups = groups, a.topk_groups = topk_groups, a.sigmoid = sigmoid;
  return a;
}

TEST(LlmDataMoe, SoftmaxRouterTakesTheTopKRenormalized) {
  const Dims a = router_dims(4, 2, 1, 1, false);
  const Routing r = route_rows(a, {1.0, 3.0, 2.0, 0.0, /* row 2 */ 0.5, 0.5, 0.5, 0.25}, 2, std::vector<float>(4, 0.0f));
  ASSERT_EQ(r.expert.size(), 4u);
  EXPECT_EQ(r.expert[0], 1);
  EXPECT_EQ(r.expert[1], 2);
  // exp(3) / (exp(3) + exp(2)): the softmax's scores renormalized over the two taken.
  EXPECT_NEAR(r.weight[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-12);
  EXPECT_NEAR(r.weight[1], 1.0 / (1.0 + std::exp(1.0)), 1e-12);
  // A tie: the lower experts first, weighed alike.
  EXPECT_EQ(r.expert[2], 0);
  EXPECT_EQ(r.expert[3], 1);
  EXPECT_NEAR(r.weight[2], 0.5, 1e-12);
  EXPECT_EQ(r.tokens, (std::vector<std::int64_t>{1, 2, 1, 0}));
}

TEST(LlmDataMoe, SigmoidRouterChoosesWithItsBiasAndWeighsWithoutIt) {
  const Dims a = router_dims(4, 2, 1, 1, true);
  // Scores sigmoid(0) = 0.5, sigmoid(0.1) = 0.525, sigmoid(-1), sigmoid(0.05); the bias lifts
  // expert 0 over expert 1 and expert 2 over expert 3 for the choice only.
  const Routing r = route_rows(a, {0.0, 0.1, -1.0, 0.05}, 1, {0.2f, 0.0f, 0.5f, 0.0f});
  const double s0 = 0.5, s2 = 1.0 / (1.0 + std::exp(1.0));
  // Choice values: 0.7, 0.525, 0.769, 0.512: experts 2 then 0.
  EXPECT_EQ(r.expert, (std::vector<std::int64_t>{2, 0}));
  EXPECT_NEAR(r.weight[0], s2 / (s2 + s0), 1e-7);
  EXPECT_NEAR(r.weight[1], s0 / (s2 + s0), 1e-7);
}

TEST(LlmDataMoe, GroupLimitedRoutingValuesGroupsByTheirBestOrBestTwo) {
  // Eight experts in four groups of two; one group a token. Expert 0 is the best, but its
  // group's second is poor: softmax values a group by its best (group 0: experts 0 and 1),
  // sigmoid by its two best together (group 1: experts 2 and 3).
  const std::vector<double> logits{5.0, 0.0, 4.9, 4.8, -3.0, -3.0, -3.0, -3.0};
  const Routing soft = route_rows(router_dims(8, 2, 4, 1, false), logits, 1, std::vector<float>(8, 0.0f));
  EXPECT_EQ(soft.expert, (std::vector<std::int64_t>{0, 1}));
  const Routing sig = route_rows(router_dims(8, 2, 4, 1, true), logits, 1, std::vector<float>(8, 0.0f));
  EXPECT_EQ(sig.expert, (std::vector<std::int64_t>{2, 3}));
  // Two groups a token: the top two experts of groups 0 and 1 under either rule.
  const Routing two = route_rows(router_dims(8, 2, 4, 2, true), logits, 1, std::vector<float>(8, 0.0f));
  EXPECT_EQ(two.expert, (std::vector<std::int64_t>{0, 2}));
}

// Where the float64 pass would route a row otherwise, the row takes the run's experts (with
// their float64 weights), and the flip and its gap of choice scores are counted.
TEST(LlmDataMoe, TheFloat64PassTakesTheRunsExpertsOnAFlip) {
  Dims a = router_dims(4, 1, 1, 1, false);
  a.H = 2, a.Im = 1, a.Sh = 0;
  llm_data::MoeWeights w;
  w.router = {1.0f, 0.0f, 0.0f, 0.0f, /* h1 */ 0.0f, 1.0f, 0.0f, 0.0f};  // [H, E]: expert 0 scores h0, expert 1 h1
  w.bias.assign(4, 0.0f);
  for (int e = 0; e < 4; ++e) {
    w.gate_up.push_back({1.0f, static_cast<float>(e + 1), 0.0f, 0.0f});  // gate h0, up (e + 1) h0
    w.down.push_back({1.0f, 0.0f});                                      // into column 0
  }
  const llm_data::Dense h{1.0, 0.5};  // expert 0's logit 1, expert 1's 0.5: float64 takes expert 0
  Routing run;
  run.expert = {1};  // the run took expert 1
  run.weight = {1.0};
  std::int64_t flips = 0;
  double gap = 0;
  const llm_data::Dense y = llm_data::moe_f64(a, w, h, 1, run, &flips, &gap);
  EXPECT_EQ(flips, 1);
  const double e0 = std::exp(1.0), e1 = std::exp(0.5), sum = e0 + e1 + 2.0;
  EXPECT_NEAR(gap, (e0 - e1) / sum, 1e-12);  // softmax scores of the two experts
  // Expert 1 alone (weight 1): SiLU(1) x 2.
  EXPECT_NEAR(y[0], 1.0 / (1.0 + std::exp(-1.0)) * 2.0, 1e-12);
  EXPECT_EQ(y[1], 0.0);
  run.expert = {0};
  flips = 0, gap = 0;
  const llm_data::Dense same = llm_data::moe_f64(a, w, h, 1, run, &flips, &gap);
  EXPECT_EQ(flips, 0);
  EXPECT_NEAR(same[0], 1.0 / (1.0 + std::exp(-1.0)) * 1.0, 1e-12);
}

// One micro-batch's tokens routed evenly: a valid config for the checks (data mode routes
// each layer from its router's values).
void route_evenly(LlmConfig& c) {
  const std::int64_t tokens = c.batch / c.microbatches * (c.phase == static_cast<std::int64_t>(LlmPhase::prefill) ? c.prompt : 1);
  const Routed r = route_tokens(RoutingSpec{}, MoeRouter{c.experts, c.top_k, c.expert_groups, c.topk_groups}, tokens, 0);
  for (std::int64_t e = 0; e < c.experts; ++e) c.expert_tokens[e] = static_cast<std::int32_t>(r.tokens[static_cast<std::size_t>(e)]);
}

std::string describe_moe(const LlmConfig& c) {
  char b[400];
  std::snprintf(b, sizeof b,
                "%s batch %lld prompt %lld context %lld hidden %lld experts %lld top %lld inter %lld shared %lld dense %lld "
                "layers %lld groups %lld/%lld %s tp %lld level %lld redundant %lld pp %lld mb %lld sram %lld wb %lld",
                c.phase == static_cast<std::int64_t>(LlmPhase::decode) ? "decode" : "prefill", (long long)c.batch,
                (long long)c.prompt, (long long)c.context, (long long)c.hidden, (long long)c.experts, (long long)c.top_k,
                (long long)c.moe_intermediate, (long long)c.shared_intermediate, (long long)c.dense_layers, (long long)c.layers,
                (long long)c.expert_groups, (long long)c.topk_groups, c.router_scores ? "sigmoid" : "softmax", (long long)c.tp,
                (long long)c.tp_level, (long long)c.redundant_experts, (long long)c.pp, (long long)c.microbatches,
                (long long)c.hw.sram_kib, (long long)c.weight_bytes);
  return b;
}

// A tiny MoE model: 8 experts of 32, top-2, a shared expert of 48, a first dense layer.
LlmConfig tiny_moe(LlmPhase phase) {
  LlmConfig c = unittest::tiny_llm(phase, 3, 20, 6);
  c.layers = 3, c.experts = 8, c.top_k = 2, c.moe_intermediate = 32, c.shared_intermediate = 48, c.dense_layers = 1;
  c.dispatch_bytes = 2;
  route_evenly(c);
  return c;
}

// The logits' and the residual stream's error held to 2^-9 of their largest (test_llm_data.cpp's
// fp16 bound); a row the float64 pass routes otherwise only on a near tie of its scores.
void expect_moe_close(const LlmConfig& c, std::uint64_t seed) {
  const LlmDataReport d = llm_data_run(c, seed);
  ASSERT_GT(d.max_abs_logit, 0.1) << describe_moe(c);
  EXPECT_LE(d.max_abs_error, d.max_abs_logit / 512) << describe_moe(c) << ": rms " << d.rms_error;
  EXPECT_LE(d.hidden_max_abs_error, d.hidden_max_abs / 512) << describe_moe(c);
  EXPECT_LE(d.routing_flip_gap, 2e-3) << describe_moe(c) << ": " << d.routing_flips << " rows routed otherwise";
  ASSERT_EQ(d.layers_ps.size(), static_cast<std::size_t>(c.layers)) << describe_moe(c);
  const LlmResult t = llm_reference(c);
  EXPECT_EQ(d.head_ps, t.head_ps) << describe_moe(c);
  if (c.dense_layers > 0) {
    EXPECT_EQ(d.dense_layer_ps, t.dense_layer_ps) << describe_moe(c);
  }
}

TEST(LlmDataMoe, TinyMoeModelLogitsMatchFloat64) {
  for (LlmPhase phase : {LlmPhase::decode, LlmPhase::prefill})
    for (std::int64_t sigmoid : {0, 1}) {
      LlmConfig c = tiny_moe(phase);
      c.router_scores = sigmoid;
      const LlmDataReport d = llm_data_run(c, 11);
      std::printf("[ data ] MoE %s, %s router: max |error| %.3g against max |logit| %.3g (%.2g of it); layers", describe_moe(c).c_str(),
                  sigmoid ? "sigmoid" : "softmax", d.max_abs_error, d.max_abs_logit, d.max_abs_error / d.max_abs_logit);
      for (ps_t p : d.layers_ps) std::printf(" %lld", static_cast<long long>(p));
      std::printf(" ps; %lld flips\n", static_cast<long long>(d.routing_flips));
      expect_moe_close(c, 11);
      // The routing is the router's: another seed routes (and so times) the MoE layers otherwise.
      EXPECT_NE(d.expected, llm_data_run(c, 12).expected);
    }
}

TEST(LlmDataMoe, RandomMoeModelsMappingsAndMachines) {
  std::mt19937_64 rng(20261207);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int run = 0, prefills = 0, sigmoid = 0, grouped = 0, shared = 0, dense = 0, tp = 0, redundant = 0, pp = 0, micro = 0;
  int uneven = 0;  // configs whose MoE layers took different times (their routings differ)
  for (int i = 0; i < 3000 && run < 40; ++i) {
    LlmConfig c = tiny_moe(pick(0, 2) == 0 ? LlmPhase::prefill : LlmPhase::decode);
    HwConfig& h = c.hw;
    h.cube_rows = pick(1, 2), h.cube_cols = pick(1, 2), h.pe_rows = pick(1, 2), h.pe_cols = pick(1, 3);
    h.sram_kib = pick(0, 2) == 0 ? pick(16, 48) : pick(256, 1024);
    h.vector_lanes = std::int64_t{1} << pick(2, 6);
    c.tp_level = pick(1, 2);
    c.hidden = 8 * pick(2, 8), c.weight_bytes = pick(1, 2), c.vocab = pick(16, 96);
    c.experts = std::int64_t{4} << pick(0, 2), c.top_k = pick(1, 4), c.moe_intermediate = pick(4, 40);
    c.shared_intermediate = pick(0, 1) ? pick(8, 64) : 0;
    c.layers = pick(1, 3), c.dense_layers = pick(0, c.layers - 1), c.intermediate = pick(8, 80);
    c.expert_groups = pick(0, 1) ? std::int64_t{2} << pick(0, 1) : 1;
    c.topk_groups = pick(1, c.expert_groups);
    c.router_scores = pick(0, 1);
    c.batch = pick(1, 6), c.context = pick(1, 32);
    if (c.phase == static_cast<std::int64_t>(LlmPhase::prefill)) c.prompt = pick(1, 16), c.batch = pick(1, 3);
    c.attention_case = pick(1, 4);
    if (pick(0, 1)) {  // expert-parallel (and tensor-parallel attention) ranks of any level, stages
      h.sips = pick(1, 2);
      h.cube_rows = h.cube_cols = h.pe_rows = 2, h.pe_cols = pick(2, 4);
      c.tp_level = pick(0, 3);
      c.kv_heads = 2, c.heads = 4;
      c.tp = std::int64_t{2} << pick(0, 1);
      if (pick(0, 1)) c.redundant_experts = c.tp * pick(1, 2);
      c.pp = c.layers > 1 && h.sips == 2 && c.tp_level != 2 ? 2 : 1;
      if (c.batch % 2 == 0) c.microbatches = pick(1, 2);
      c.tp_algo = pick(0, kCollAlgos - 1);
    }
    if (c.top_k > c.topk_groups * (c.experts / c.expert_groups)) continue;
    route_evenly(c);
    if (llm_check(c) != kLlmOk || !llm_data_refusal(c).empty()) continue;
    ++run;
    prefills += c.phase == static_cast<std::int64_t>(LlmPhase::prefill);
    sigmoid += c.router_scores == 1, grouped += c.topk_groups < c.expert_groups, shared += c.shared_intermediate > 0;
    dense += c.dense_layers > 0, tp += c.tp > 1, redundant += c.redundant_experts > 0, pp += c.pp > 1, micro += c.microbatches > 1;
    const LlmDataReport d = llm_data_run(c, static_cast<std::uint64_t>(i) + 1);
    std::set<ps_t> moe_times(d.layers_ps.begin() + c.dense_layers, d.layers_ps.end());
    uneven += moe_times.size() > 1;
    expect_moe_close(c, static_cast<std::uint64_t>(i) + 1);
    if (HasFailure()) return;
  }
  std::printf("[ data ] %d random MoE models: %d prefill, %d sigmoid, %d group-limited, %d shared, %d dense first, %d tp, "
              "%d redundant, %d pp, %d micro-batched; %d with MoE layers of different times\n",
              run, prefills, sigmoid, grouped, shared, dense, tp, redundant, pp, micro, uneven);
  EXPECT_EQ(run, 40);
  EXPECT_GE(prefills, 5);
  EXPECT_GE(sigmoid, 10);
  EXPECT_GE(grouped, 5);
  EXPECT_GE(shared, 10);
  EXPECT_GE(dense, 5);
  EXPECT_GE(tp, 10);
  EXPECT_GE(redundant, 4);
  EXPECT_GE(pp, 2);
  EXPECT_GE(micro, 2);
  EXPECT_GE(uneven, 3);
}

// Latent attention on a tiny model: 4 heads of 16 + 8 rotated values, a KV latent of 20, a
// query latent of 24 (or none), v heads of 12; with MoE layers as DeepSeek-V3's (sigmoid,
// group-limited, a shared expert, a first dense layer) or dense.
LlmConfig tiny_mla(LlmPhase phase, bool moe) {
  LlmConfig c = moe ? tiny_moe(phase) : unittest::tiny_llm(phase, 3, 20, 6);
  c.kv_heads = c.heads = 4, c.head_dim = 24, c.kv_lora = 20, c.q_lora = 24, c.rope_dim = 8, c.v_head = 12;
  if (moe) c.router_scores = 1, c.expert_groups = 4, c.topk_groups = 2;
  if (moe) route_evenly(c);
  return c;
}

TEST(LlmDataMoe, LatentAttentionLogitsMatchFloat64) {
  for (LlmPhase phase : {LlmPhase::decode, LlmPhase::prefill})
    for (bool moe : {false, true})
      for (std::int64_t q_lora : {24, 0}) {
        LlmConfig c = tiny_mla(phase, moe);
        c.q_lora = q_lora;
        ASSERT_EQ(llm_check(c), kLlmOk) << describe_moe(c);
        const LlmDataReport d = llm_data_run(c, 5);
        std::printf("[ data ] MLA q_lora %lld %s: max |error| %.3g against max |logit| %.3g (%.2g of it), hidden %.2g\n",
                    static_cast<long long>(q_lora), describe_moe(c).c_str(), d.max_abs_error, d.max_abs_logit,
                    d.max_abs_error / d.max_abs_logit, d.hidden_max_abs_error / d.hidden_max_abs);
        expect_moe_close(c, 5);
        if (!moe) {
          EXPECT_EQ(d.layer_ps, llm_reference(c).layer_ps) << describe_moe(c);
        }
      }
}

TEST(LlmDataMoe, RandomLatentAttentionModelsAndMappings) {
  std::mt19937_64 rng(20261208);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int run = 0, prefills = 0, moe = 0, tp = 0, waves = 0, no_q = 0;
  for (int i = 0; i < 3000 && run < 40; ++i) {
    LlmConfig c = tiny_mla(pick(0, 2) == 0 ? LlmPhase::prefill : LlmPhase::decode, pick(0, 1) == 1);
    HwConfig& h = c.hw;
    h.cube_rows = pick(1, 2), h.cube_cols = pick(1, 2), h.pe_rows = pick(1, 2), h.pe_cols = pick(1, 3);
    h.sram_kib = pick(0, 2) == 0 ? pick(24, 64) : pick(256, 1024);
    c.kv_lora = 4 * pick(1, 8), c.rope_dim = 2 * pick(1, 6), c.head_dim = c.rope_dim + 4 * pick(1, 6), c.v_head = pick(4, 24);
    c.q_lora = pick(0, 1) ? 8 * pick(1, 5) : 0;
    c.hidden = 8 * pick(3, 8), c.weight_bytes = pick(1, 2), c.kv_bytes = 2, c.layers = pick(1, 3);
    if (c.experts > 0) c.dense_layers = pick(0, c.layers - 1);
    c.batch = pick(1, 5), c.context = pick(1, 40);
    if (c.phase == static_cast<std::int64_t>(LlmPhase::prefill)) c.prompt = pick(1, 16), c.batch = pick(1, 2);
    c.attention_case = pick(1, 4);
    if (pick(0, 1)) {
      h.sips = 1, h.cube_rows = h.cube_cols = h.pe_rows = 2, h.pe_cols = pick(2, 4);
      c.tp_level = pick(0, 2), c.tp = std::int64_t{2} << pick(0, 1), c.tp_algo = pick(0, kCollAlgos - 1);
    }
    if (c.experts > 0) route_evenly(c);
    if (llm_check(c) != kLlmOk || !llm_data_refusal(c).empty()) continue;
    ++run;
    prefills += c.phase == static_cast<std::int64_t>(LlmPhase::prefill), moe += c.experts > 0, tp += c.tp > 1;
    waves += h.sram_kib < 64 && c.phase == static_cast<std::int64_t>(LlmPhase::decode), no_q += c.q_lora == 0;
    expect_moe_close(c, static_cast<std::uint64_t>(i) + 3);
    if (HasFailure()) return;
  }
  std::printf("[ data ] %d random MLA models: %d prefill, %d MoE, %d tp, %d small SRAM decodes, %d without a query latent\n", run,
              prefills, moe, tp, waves, no_q);
  EXPECT_EQ(run, 40);
  EXPECT_GE(prefills, 6);
  EXPECT_GE(moe, 10);
  EXPECT_GE(tp, 6);
  EXPECT_GE(waves, 2);
  EXPECT_GE(no_q, 8);
}

TEST(LlmDataMoe, RefusesDataParallelAttention) {
  LlmConfig c = tiny_moe(LlmPhase::decode);
  c.hw.cube_rows = c.hw.cube_cols = 2;
  c.tp = 2, c.attention_dp = 1, c.batch = 4;
  route_evenly(c);
  ASSERT_EQ(llm_check(c), kLlmOk);
  try {
    llm_data_run(c, 1);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--attention tp"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kb
