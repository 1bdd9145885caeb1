// Parity of the llm family: for every backend, the batched model (exec) and the reference
// engine (ref) agree exactly on every parity figure of a whole-model decode step or prefill,
// on random small models, mappings (tp over cubes or SIPs, every allreduce algorithm and
// attention case) and machines; and a model run whole equals its layers counted from one (the layers
// of a step are identical, docs/model.md section 13.5).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <sstream>

#include "backend_param.h"
#include "host/families/family.h"
#include "host/families/llm/llm_program.h"
#include "host/llm/model_file.h"
#include "host/parity/figures.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"
#include "random_allreduce.h"

namespace kb {

namespace {

std::string describe(const LlmConfig& c) {
  std::ostringstream o;
  o << "hidden=" << c.hidden << " inter=" << c.intermediate << " heads=" << c.heads << "/" << c.kv_heads << "x" << c.head_dim
    << " layers=" << c.layers << " vocab=" << c.vocab << " tied=" << c.tied << " phase=" << c.phase << " batch=" << c.batch
    << " context=" << c.context << " prompt=" << c.prompt
    << " wb=" << c.weight_bytes << " kvb=" << c.kv_bytes << " tp=" << c.tp << "@" << c.tp_level << " pp=" << c.pp << " mb=" << c.microbatches << " algo=" << c.tp_algo
    << " case=" << c.attention_case << " run=" << c.layers_run << " split=" << c.stage_layers[0] << "," << c.stage_layers[1]
    << "," << c.stage_layers[2]
    << " sips=" << c.hw.sips << " cubes=" << c.hw.cube_rows << "x" << c.hw.cube_cols << " pes=" << c.hw.pe_rows << "x"
    << c.hw.pe_cols;
  if (c.experts > 0)
    o << " experts=" << c.experts << " top_k=" << c.top_k << " moe_inter=" << c.moe_intermediate << " shared=" << c.shared_intermediate
      << " dense=" << c.dense_layers << " qk_norm=" << c.qk_norm << " dp=" << c.attention_dp << " redundant=" << c.redundant_experts
      << " dispatch_bytes=" << c.dispatch_bytes << " routing=" << c.routing << "/" << c.routing_alpha_milli << "/" << c.routing_seed;
  if (c.nope_every > 0 || c.attn_chunk > 0) o << " nope_every=" << c.nope_every << " attn_chunk=" << c.attn_chunk << " qk_norm=" << c.qk_norm;
  if (c.kv_lora > 0) o << " kv_lora=" << c.kv_lora << " q_lora=" << c.q_lora << " rope=" << c.rope_dim << " v_head=" << c.v_head;
  return o.str();
}

// Random valid configs whose reference runs stay small; `counts` tallies the levels, the
// allreduce algorithms and the attention cases covered.
std::vector<LlmConfig> random_configs(int count, std::uint64_t seed, std::vector<int>* counts) {
  const TopologySpec base = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const std::int64_t arrays[] = {4, 8, 16, 32};
  std::vector<LlmConfig> out;
  counts->assign(2 + kCollAlgos + 4 + 1 + 2 + 2 + 1 + 2, 0);
  while (static_cast<int>(out.size()) < count) {
    LlmConfig c{};
    c.hw = base.hw();
    c.kernel_tuning = pick(0, 1);  // tuned GEMM tilings (best) and the automatic ones
    HwConfig& h = c.hw;
    testing::random_machine(h, pick);
    h.matrix_rows = arrays[pick(0, 3)], h.matrix_cols = arrays[pick(0, 3)];
    h.dataflow = static_cast<Dataflow>(pick(0, 2));
    h.sram_kib = pick(256, 2048);
    h.hbm_capacity_mib = 4096;
    c.kv_heads = pick(1, 4);
    c.heads = c.kv_heads * pick(1, 4);
    c.head_dim = std::int64_t{8} << pick(0, 3);
    c.hidden = c.heads * c.head_dim * pick(1, 2);
    c.intermediate = pick(16, 400);
    c.layers = pick(1, 4);
    c.vocab = pick(16, 1200);
    c.tied = pick(0, 1);
    c.weight_bytes = pick(1, 2), c.kv_bytes = pick(1, 2);  // fp16, or 8-bit weights or KV cache
    const bool prefill = pick(0, 2) == 0;
    c.phase = static_cast<std::int64_t>(prefill ? LlmPhase::prefill : LlmPhase::decode);
    c.batch = prefill ? pick(1, 2) : pick(1, 6);
    c.context = pick(16, 400);
    c.prompt = prefill ? pick(1, 40) : 1;
    c.tp_level = pick(0, 2) ? pick(1, 2) : (pick(0, 1) ? 0 : 3);  // cube or sip, else pe or hier (PE ranks)
    c.tp = pick(1, 4);
    c.pp = pick(0, 2) ? 1 : pick(2, 3);
    c.microbatches = 1;
    for (std::int64_t m = pick(1, 3); m > 1; --m)  // the largest of 1..m dividing the batch
      if (c.batch % m == 0) {
        c.microbatches = m;
        break;
      }
    c.tp_algo = pick(0, static_cast<std::int64_t>(CollAlgo::root));  // the algorithms that run an allreduce
    c.attention_case = pick(1, 4);
    c.layers_run = pick(0, 1) ? 0 : pick(1, c.layers);
    if (c.pp > 1 && c.pp <= c.layers && pick(0, 1)) {  // --pp-layers: a random split, each stage at least one layer
      std::int64_t left = c.layers;
      for (std::int64_t s = 0; s + 1 < c.pp; ++s) {
        c.stage_layers[s] = static_cast<std::int16_t>(pick(1, left - (c.pp - 1 - s)));
        left -= c.stage_layers[s];
      }
      c.stage_layers[c.pp - 1] = static_cast<std::int16_t>(left);
    }
    // Keep the reference small: its largest launch, and the machine.
    if (h.sips * h.cubes_per_sip() * h.pes_per_cube() > 96) continue;
    if (llm_check(c) != kLlmOk || llm_reference_ops(c) > 4000) continue;
    ++(*counts)[c.tp_level == static_cast<std::int64_t>(CollLevel::cube) ? 0 : 1];
    if (c.tp > 1) ++(*counts)[static_cast<std::size_t>(2 + c.tp_algo)];
    if (!prefill) ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + c.attention_case - 1)];
    else ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + 4)];
    if (c.pp > 1) ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + 5)];
    if (c.microbatches > 1) ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + 6)];
    if (c.weight_bytes == 1) ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + 7)];
    if (c.kv_bytes == 1 && !prefill) ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + 8)];
    if (c.stage_layers[0] != 0 && c.stage_layers[0] * c.pp != c.layers) ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + 9)];
    if (c.tp_level == static_cast<std::int64_t>(CollLevel::pe)) ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + 10)];
    if (c.tp_level == static_cast<std::int64_t>(CollLevel::hier)) ++(*counts)[static_cast<std::size_t>(2 + kCollAlgos + 11)];
    out.push_back(c);
  }
  return out;
}

