// Data mode of a whole model (docs/model.md section 13.9): the reference engine's logits of a
// small random model equal a float64 forward pass within fp16 accuracy, in decode and
// prefill, on random machines (tiled vector kernels, split GEMMs, every attention case,
// decode waves) and mappings (tensor-parallel ranks of every level, pipeline stages,
// micro-batches); the data-mode run takes the timing run's time; the layer program's vector
// ops compute what they say.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "host/common/error.h"
#include "host/families/llm/llm_data.h"
#include "host/families/llm/llm_program.h"
#include "host/runtime/context.h"
#include "tiny_llm.h"
#include "topologies.h"

namespace kb {
namespace {

std::string describe(const LlmConfig& c) {
  return std::string(c.phase == static_cast<std::int64_t>(LlmPhase::decode) ? "decode" : "prefill") + " hidden " +
         std::to_string(c.hidden) + " inter " + std::to_string(c.intermediate) + " heads " + std::to_string(c.heads) + "/" +
         std::to_string(c.kv_heads) + "x" + std::to_string(c.head_dim) + " layers " + std::to_string(c.layers) + " vocab " +
         std::to_string(c.vocab) + " batch " + std::to_string(c.batch) + " context " + std::to_string(c.context) + " prompt " +
         std::to_string(c.prompt) + " case " + std::to_string(c.attention_case) + " tp_level " + std::to_string(c.tp_level) +
         " cubes " + std::to_string(c.hw.cubes_per_sip()) + " pes " + std::to_string(c.hw.pes_per_cube()) + " sram_kib " +
         std::to_string(c.hw.sram_kib) + " wb " + std::to_string(c.weight_bytes);
}

// The shipped tiny random model's shape: hidden 64, 2 layers, 4 heads, 2 KV heads, on the default machine.
LlmConfig tiny(LlmPhase phase) { return unittest::tiny_llm(phase, 2, 24, 20); }

// fp16 accuracy: a value stored in fp16 is off by up to 2^-11 of itself; a layer stores its
// activations a dozen times, mostly as sums of many such products whose errors partly
// cancel, so the logits' error and every token's residual stream's are held to 2^-9 of their
// largest magnitude (four half-ulps). An 8-bit KV cache rounds the new positions to e4m3
// (2^-4), which the float64 pass does not: 2^-4 there.
double tolerance(const LlmConfig& c) { return c.kv_bytes == 1 ? 1.0 / 16 : 1.0 / 512; }

double worst = 0;  // the largest relative error seen (fp16 caches)

void expect_close(const LlmConfig& c, std::uint64_t seed) {
  const LlmDataReport d = llm_data_run(c, seed);
  ASSERT_EQ(d.logits.size(), static_cast<std::size_t>(c.batch * c.vocab)) << describe(c);
  ASSERT_GT(d.max_abs_logit, 0.1) << describe(c);
  EXPECT_LE(d.max_abs_error, tolerance(c) * d.max_abs_logit) << describe(c) << ": rms " << d.rms_error;
  EXPECT_LE(d.hidden_max_abs_error, tolerance(c) * d.hidden_max_abs) << describe(c);
  if (c.kv_bytes != 1) worst = std::max({worst, d.max_abs_error / d.max_abs_logit, d.hidden_max_abs_error / d.hidden_max_abs});
  // The values change nothing of the timing: each layer takes the timing run's time.
  const LlmResult t = llm_reference(c);
  EXPECT_EQ(d.layer_ps, t.layer_ps) << describe(c);
  EXPECT_EQ(d.head_ps, t.head_ps) << describe(c);
}

TEST(LlmData, TinyModelLogitsMatchFloat64) {
  for (LlmPhase phase : {LlmPhase::decode, LlmPhase::prefill}) {
    const LlmConfig c = tiny(phase);
    const LlmDataReport d = llm_data_run(c, 7);
    EXPECT_LE(d.max_abs_error, tolerance(c) * d.max_abs_logit) << describe(c);
    // The forward pass is not a copy of the run: a different seed moves the logits.
    const LlmDataReport other = llm_data_run(c, 8);
    EXPECT_NE(d.expected, other.expected);
    std::printf("[ data ] %s: logits %lldx%lld, max |error| %.3g against max |logit| %.3g (%.2g of it), rms %.3g\n",
                phase == LlmPhase::decode ? "decode" : "prefill", static_cast<long long>(d.sequences),
                static_cast<long long>(d.vocab), d.max_abs_error, d.max_abs_logit, d.max_abs_error / d.max_abs_logit,
                d.rms_error);
    expect_close(c, 7);
  }
}

TEST(LlmData, RandomModelsAndMachines) {
  std::mt19937_64 rng(20261203);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int run = 0, prefills = 0, tiled = 0, tp = 0, pp = 0, replicated = 0, micro = 0;
  int cases[5] = {};
  for (int i = 0; i < 2000 && run < 60; ++i) {
    LlmConfig c = tiny(pick(0, 2) == 0 ? LlmPhase::prefill : LlmPhase::decode);
    HwConfig& h = c.hw;
    h.cube_rows = pick(1, 2), h.cube_cols = pick(1, 2), h.pe_rows = pick(1, 2), h.pe_cols = pick(1, 3);
    h.sram_kib = pick(0, 2) == 0 ? pick(16, 48) : pick(256, 1024);  // small SRAMs tile the kernels and split decode into waves
    h.vector_lanes = std::int64_t{1} << pick(2, 6);
    c.tp_level = pick(1, 2);  // a cube, or the SIP's cubes
    c.kv_heads = pick(1, 2);
    c.heads = c.kv_heads * pick(1, 3);
    c.head_dim = 2 * pick(2, 12);
    c.hidden = 8 * pick(2, 10);
    c.intermediate = pick(8, 96);
    c.layers = pick(1, 3);
    c.vocab = pick(8, 160);
    c.weight_bytes = pick(1, 2);
    c.kv_bytes = pick(0, 4) == 0 ? 1 : 2;
    c.batch = pick(1, 4);
    c.context = pick(1, 40);
    if (c.phase == static_cast<std::int64_t>(LlmPhase::prefill)) c.prompt = pick(1, 24), c.batch = pick(1, 2);
    c.attention_case = pick(1, 4);
    if (pick(0, 1)) {  // tensor-parallel ranks of any level, and pipeline stages
      h.sips = pick(1, 2);
      h.cube_rows = h.cube_cols = h.pe_rows = 2, h.pe_cols = pick(2, 4);  // room for 4 or 8 ranks of a level
      c.tp_level = pick(0, 3);
      c.kv_heads = 2 * pick(1, 2), c.heads = c.kv_heads * 2 * pick(1, 2);  // more ranks than KV heads, often
      c.tp = std::int64_t{2} << pick(0, 2);
      c.pp = c.layers > 1 && h.sips == 2 && c.tp_level != 2 ? 2 : 1;
      if (c.batch % 2 == 0) c.microbatches = pick(1, 2);
      c.tp_algo = pick(0, kCollAlgos - 1);
    }
    if (llm_check(c) != kLlmOk) continue;
    tp += c.tp > 1;
    replicated += c.tp > c.kv_heads;
    pp += c.pp > 1;
    micro += c.microbatches > 1;
    ++run;
    prefills += c.phase == static_cast<std::int64_t>(LlmPhase::prefill);
    tiled += h.sram_kib < 64;
    ++cases[c.phase == static_cast<std::int64_t>(LlmPhase::prefill) ? 0 : c.attention_case];
    expect_close(c, static_cast<std::uint64_t>(i) + 1);
    if (HasFailure()) return;
  }
  std::printf("[ data ] worst relative error of %d random models (fp16 KV cache): %.3g\n", run, worst);
  EXPECT_EQ(run, 60);
  EXPECT_GE(tp, 12);
  EXPECT_GE(pp, 3);
  EXPECT_GE(replicated, 3);  // each KV head on several ranks
  EXPECT_GE(micro, 3);
  EXPECT_GE(prefills, 6);
  EXPECT_GE(tiled, 6);
  for (int k = 1; k <= 4; ++k) EXPECT_GE(cases[k], 2) << "attention case " << k;
}

TEST(LlmData, RefusesWhatItCannotCompute) {
  LlmConfig c = tiny(LlmPhase::decode);
  auto why = [&](const LlmConfig& x) {
    try {
      llm_data_run(x, 1);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  LlmConfig t = c;
  t.layers_run = 1;
  EXPECT_NE(why(t).find("--data runs every layer"), std::string::npos) << why(t);
  // LLaMA-3.1-8B: a decode step is 8 x 10^9 multiply-accumulates.
  t = c, t.hidden = 4096, t.intermediate = 14336, t.heads = 32, t.kv_heads = 8, t.head_dim = 128, t.vocab = 128256;
  t.layers = 32, t.batch = 1, t.context = 4096, t.tp_level = static_cast<std::int64_t>(CollLevel::sip);
  ASSERT_EQ(llm_check(t), kLlmOk);
  EXPECT_NE(why(t).find("computes every value on the host"), std::string::npos) << why(t);
}

// Each new op on its own, against the formula in float64.
TEST(LlmData, LayerOpsComputeWhatTheySay) {
  RuntimeContext ctx(unittest::topo("tiny.yaml"), ContextOptions{true});
  const std::int64_t R = 3, C = 8, d = 4;
  const Tensor x = ctx.random({R, C}, DType::f32, Placement{}, "x", 3);
  const Tensor w = ctx.random({1, C}, DType::f32, Placement{}, "w", 4);
  const Tensor tab = ctx.random({R, d}, DType::f32, Placement{}, "table", 5);
  Tensor out[4];
  for (int i = 0; i < 4; ++i) out[i] = ctx.zeros({R, C}, DType::f32, Placement{}, "o" + std::to_string(i));
  const Tensor sums = ctx.zeros({R, 1}, DType::f32, Placement{}, "sums");
  ctx.launch("ops", LaunchGrid{}, [&](PeProgram& p) {
    const SramBuf a = p.sram(R * C * 4, DType::f32), wb = p.sram(C * 4, DType::f32), tb = p.sram(R * d * 4, DType::f32);
    const SramBuf row = p.sram(R * 4, DType::f32);
    OpId l = p.load(x, Region{0, R, 0, C}, a);
    const OpId lw = p.load(w, Region{0, 1, 0, C}, wb), lt = p.load(tab, Region{0, R, 0, d}, tb);
    OpId s = p.row_sumsq(row, a, R, C, {l});
    s = p.store(row, sums, Region{0, R, 0, 1}, {s});
    s = p.vector_rsqrt(row, R, 0.5f, 0.25f, {s});
    s = p.row_mul(a, row, R, C, {s});
    s = p.col_mul(a, wb, R, C, {s, lw});
    l = p.store(a, out[0], Region{0, R, 0, C}, {s});
    l = p.load(x, Region{0, R, 0, C}, a, {l});
    l = p.rope(a, tb, R, C, d, {l, lt});
    l = p.store(a, out[1], Region{0, R, 0, C}, {l});
    l = p.load(x, Region{0, R, 0, C}, a, {l});
    l = p.vector_silu(a, R * C, {l});
    p.store(a, out[2], Region{0, R, 0, C}, {l});
  });
  ASSERT_EQ(ctx.run().status, engine::Status::ok);
  const auto &X = ctx.values(x), &W = ctx.values(w), &T = ctx.values(tab);
  for (std::int64_t r = 0; r < R; ++r) {
    double ss = 0;
    for (std::int64_t c = 0; c < C; ++c) ss += static_cast<double>(X[r * C + c]) * X[r * C + c];
    EXPECT_NEAR(ctx.values(sums)[r], ss, 1e-5);
    const double inv = 1.0 / std::sqrt(ss * 0.5 + 0.25);
    for (std::int64_t c = 0; c < C; ++c) {
      const double v = X[r * C + c];
      EXPECT_NEAR(ctx.values(out[0])[r * C + c], v * inv * W[c], 1e-5) << r << "," << c;
      EXPECT_NEAR(ctx.values(out[2])[r * C + c], v / (1 + std::exp(-v)), 1e-5) << r << "," << c;
      const std::int64_t head = c / d * d, i = c % d, half = d / 2, j = i % half;
      const double cs = T[r * d + j], sn = T[r * d + half + j];
      const double x1 = X[r * C + head + j], x2 = X[r * C + head + half + j];
      EXPECT_NEAR(ctx.values(out[1])[r * C + c], i < half ? x1 * cs - x2 * sn : x2 * cs + x1 * sn, 1e-5) << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace kb
