// A tuned GEMM kernel (src/device/models/gemm/gemm_tune.h): the tiling of least latency in
// the gemm family's space, ties to the first in the stated order, and the pruned search the
// same as the exhaustive one; whole models on tuned kernels are never slower than on the
// automatic tiling, kernel by kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device/models/gemm/gemm_tune.h"
#include "device/models/llm/llm_model.h"
#include "host/llm/model_file.h"
#include "host/topology/load.h"

namespace kb {
namespace {

// One tile dimension's candidates, written out plainly: every power of two from 32 below the
// dimension and below the bound, then min(dimension, bound).
std::vector<std::int64_t> candidates(std::int64_t dim, std::int64_t bound) {
  std::vector<std::int64_t> v;
  const std::int64_t last = std::min(dim, bound);
  for (std::int64_t t = 32; t < last; t *= 2) v.push_back(t);
  v.push_back(last);
  return v;
}

std::string shape(const GemmConfig& g) {
  return std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) + " on " + std::to_string(g.cubes) +
         " cubes x " + std::to_string(g.pes) + " PEs, array " + std::to_string(g.hw.matrix_rows) + "x" +
         std::to_string(g.hw.matrix_cols) + ", SRAM " + std::to_string(g.hw.sram_kib) + " KiB";
}

TEST(GemmTune, TheLeastLatencyOfTheSpaceTiesToTheFirstAndPruningChangesNothing) {
  const TopologySpec base = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  std::mt19937_64 rng(61);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const std::int64_t dims[] = {1, 3, 8, 32, 33, 100, 128, 640, 1280, 2048, 5000};
  int with_ties = 0, improved = 0;
  for (int trial = 0; trial < 60; ++trial) {
    GemmConfig g{};
    g.hw = base.hw();
    g.hw.matrix_rows = std::int64_t{8} << pick(0, 3), g.hw.matrix_cols = std::int64_t{8} << pick(0, 3);
    g.hw.dataflow = static_cast<Dataflow>(pick(0, 2));
    g.hw.sram_kib = std::int64_t{64} << pick(0, 5);
    g.m = dims[pick(0, 10)], g.n = dims[pick(0, 10)], g.k = dims[pick(0, 10)];
    g.pes = pick(1, g.hw.pes_per_cube()), g.cubes = pick(1, g.hw.cubes_per_sip()), g.b_bytes = pick(1, 2);
    // The space, walked here in the stated order: split, tile_m, tile_n, tile_k, 2 then 1 buffers.
    ps_t least = -1;
    GemmConfig first{};
    int at_least = 0;
    for (std::int64_t split = kGemmSplitRows; split <= kGemmSplitColsK; ++split)
      for (std::int64_t tm : candidates(g.m, 512))
        for (std::int64_t tn : candidates(g.n, 512))
          for (std::int64_t tk : candidates(g.k, 4096))
            for (std::int64_t buffers : {2, 1}) {
              GemmConfig c = g;
              c.split = split, c.tile_m = tm, c.tile_n = tn, c.tile_k = tk, c.buffers = buffers;
              const GemmResult r = gemm_model(c);
              if (r.status != kGemmOk) continue;
              if (least < 0 || r.latency_ps < least) least = r.latency_ps, first = c, at_least = 0;
              at_least += r.latency_ps == least;
            }
    const GemmConfig tuned = gemm_tune(g), exhaustive = gemm_tune(g, false);
    EXPECT_EQ(std::memcmp(&tuned, &exhaustive, sizeof tuned), 0) << shape(g);
    GemmConfig automatic = g;
    automatic.tile_m = automatic.tile_n = automatic.tile_k = 0, automatic.split = kGemmSplitAuto, automatic.buffers = 2;
    gemm_complete(automatic);
    if (least < 0) {  // nothing valid: the automatic tiling, whose status says why
      EXPECT_EQ(std::memcmp(&tuned, &automatic, sizeof tuned), 0) << shape(g);
      EXPECT_NE(gemm_model(tuned).status, kGemmOk) << shape(g);
      continue;
    }
    EXPECT_EQ(gemm_model(tuned).latency_ps, least) << shape(g);
    EXPECT_EQ(std::memcmp(&tuned, &first, sizeof tuned), 0) << shape(g);
    const GemmResult a = gemm_model(automatic);
    if (a.status == kGemmOk) {
      EXPECT_LE(least, a.latency_ps) << shape(g);
      improved += least < a.latency_ps;
    }
    with_ties += at_least > 1;
    const GemmConfig memo = gemm_tuned(g);
    EXPECT_EQ(std::memcmp(&memo, &tuned, sizeof tuned), 0) << shape(g);  // the memo's answer is the search's
  }
  EXPECT_GT(with_ties, 0);  // the tie-break was exercised
  EXPECT_GT(improved, 0);   // and the automatic tiling is not always the best
}

// What the pruned search relies on, on random machines, shapes and tilings: a tiling valid
// with 2 buffer sets is no slower than with 1, no PE finishes before the PEs' average
// matrix work or DMA work, and none before the bound of the busiest PE's full k-slices
// (gemm_model.h's busiest_full_bound).
TEST(GemmTune, TwoBufferSetsAreNeverSlowerAndTheBoundHolds) {
  const HwConfig base = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml").hw();
  std::mt19937_64 rng(30);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int both = 0, tight = 0;
  for (int t = 0; t < 20000; ++t) {
    GemmConfig g{};
    g.hw = base;
    g.hw.matrix_rows = std::int64_t{8} << pick(0, 4), g.hw.matrix_cols = std::int64_t{8} << pick(0, 4);
    g.hw.dataflow = static_cast<Dataflow>(pick(0, 2));
    g.hw.sram_kib = std::int64_t{64} << pick(0, 5);
    g.hw.hbm_bandwidth_gbps = 100 * pick(1, 40), g.hw.dma_bandwidth_gbps = 50 * pick(1, 20);
    g.hw.hbm_tenants = pick(0, 4);
    g.m = pick(1, 5000), g.n = pick(1, 5000), g.k = pick(1, 9000);
    g.pes = pick(1, g.hw.pes_per_cube()), g.cubes = pick(1, g.hw.cubes_per_sip()), g.b_bytes = pick(1, 2);
    g.tile_m = std::min<std::int64_t>(g.m, std::int64_t{16} << pick(0, 5));
    g.tile_n = std::min<std::int64_t>(g.n, std::int64_t{16} << pick(0, 5));
    g.tile_k = std::min<std::int64_t>(g.k, std::int64_t{16} << pick(0, 8));
    g.split = pick(kGemmSplitRows, kGemmSplitColsK);
    GemmResult results[2];
    for (int b = 0; b < 2; ++b) {
      g.buffers = 2 - b;
      results[b] = gemm_model(g);
      if (results[b].status != kGemmOk) continue;
      const GemmResult& r = results[b];
      EXPECT_LE(r.matrix_busy_ps / (g.pes * g.cubes), r.latency_ps) << shape(g);
      EXPECT_LE(r.dma_busy_ps / (g.pes * g.cubes), r.latency_ps) << shape(g);
      const ps_t bound = gemm_detail::busiest_full_bound(g, gemm_grid(g));
      EXPECT_LE(bound, r.latency_ps) << shape(g) << " tiles " << g.tile_m << "x" << g.tile_n << "x" << g.tile_k
                                        << " split " << g.split << " buffers " << g.buffers;
      tight += bound * 10 >= r.latency_ps * 9;
    }
    const GemmResult &two = results[0], &one = results[1];
    if (two.status != kGemmOk || one.status != kGemmOk) continue;
    ++both;
    EXPECT_LE(two.latency_ps, one.latency_ps) << shape(g) << " tiles " << g.tile_m << "x" << g.tile_n << "x" << g.tile_k;
  }
  EXPECT_GT(both, 5000);
  EXPECT_GT(tight, 5000);  // the bound is within 10 % of the latency often enough to prune
}

// The LLaMA-3.1-70B shapes on the default SIP (8 cubes of 8 PEs, os): the tilings
// and latencies a gemm sweep over the same space finds.
TEST(GemmTune, FindsWhatAGemmSweepFindsOnLlamaShapes) {
  GemmConfig g{};
  g.hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml").hw();
  g.pes = g.hw.pes_per_cube(), g.cubes = g.hw.cubes_per_sip(), g.b_bytes = 2;
  struct Case {
    std::int64_t m, n, k, tm, tn, tk, split;
    ps_t latency;
  };
  for (const Case& c : {Case{2048, 1280, 8192, 64, 64, 2048, kGemmSplitRows, 230507952},
                        Case{2048, 7168, 8192, 64, 64, 2048, kGemmSplitRows, 1265814680},
                        Case{32, 1280, 8192, 32, 64, 256, kGemmSplitColsK, 6975511}}) {
    g.m = c.m, g.n = c.n, g.k = c.k;
    const GemmConfig t = gemm_tune(g);
    EXPECT_EQ(t.tile_m, c.tm);
    EXPECT_EQ(t.tile_n, c.tn);
    EXPECT_EQ(t.tile_k, c.tk);
    EXPECT_EQ(t.split, c.split);
    EXPECT_EQ(gemm_model(t).latency_ps, c.latency);
  }
}

// A whole model's GEMMs: tuned, each no slower than the automatic tiling; its attention no
// slower on tuned chunks and tiles; its allreduces the same.
TEST(GemmTune, AStepOnTunedKernelsIsNeverSlowerKernelByKernel) {
  const TopologySpec topo = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  const LlmShape s = load_llm_model("llama-3.1-8b").shape;
  struct Gemms {
    std::vector<ps_t> ps;
    void gemm(const GemmConfig& g, const LlmKernel&, bool) { ps.push_back(gemm_model(g).latency_ps); }
    void attention(const DecodeConfig&, const LlmKernel&, bool) {}
    void attention(const LlmAttnConfig&, const LlmKernel&, bool) {}
    void allreduce(const AllreduceConfig&, const LlmKernel&, bool) {}
    void vector(const LlmVecConfig&, const LlmKernel&, bool) {}
    void transfer(const LlmSendConfig&) {}
  };
  int fits = 0;
  for (std::int64_t phase : {0, 1})
    for (std::int64_t batch : {1, 8, 64})
      for (std::int64_t tp : {2, 4, 8}) {
        LlmConfig c{};
        c.hw = topo.hw();
        c.hidden = s.hidden, c.intermediate = s.intermediate, c.heads = s.heads, c.kv_heads = s.kv_heads;
        c.head_dim = s.head_dim, c.layers = s.layers, c.vocab = s.vocab, c.tied = s.tied;
        c.weight_bytes = c.kv_bytes = 2, c.phase = phase, c.batch = batch, c.context = 4096, c.prompt = 512;
        c.tp = tp, c.tp_level = static_cast<std::int64_t>(CollLevel::cube), c.pp = 1, c.microbatches = 1;
        c.tp_algo = static_cast<std::int64_t>(CollAlgo::ring), c.attention_case = 1;
        if (llm_check(c) != kLlmOk) continue;  // too large for the ranks' HBM
        ++fits;
        Gemms best, automatic;
        llm_for_each_kernel(c, best);
        LlmConfig a = c;
        a.kernel_tuning = static_cast<std::int64_t>(LlmKernelTuning::automatic);
        llm_for_each_kernel(a, automatic);
        ASSERT_EQ(best.ps.size(), automatic.ps.size());
        for (std::size_t i = 0; i < best.ps.size(); ++i) EXPECT_LE(best.ps[i], automatic.ps[i]);
        const LlmResult rb = llm_model(c), ra = llm_model(a);
        EXPECT_LE(rb.gemm_ps, ra.gemm_ps);
        EXPECT_LE(rb.attention_ps, ra.attention_ps);  // tuned chunks and tiles too
        EXPECT_EQ(rb.allreduce_ps, ra.allreduce_ps);
        // The automatic tiling's estimate lands near the best (GemmAuto below says how near).
        EXPECT_LE(ra.gemm_ps, rb.gemm_ps + rb.gemm_ps / 20);
      }
  EXPECT_GE(fits, 12);
}

// The shapes of the GEMMs of the shipped models' steps: prefill (2048-token prompts) and
// decode (context 4K), batch 1-256 by octaves, tensor parallelism 1-8 over PEs, cubes or
// SIPs, on the default SIP and on ring8; each distinct (shape, rank machine) once.
std::vector<GemmConfig> shipped_model_gemms() {
  struct Collect {
    std::vector<GemmConfig> g;
    void gemm(const GemmConfig& x, const LlmKernel&, bool) { g.push_back(x); }
    void attention(const DecodeConfig&, const LlmKernel&, bool) {}
    void attention(const LlmAttnConfig&, const LlmKernel&, bool) {}
    void allreduce(const AllreduceConfig&, const LlmKernel&, bool) {}
    void vector(const LlmVecConfig&, const LlmKernel&, bool) {}
    void transfer(const LlmSendConfig&) {}
  };
  std::vector<GemmConfig> shapes;
  for (const char* topology : {"default", "ring8"}) {
    const HwConfig hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/" + topology + ".yaml").hw();
    for (const std::string& name : shipped_llm_models()) {
      const LlmModelFile f = load_llm_model(name);
      if (f.moe.experts > 0) continue;  // the dense LLaMA models
      const LlmShape s = f.shape;
      for (const LlmPhase phase : {LlmPhase::prefill, LlmPhase::decode})
        for (std::int64_t batch = 1; batch <= 256; batch *= 2)
          for (std::int64_t tp = 1; tp <= 8; tp *= 2)
            for (const CollLevel level : {CollLevel::pe, CollLevel::cube, CollLevel::sip}) {
              LlmConfig c{};
              c.hw = hw;
              c.hidden = s.hidden, c.intermediate = s.intermediate, c.heads = s.heads, c.kv_heads = s.kv_heads;
              c.head_dim = s.head_dim, c.layers = s.layers, c.vocab = s.vocab, c.tied = s.tied;
              c.weight_bytes = c.kv_bytes = 2, c.phase = static_cast<std::int64_t>(phase), c.batch = batch;
              c.context = 4096, c.prompt = 2048, c.tp = tp, c.tp_level = static_cast<std::int64_t>(level), c.pp = 1;
              c.microbatches = 1, c.tp_algo = static_cast<std::int64_t>(CollAlgo::ring), c.attention_case = 4;
              c.kernel_tuning = static_cast<std::int64_t>(LlmKernelTuning::automatic);
              if (llm_check_config(c) != kLlmOk) continue;  // the model does not fit the mapping
              Collect k;
              llm_for_each_kernel(c, k);
              for (const GemmConfig& g : k.g) {
                const bool seen = std::any_of(shapes.begin(), shapes.end(), [&](const GemmConfig& o) {
                  return o.m == g.m && o.n == g.n && o.k == g.k && o.pes == g.pes && o.cubes == g.cubes &&
                         std::memcmp(&o.hw, &g.hw, sizeof g.hw) == 0;
                });
                if (!seen) shapes.push_back(g);
              }
            }
    }
  }
  return shapes;
}

// The automatic tiling (gemm_auto.h), the gemm family's and --kernel-tuning auto's: within
// 5 % of the best tiling of the space on at least 95 % of the shipped models' GEMM shapes,
// and the same tiling whichever asks.
TEST(GemmAuto, WithinFivePercentOfTheBestOnTheShippedModelsSteps) {
  const std::vector<GemmConfig> shapes = shipped_model_gemms();
  ASSERT_GT(shapes.size(), 1000u);
  std::size_t near = 0, valid = 0;
  std::vector<double> worst;
  for (const GemmConfig& g : shapes) {
    GemmConfig family = g;
    family.tile_m = family.tile_n = family.tile_k = 0, family.split = kGemmSplitAuto, family.buffers = 2;
    gemm_complete(family);
    const GemmConfig automatic = gemm_automatic(g);
    if (gemm_check(family) == kGemmOk) EXPECT_EQ(std::memcmp(&family, &automatic, sizeof family), 0) << shape(g);
    const GemmResult a = gemm_model(automatic), b = gemm_model(gemm_tune(g));
    if (b.status != kGemmOk) continue;
    ++valid;
    ASSERT_EQ(a.status, kGemmOk) << shape(g);  // a tiling fits, so the automatic one does
    EXPECT_LE(b.latency_ps, a.latency_ps) << shape(g);
    near += a.latency_ps * 100 <= b.latency_ps * 105;
    worst.push_back(static_cast<double>(a.latency_ps) / static_cast<double>(b.latency_ps));
  }
  std::sort(worst.begin(), worst.end());
  EXPECT_GE(near * 100, valid * 95) << near << " of " << valid << " within 5 %; worst " << worst.back();
  EXPECT_GT(valid, 1000u);
}

// Partly automatic tilings: the fields given are kept, the others chosen; every tile given
// keeps the split rule of gemm_split_of.
TEST(GemmAuto, KeepsTheFieldsGiven) {
  GemmConfig g{};
  g.hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml").hw();
  g.pes = 8, g.cubes = 8, g.b_bytes = 2, g.buffers = 2;
  g.m = 2048, g.n = 1280, g.k = 8192;
  GemmConfig a = g;
  a.tile_m = 48, a.split = kGemmSplitCols;
  gemm_complete(a);
  EXPECT_EQ(a.tile_m, 48);
  EXPECT_EQ(a.split, kGemmSplitCols);
  EXPECT_GT(a.tile_n, 0);
  EXPECT_GT(a.tile_k, 0);
  EXPECT_EQ(gemm_check(a), kGemmOk);
  GemmConfig s = g;
  s.tile_m = s.tile_n = s.tile_k = 128;
  gemm_complete(s);
  EXPECT_EQ(s.tile_m, 128);
  GemmConfig r = g;
  r.tile_m = r.tile_n = r.tile_k = 128;
  EXPECT_EQ(s.split, gemm_split_of(r));
  GemmConfig none = g;  // no tiling of the space fits 1 KiB of SRAM
  none.hw.sram_kib = 1;
  gemm_complete(none);
  EXPECT_EQ(none.tile_m, 128);
  EXPECT_EQ(none.tile_k, 128);
  EXPECT_EQ(gemm_check(none), kGemmSramOverflow);
}

}  // namespace
}  // namespace kb
