// Parity: the batched model and the reference engine agree exactly.
#include <gtest/gtest.h>

#include <cstring>

#include "benches/milestone_1h_gemm.h"
#include "host/sweep/backend.h"
#include "host/sweep/gemm_sweep.h"
#include "host/topology/load.h"
#include "random_configs.h"

namespace kb {
namespace {

TopologySpec default_topo() { return load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml"); }

TEST(GemmParityOmp, EveryMilestoneConfig) {
  const TopologySpec topo = default_topo();
  std::vector<GemmParams> params;
  std::vector<GemmConfig> configs;
  for (const Shape& s : gemm_milestone_shapes())
    for (const Variant& v : gemm_milestone_variants()) {
      params.push_back(gemm_milestone_params(s, v));
      configs.push_back(gemm_config(topo, params.back()));
    }
  ASSERT_EQ(configs.size(), 24u);
  bool has_2048_tiles = false;
  const auto results = eval_gemm(BackendKind::omp, configs);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const GemmParams& p = params[i];
    has_2048_tiles |= ceil_div(p.m, p.tile_m) * ceil_div(p.n, p.tile_n) == 2048;
    ASSERT_EQ(results[i].status, kGemmOk);
    const GemmFigures ref = figures_of(run_gemm_reference(topo, p).report);
    EXPECT_EQ(figures_diff(ref, figures_of(results[i])), "") << "config " << i;
  }
  EXPECT_TRUE(has_2048_tiles);
}

TEST(GemmParityOmp, TenThousandRandomConfigs) {
  const auto cases = testing::random_cases(default_topo(), 10000, 20261129, 1500);
  std::vector<GemmConfig> configs;
  for (const auto& c : cases) configs.push_back(gemm_config(c.topo, c.params));
  const auto results = eval_gemm(BackendKind::omp, configs);
  int checked = 0, multi_pe = 0, ragged = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const GemmParams& p = cases[i].params;
    ASSERT_EQ(results[i].status, kGemmOk);
    const GemmFigures ref = figures_of(run_gemm_reference(cases[i].topo, p).report);
    const std::string diff = figures_diff(ref, figures_of(results[i]));
    ASSERT_EQ(diff, "") << "case " << i << ": m=" << p.m << " n=" << p.n << " k=" << p.k << " tiles=" << p.tile_m
                        << "x" << p.tile_n << "x" << p.tile_k << " pes=" << p.pes << " cubes=" << p.cubes
                        << " buffers=" << p.buffers << " array=" << cases[i].topo.matrix_rows << "x"
                        << cases[i].topo.matrix_cols << " df=" << to_string(cases[i].topo.dataflow);
    ++checked;
    multi_pe += p.pes * p.cubes > 1;
    ragged += p.m % p.tile_m != 0 || p.n % p.tile_n != 0 || p.k % p.tile_k != 0;
  }
  EXPECT_EQ(checked, 10000);
  EXPECT_GT(multi_pe, 5000);
  EXPECT_GT(ragged, 5000);
}

// Long runs of identical tiles exercise the steady-state jump; check them against the
// engine on shapes with many tiles per PE and many k-slices per tile.
TEST(GemmParityOmp, LongRegularRuns) {
  const TopologySpec topo = default_topo();
  for (std::int64_t buffers = 1; buffers <= 2; ++buffers)
    for (int df = 0; df < 3; ++df) {
      TopologySpec t = topo;
      t.dataflow = static_cast<Dataflow>(df);
      GemmParams p;
      p.m = 1000, p.n = 1030, p.k = 2050;
      p.tile_m = 64, p.tile_n = 32, p.tile_k = 64;
      p.pes = 3, p.cubes = 2, p.buffers = buffers;
      const GemmResult r = eval_gemm(BackendKind::omp, {gemm_config(t, p)})[0];
      EXPECT_EQ(figures_diff(figures_of(run_gemm_reference(t, p).report), figures_of(r)), "");
    }
}

// PEs whose tile ranges have the same shape, and cubes with the same number of tile rows,
// share one evaluation in the model. Every split of small grids of tiles over cubes and
// PEs, with and without ragged last rows and columns, checks that sharing against the engine.
TEST(GemmParityOmp, EverySplitOfSmallTileGrids) {
  TopologySpec t = default_topo();
  t.hbm_latency_ns = 7;  // a latency and bandwidths that leave the PEs' finish times uneven
  t.dma_bandwidth_gbps = 3;
  int checked = 0;
  std::vector<GemmParams> params;
  for (std::int64_t tm = 1; tm <= 12; ++tm)
    for (std::int64_t tn = 1; tn <= 5; ++tn)
      for (int ragged = 0; ragged < 4; ++ragged)
        for (std::int64_t cubes = 1; cubes <= t.cubes_per_sip(); ++cubes)
          for (std::int64_t pes = 1; pes <= t.pes_per_cube(); ++pes) {
            GemmParams p;
            p.tile_m = 3, p.tile_n = 2, p.tile_k = 2;
            p.m = tm * 3 - (ragged & 1 ? 1 : 0);
            p.n = tn * 2 - (ragged & 2 ? 1 : 0);
            p.k = 3;
            p.pes = pes, p.cubes = cubes;
            if (p.tile_m <= p.m && p.tile_n <= p.n) params.push_back(p);  // one-tile grids cannot be ragged
          }
  std::vector<GemmConfig> configs;
  for (const auto& p : params) configs.push_back(gemm_config(t, p));
  const auto results = eval_gemm(BackendKind::omp, configs);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const GemmParams& p = params[i];
    ASSERT_EQ(results[i].status, kGemmOk);
    ASSERT_EQ(figures_diff(figures_of(run_gemm_reference(t, p).report), figures_of(results[i])), "")
        << "m=" << p.m << " n=" << p.n << " pes=" << p.pes << " cubes=" << p.cubes;
    ++checked;
  }
  EXPECT_EQ(checked, (12 * 5 * 4 - 5 * 2 - 12 * 2 + 1) * 64);
}