class LlmParity : public testing::BackendTest {
 protected:
  // Every config valid on the backend, its figures and energy equal to the reference engine's;
  // the batched results.
  std::vector<LlmResult> expect_parity(const std::vector<LlmConfig>& configs) {
    const std::vector<LlmResult> exec = eval<LlmModel>(GetParam(), configs);
    EXPECT_EQ(exec.size(), configs.size());
    for (std::size_t i = 0; i < configs.size() && i < exec.size(); ++i) {
      EXPECT_EQ(exec[i].status, kLlmOk) << describe(configs[i]);
      const LlmResult ref = llm_reference(configs[i], nullptr);
      EXPECT_EQ(figures_diff(family("llm"), configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
      EXPECT_EQ(testing::energy_recompute_diff(family("llm"), &configs[i], &exec[i], "step_ps"), "") << describe(configs[i]);
      if (::testing::Test::HasFailure()) break;  // one config's report, not a thousand
    }
    return exec;
  }
};

KB_BACKEND_SUITE(LlmParity);

TEST_P(LlmParity, TwoThousandRandomConfigs) {
#if defined(__SANITIZE_ADDRESS__)
  const int n = 300;  // the same code paths; the sanitizers' run is several times slower
#else
  const int n = 2000;
#endif
  std::vector<int> counts;
  const std::vector<LlmConfig> configs = random_configs(n, 20261202, &counts);
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (i != 2 + static_cast<std::size_t>(CollAlgo::pairwise))  // an all-to-all's algorithm, not a TP allreduce's
      EXPECT_GT(counts[i], n / 60) << "combination " << i << " barely covered";
  expect_parity(configs);
}

// Random mixture-of-experts configs from the dense ones: experts, top_k, an expert's and a
// shared expert's sizes, q/k norms, attention tensor- or data-parallel over the expert-
// parallel ranks, redundant copies, fp8 or fp16 dispatch, and a routing (balanced, uniform
// or Zipf, seeded) fixed by the family's own prepare step, as eval and sweep fix it.
std::vector<LlmConfig> random_moe_configs(int count, std::uint64_t seed, std::vector<int>* counts) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<int> dense_counts;
  std::vector<LlmConfig> out;
  counts->assign(10, 0);
  const char* routings[] = {"balanced", "uniform", "zipf:1.2", "zipf:0.6"};
  for (std::uint64_t round = 0; static_cast<int>(out.size()) < count; ++round) {
    for (LlmConfig c : random_configs(count, seed + round, &dense_counts)) {
      if (static_cast<int>(out.size()) == count) break;
      c.experts = pick(2, 16);
      c.top_k = pick(1, std::min<std::int64_t>(c.experts, 4));
      c.moe_intermediate = pick(8, 160);
      c.shared_intermediate = pick(0, 1) ? 0 : pick(8, 96);
      c.qk_norm = pick(0, 1);
      c.dense_layers = c.layers > 1 && pick(0, 2) == 0 ? pick(1, c.layers - 1) : 0;  // DeepSeek-V3's first dense layers
      c.attention_dp = c.tp > 1 ? pick(0, 1) : 0;
      c.dispatch_bytes = pick(1, 2);
      if (c.experts % 4 == 0 && pick(0, 2) == 0) {  // group-limited routing: 4 groups, the best 2
        c.expert_groups = 4, c.topk_groups = 2;
        if (c.top_k > 2 * (c.experts / 4)) c.top_k = 2 * (c.experts / 4);
      }
      c.redundant_experts = 0;
      if (c.tp > 1 && pick(0, 1)) {  // redundant copies that split evenly over the ranks
        const std::int64_t r = c.tp - c.experts % c.tp + c.tp * pick(0, 1);
        if (r <= c.experts * (c.tp - 1)) c.redundant_experts = r;
      }
      const std::map<std::string, std::string> presets = {{"--routing", routings[pick(0, 3)]},
                                                          {"--routing-seed", std::to_string(pick(0, 1000))}};
      family("llm").prepare(presets, {}, &c);
      if (llm_check(c) != kLlmOk || llm_reference_ops(c) > 4000) continue;
      ++(*counts)[c.attention_dp ? 0 : 1];
      if (c.tp > 1) ++(*counts)[2];
      if (c.redundant_experts > 0) ++(*counts)[3];
      if (c.shared_intermediate > 0) ++(*counts)[4];
      if (c.qk_norm) ++(*counts)[5];
      if (c.routing == static_cast<std::int64_t>(LlmRouting::zipf)) ++(*counts)[6];
      if (c.phase == static_cast<std::int64_t>(LlmPhase::prefill)) ++(*counts)[7];
      if (c.dense_layers > 0) ++(*counts)[8];
      if (c.expert_groups > 1) ++(*counts)[9];
      out.push_back(c);
    }
  }
  return out;
}

// Mixture-of-experts steps on both engines: every figure equal, the MoE ones included.
TEST_P(LlmParity, TwoThousandRandomMoeConfigs) {
#if defined(__SANITIZE_ADDRESS__)
  const int n = 300;
#else
  const int n = 2000;
#endif
  std::vector<int> counts;
  const std::vector<LlmConfig> configs = random_moe_configs(n, 20261207, &counts);
  for (std::size_t i = 0; i < counts.size(); ++i) EXPECT_GT(counts[i], n / 40) << "combination " << i << " barely covered";
  const std::vector<LlmResult> exec = expect_parity(configs);
  std::int64_t a2a = 0, whole = 0;
  for (std::size_t i = 0; i < exec.size(); ++i) {
    a2a += exec[i].dispatch_ps > 0 && exec[i].combine_ps > 0;
    const LlmConfig& c = configs[i];
    if (c.pp > 1 || c.microbatches > 1) continue;
    // One stage's layers in turn: its dense layers, its MoE layers, the head.
    ++whole;
    EXPECT_EQ(exec[i].model_latency_ps,
              c.dense_layers * exec[i].dense_layer_ps + (c.layers - c.dense_layers) * exec[i].layer_ps + exec[i].head_ps)
        << describe(c);
  }
  EXPECT_GT(a2a, n / 40) << "dispatch and combine barely timed";
  EXPECT_GT(whole, n / 4);
}

// Multi-head latent attention (docs/model.md section 13.12) on dense and MoE steps: latents
// with and without a query latent, rotated parts and value heads of their own widths, decode
// absorbed and prefill expanded; both engines agree on every figure.
TEST_P(LlmParity, RandomLatentAttentionConfigs) {
#if defined(__SANITIZE_ADDRESS__)
  const int n = 200;
#else
  const int n = 1000;
#endif
  std::mt19937_64 rng(11);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<int> counts;
  std::vector<LlmConfig> base = random_configs(n, 20261208, &counts);
  for (const LlmConfig& c : random_moe_configs(n / 2, 20261209, &counts)) base.push_back(c);
  std::vector<LlmConfig> configs;
  int moe = 0, prefill = 0, q_lora = 0, tp = 0;
  for (LlmConfig c : base) {
    c.kv_heads = c.heads, c.qk_norm = 0;
    c.kv_lora = pick(4, 96);
    c.q_lora = pick(0, 1) ? 0 : pick(4, 64);
    c.rope_dim = 2 * pick(1, c.head_dim / 4);
    c.v_head = pick(2, 80);
    if (llm_check(c) != kLlmOk || llm_reference_ops(c) > 5000) continue;
    moe += c.experts > 0, prefill += c.phase == static_cast<std::int64_t>(LlmPhase::prefill), q_lora += c.q_lora > 0;
    tp += c.tp > 1 && !c.attention_dp;
    configs.push_back(c);
  }
  EXPECT_GT(configs.size(), static_cast<std::size_t>(n / 2));
  EXPECT_GT(moe, n / 10);
  EXPECT_GT(prefill, n / 10);
  EXPECT_GT(q_lora, n / 10);
  EXPECT_GT(tp, n / 10);
  expect_parity(configs);
}

// Llama 4's attention (docs/model.md section 13.14) on dense and MoE steps: every Nth layer
// without RoPE (global), the others' attention in chunks shorter and longer than the
// context or prompt, q/k norms L2 or none, stages that split the layers without RoPE
// unevenly; both engines agree on every figure, and one stage's step is its layers of each
// kind and the head.
TEST_P(LlmParity, RandomNopeAndChunkedAttentionConfigs) {
#if defined(__SANITIZE_ADDRESS__)
  const int n = 200;
#else
  const int n = 1000;
#endif
  std::mt19937_64 rng(12);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<int> counts;
  std::vector<LlmConfig> base = random_configs(n, 20261210, &counts);
  for (const LlmConfig& c : random_moe_configs(n / 2, 20261211, &counts)) base.push_back(c);
  std::vector<LlmConfig> configs;
  int moe = 0, prefill = 0, split_chunks = 0, nope = 0, staged = 0;
  for (LlmConfig c : base) {
    c.dense_layers = 0;
    c.nope_every = pick(0, 3) == 0 ? 0 : pick(1, c.layers);
    const std::int64_t span = c.phase == static_cast<std::int64_t>(LlmPhase::prefill) ? c.prompt : c.context;
    c.attn_chunk = pick(0, 3) == 0 ? 0 : pick(1, span + 2);
    c.qk_norm = c.nope_every > 0 ? 2 * pick(0, 1) : pick(0, 2);
    if (c.experts > 0) family("llm").prepare({{"--routing", "zipf:1.0"}, {"--routing-seed", std::to_string(pick(0, 99))}}, {}, &c);
    if (llm_check(c) != kLlmOk || llm_reference_ops(c) > 5000) continue;
    moe += c.experts > 0, prefill += c.phase == static_cast<std::int64_t>(LlmPhase::prefill);
    split_chunks += c.attn_chunk > 0 && c.attn_chunk < span;
    nope += llm_nope_layers(llm_shape_of(c)) > 0;
    staged += c.pp > 1 && c.nope_every > 1;
    configs.push_back(c);
  }
  EXPECT_GT(configs.size(), static_cast<std::size_t>(n / 2));
  EXPECT_GT(moe, n / 10);
  EXPECT_GT(prefill, n / 10);
  EXPECT_GT(split_chunks, n / 10);
  EXPECT_GT(nope, n / 4);
  EXPECT_GT(staged, n / 40);
  const std::vector<LlmResult> exec = expect_parity(configs);
  for (std::size_t i = 0; i < exec.size(); ++i) {
    const LlmConfig& c = configs[i];
    if (c.pp > 1 || c.microbatches > 1) continue;
    const std::int64_t a = llm_nope_layers(llm_shape_of(c));
    EXPECT_EQ(exec[i].model_latency_ps, a * exec[i].dense_layer_ps + (c.layers - a) * exec[i].layer_ps + exec[i].head_ps)
        << describe(c);
  }
}

// Tensor-parallel allreduces with channels (--tp-channels): random steps at the cube and sip
// levels with 2 to 16 channels or auto; both engines agree exactly, and channels never make a
// step's allreduce share slower than auto finds it.
TEST_P(LlmParity, TensorParallelChannels) {
  std::vector<int> counts;
  std::mt19937_64 rng(7);
  std::vector<LlmConfig> configs;
  std::int64_t several = 0, automatic = 0;
  for (LlmConfig c : random_configs(1200, 20261206, &counts)) {
    if (c.tp < 2 || (c.tp_level != static_cast<std::int64_t>(CollLevel::cube) && c.tp_level != static_cast<std::int64_t>(CollLevel::sip)))
      continue;
    std::vector<std::int64_t> fit{0};
    for (std::int64_t g = 2; g <= kCollMaxChannels; ++g)
      if (coll_channels_fit(c.hw, c.tp_level, g)) fit.push_back(g);
    c.tp_channels = fit[static_cast<std::size_t>(std::uniform_int_distribution<std::size_t>(0, fit.size() - 1)(rng))];
    if (llm_check(c) != kLlmOk || llm_reference_ops(c) > 8000) continue;
    several += c.tp_channels > 1;
    automatic += c.tp_channels == 0;
    configs.push_back(c);
  }
  EXPECT_GT(several, 30);
  EXPECT_GT(automatic, 15);
  const std::vector<LlmResult> exec = expect_parity(configs);
  ASSERT_EQ(exec.size(), configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (configs[i].tp_channels == 0) {
      LlmConfig one = configs[i];
      one.tp_channels = 1;
      EXPECT_LE(exec[i].allreduce_ps, LlmModel::evaluate(one).allreduce_ps) << describe(configs[i]);
    }
  }
}

// The argument that lets a step be timed from one layer: on models small enough to run
// whole, the reference engine running every layer gives the step the one-layer count gives.
// The two-stage evaluation's first stage (ADR 0023): with the allreduce model's small state
// a step is the full state's result, bytewise, or deferred (an allreduce the small state
// cannot hold), and never anything else.
TEST(LlmSmallState, GivesTheFullResultOrDefers) {
  std::vector<int> counts;
  std::int64_t deferred = 0, held = 0;
  for (const LlmConfig& c : random_configs(3000, 20261204, &counts)) {
    const LlmResult a = LlmModel::evaluate_small(c), b = LlmModel::evaluate(c);
    if (a.status == kStatusDeferred) {
      ++deferred;
      LlmResult z{};
      z.status = kStatusDeferred;
      EXPECT_EQ(std::memcmp(&a, &z, sizeof a), 0) << "a deferred result carries figures: " << describe(c);
      continue;
    }
    held += c.tp > 1 && a.status == kLlmOk;
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << describe(c);
  }
  std::printf("llm small state: %lld of 3000 deferred, %lld with an allreduce held\n", static_cast<long long>(deferred),
              static_cast<long long>(held));
  EXPECT_GT(deferred, 0);
  EXPECT_GT(held, 500);
}

// A decode step whose rank is a whole SIP of more PEs than decode's small state holds (256):
// its attention defers, and with it the whole step, which the full state evaluates; the same
// steps on SIPs within the small state are held, bytewise. The machines are too large for the
// reference engine's budget here, so only the two states are compared.
TEST(LlmSmallState, DefersAStepWhoseAttentionItCannotHold) {
  std::vector<int> counts;
  int deferred = 0, held = 0;
  for (LlmConfig c : random_configs(400, 20261208, &counts)) {
    if (c.phase != static_cast<std::int64_t>(LlmPhase::decode)) continue;
    c.tp_level = static_cast<std::int64_t>(CollLevel::sip), c.tp = 1;  // a rank: one whole SIP
    for (const std::int64_t pe_cols : {std::int64_t{4}, std::int64_t{5}}) {
      c.hw.sips = 1, c.hw.cube_rows = c.hw.cube_cols = 4, c.hw.pe_rows = 4, c.hw.pe_cols = pe_cols;  // 256, 320 PEs
      c.pp = 1, c.microbatches = 1, c.stage_layers[0] = 0;
      if (llm_check(c) != kLlmOk) continue;
      const LlmResult a = LlmModel::evaluate_small(c), b = LlmModel::evaluate(c);
      ASSERT_EQ(b.status, kLlmOk) << describe(c);
      const bool beyond = c.hw.cubes_per_sip() * c.hw.pes_per_cube() > dec_detail::kDecSmallPes;
      if (beyond) {
        ++deferred;
        LlmResult z{};
        z.status = kStatusDeferred;
        EXPECT_EQ(std::memcmp(&a, &z, sizeof a), 0) << "not deferred, or carrying figures: " << describe(c);
      } else {
        ++held;
        EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << describe(c);
      }
    }
  }
  EXPECT_GT(deferred, 20);
  EXPECT_GT(held, 20);
}

TEST(LlmLayers, AWholeModelEqualsItsLayersCountedFromOne) {
  std::vector<int> counts;
  std::vector<LlmConfig> configs = random_configs(100, 7, &counts);
  int whole = 0;
  for (LlmConfig c : configs) {
    if (c.layers < 2 || c.pp > 1 || c.microbatches > 1) continue;  // one stage's kernels in turn
    ++whole;
    c.layers_run = 0;
    const LlmResult all = llm_reference(c, nullptr);
    c.layers_run = 1;
    const LlmResult one = llm_reference(c, nullptr);
    EXPECT_EQ(all.latency_ps, c.layers * one.layer_ps + one.head_ps) << describe(c);
    EXPECT_EQ(all.model_latency_ps, one.model_latency_ps) << describe(c);
    EXPECT_EQ(all.latency_ps, all.model_latency_ps) << describe(c);
  }
  EXPECT_GT(whole, 20);
}

// The whole of LLaMA-3.1-8B, every one of its 32 layers run by the reference engine, equals
// the batched model's step, for decode under several mappings, batches and contexts.
TEST(LlmLayers, TheWholeOfLlama8bDecodeOnBothEngines) {
  const TopologySpec topo = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  const LlmShape m = load_llm_model("llama-3.1-8b").shape;
  struct Mapping {
    std::int64_t tp, algo, kase, batch, context;
  };
  for (const Mapping& p : {Mapping{1, 0, 4, 1, 4096}, Mapping{8, 0, 4, 4, 2048}, Mapping{4, 1, 3, 16, 1000},
                           Mapping{2, 4, 1, 2, 8192}, Mapping{8, 2, 2, 64, 512}}) {
    LlmConfig c{};
    c.hw = topo.hw();
    c.hidden = m.hidden, c.intermediate = m.intermediate, c.heads = m.heads, c.kv_heads = m.kv_heads;
    c.head_dim = m.head_dim, c.layers = m.layers, c.vocab = m.vocab, c.tied = m.tied;
    c.weight_bytes = c.kv_bytes = 2;
    c.phase = static_cast<std::int64_t>(LlmPhase::decode), c.batch = p.batch, c.context = p.context, c.prompt = 1;
    c.tp = p.tp, c.tp_level = static_cast<std::int64_t>(CollLevel::cube), c.pp = 1, c.microbatches = 1;
    c.tp_algo = p.algo, c.attention_case = p.kase, c.layers_run = 0;
    ASSERT_EQ(llm_check(c), kLlmOk) << describe(c);
    const LlmResult model = llm_model(c), ref = llm_reference(c, nullptr);
    EXPECT_EQ(figures_diff(family("llm"), c, ref, model), "") << describe(c);
    EXPECT_EQ(ref.latency_ps, ref.model_latency_ps) << describe(c);  // every layer ran
    EXPECT_EQ(ref.latency_ps, 32 * ref.layer_ps + ref.head_ps) << describe(c);
  }
}

}  // namespace
}  // namespace kb