TEST(GemmParityOmp, OneAndTwoThreadsAreByteIdentical) {
  const auto cases = testing::random_cases(default_topo(), 20000, 7, 1 << 20);
  std::vector<GemmConfig> configs;
  for (const auto& c : cases) configs.push_back(gemm_config(c.topo, c.params));
  std::vector<GemmResult> one(configs.size()), two(configs.size());
  batched::eval_gemm_omp(configs.data(), configs.size(), one.data(), 1);
  batched::eval_gemm_omp(configs.data(), configs.size(), two.data(), 2);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(GemmResult)), 0);
}

batched::GemmSpace test_space(const TopologySpec& topo) {
  GemmParams p;
  batched::GemmSpace s;
  s.base = gemm_config(topo, p);
  using A = batched::GemmAxis;
  s.axes = {A::m, A::n, A::k, A::tile_m, A::tile_n, A::tile_k, A::pes, A::buffers};
  s.values = {{32, 2048}, {1024, 4096}, {4096}, {32, 64, 128}, {64, 128, 256}, {64, 128, 256, 512},
              {1, 2, 4, 8}, {1, 2}};
  s.group_axes = 3;
  return s;
}

TEST(GemmSweepOmp, BestPerGroupMatchesBruteForce) {
  const TopologySpec topo = default_topo();
  const batched::GemmSpace space = test_space(topo);
  const auto a = sweep_gemm(BackendKind::omp, space, 37, 1);  // odd chunks split groups
  const auto b = sweep_gemm(BackendKind::omp, space, 1 << 20, 2);
  ASSERT_EQ(a.evaluated, space.size());
  EXPECT_EQ(a.valid, b.valid);
  EXPECT_EQ(a.latency_checksum, b.latency_checksum);
  ASSERT_EQ(a.best.size(), 4u);
  for (std::size_t g = 0; g < a.best.size(); ++g) {
    EXPECT_EQ(a.best[g].index, b.best[g].index);
    EXPECT_EQ(a.best[g].latency_ps, b.best[g].latency_ps);
  }
  // Brute force on the host.
  std::vector<batched::GroupBest> want(4);
  std::int64_t valid = 0;
  const std::int64_t per_group = space.size() / 4;
  const batched::GemmSpaceDecoder decode(space);
  for (std::int64_t i = 0; i < space.size(); ++i) {
    const GemmResult r = gemm_model(decode(i));
    if (r.status != kGemmOk) continue;
    ++valid;
    auto& w = want[static_cast<std::size_t>(i / per_group)];
    if (w.index < 0 || r.latency_ps < w.latency_ps) w = {r.latency_ps, i};
  }
  EXPECT_EQ(a.valid, valid);
  for (std::size_t g = 0; g < 4; ++g) {
    EXPECT_EQ(a.best[g].index, want[g].index);
    EXPECT_EQ(a.best[g].latency_ps, want[g].latency_ps);
  }
}

}  // namespace
}  // namespace kb
