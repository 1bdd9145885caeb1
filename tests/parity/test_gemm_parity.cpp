// Parity of the GEMM family: for every backend, the batched model (exec) and the reference
// engine (ref) agree on every parity figure of the family's table, exactly. Each case is
// built once per backend; CUDA cases skip, saying why, where no device is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "backend_param.h"
#include "benches/milestone_1h_gemm.h"
#include "host/common/output.h"
#include "host/families/family.h"
#include "host/parity/figures.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"
#include "random_configs.h"
#include "sweep_space.h"

namespace kb {

// Test names and messages print a backend by name.
namespace {

TopologySpec default_topo() { return load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml"); }

std::string describe(const GemmConfig& c) {
  std::ostringstream o;
  o << "m=" << c.m << " n=" << c.n << " k=" << c.k << " tiles=" << c.tile_m << "x" << c.tile_n << "x" << c.tile_k
    << " pes=" << c.pes << " cubes=" << c.cubes << " buffers=" << c.buffers << " array=" << c.hw.matrix_rows << "x"
    << c.hw.matrix_cols << " df=" << to_string(c.hw.dataflow);
  return o.str();
}

class GemmParity : public testing::BackendTest {
 protected:
  // Every `step`-th config against the reference engine; the rest must still be valid.
  void expect_equivalent_to_ref(const std::vector<GemmConfig>& configs, std::size_t step = 1) {
    const std::vector<GemmResult> exec = eval<GemmModel>(GetParam(), configs);
    ASSERT_EQ(exec.size(), configs.size());
    for (std::size_t i = 0; i < configs.size(); ++i) {
      ASSERT_EQ(exec[i].status, kGemmOk) << describe(configs[i]);
      ASSERT_EQ(testing::energy_recompute_diff(family("gemm"), &configs[i], &exec[i]), "") << describe(configs[i]);
      if (i % step) continue;
      const GemmResult ref = gemm_reference(configs[i]);
      ASSERT_EQ(figures_diff(family("gemm"), configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
    }
  }
};

KB_BACKEND_SUITE(GemmParity);

TEST_P(GemmParity, EveryMilestoneConfig) {
  const TopologySpec topo = default_topo();
  std::vector<GemmConfig> configs;
  bool has_2048_tiles = false;
  for (const Shape& s : gemm_milestone_shapes())
    for (const Variant& v : gemm_milestone_variants()) {
      const GemmConfig p = gemm_milestone_params(s, v);
      has_2048_tiles |= ceil_div(p.m, p.tile_m) * ceil_div(p.n, p.tile_n) == 2048;
      configs.push_back(gemm_config(topo, p));
    }
  ASSERT_EQ(configs.size(), 24u);
  EXPECT_TRUE(has_2048_tiles);
  expect_equivalent_to_ref(configs);
}

TEST_P(GemmParity, TenThousandRandomConfigs) {
  const auto cases = testing::random_cases(default_topo(), 10000, 20261129, 1500);
  std::vector<GemmConfig> configs;
  int multi_pe = 0, ragged = 0, by[5] = {0, 0, 0, 0, 0}, auto_cols = 0, auto_k = 0, reduced = 0;
  for (const auto& c : cases) {
    configs.push_back(gemm_config(c.topo, c.params));
    const GemmConfig& p = c.params;
    multi_pe += p.pes * p.cubes > 1;
    ragged += p.m % p.tile_m != 0 || p.n % p.tile_n != 0 || p.k % p.tile_k != 0;
    const std::int64_t split = configs.back().split;
    ASSERT_TRUE(split >= kGemmSplitRows && split <= kGemmSplitColsK) << describe(configs.back());
    if (p.cubes > 1 || (gemm_split_k(split) && p.pes > 1)) ++by[split];
    auto_cols += p.split == kGemmSplitAuto && gemm_split_by_cols(split) && p.cubes > 1;
    auto_k += p.split == kGemmSplitAuto && gemm_split_k(split);
    // Configs where some tile's partial sums are added across PEs: more ops than the tiles'.
    const GemmGrid g = gemm_grid(configs.back());
    reduced += gemm_model(configs.back()).ops > g.tiles_m * g.tiles_n * (3 * g.kt + 1);
  }
  EXPECT_GT(multi_pe, 5000);
  EXPECT_GT(ragged, 5000);
  for (int s = kGemmSplitRows; s <= kGemmSplitColsK; ++s)  // configs where each split matters, as asked or chosen
    EXPECT_GT(by[s], 1500) << kGemmSplitNames[s];
  EXPECT_GT(auto_cols, 200);
  EXPECT_GT(auto_k, 200);
  EXPECT_GT(reduced, 2000);
  expect_equivalent_to_ref(configs);
}

// Long runs of identical tiles exercise the steady-state jump; check them against the
// engine on shapes with many tiles per PE and many k-slices per tile.
TEST_P(GemmParity, LongRegularRuns) {
  std::vector<GemmConfig> configs;
  for (std::int64_t buffers = 1; buffers <= 2; ++buffers)
    for (int df = 0; df < 3; ++df) {
      TopologySpec t = default_topo();
      t.dataflow = static_cast<Dataflow>(df);
      GemmConfig p = gemm_request();
      p.m = 1000, p.n = 1030, p.k = 2050;
      p.tile_m = 64, p.tile_n = 32, p.tile_k = 64;
      p.pes = 3, p.cubes = 2, p.buffers = buffers;
      for (std::int64_t split : {kGemmSplitRows, kGemmSplitCols, kGemmSplitRowsK, kGemmSplitColsK}) {
        p.split = split;
        configs.push_back(gemm_config(t, p));
      }
    }
  expect_equivalent_to_ref(configs);
}

// Split-K where one tile's k-slices go to many PEs: every PE's partial lands on one owner's
// copy-queue in-port, which serves them in the order they are ready, and the owner adds
// them in PE order. Slow and fast ports, narrow and wide vector engines, 1 to 32 PEs.
TEST_P(GemmParity, ManyPartialSumsToOneOwner) {
  std::vector<GemmConfig> configs;
  for (std::int64_t pes = 1; pes <= 32; ++pes)
    for (std::int64_t k : {37, 64, 100, 191})
      for (std::int64_t port : {1, 16, 400})
        for (std::int64_t lanes : {1, 64}) {
          TopologySpec t = default_topo();
          t.pe_rows = 4, t.pe_cols = 8;
          t.ipcq.bandwidth_gbps = port;
          t.ipcq.latency_ns = port == 16 ? 0 : 30;
          t.vector_lanes = lanes;
          t.hbm_latency_ns = 11;
          GemmConfig p = gemm_request();
          p.m = 8 + pes % 3, p.n = 16 + pes % 5, p.k = k;
          p.tile_m = 8, p.tile_n = 16, p.tile_k = 3 + pes % 4;
          p.pes = pes, p.cubes = 1 + pes % 2, p.buffers = 1 + pes % 2;
          p.split = pes % 2 ? kGemmSplitRowsK : kGemmSplitColsK;
          configs.push_back(gemm_config(t, p));
          // One tile, its k-slices over every PE: pes - 1 partials into one in-port.
          p.m = p.tile_m, p.n = p.tile_n, p.cubes = 1;
          configs.push_back(gemm_config(t, p));
        }
  // The most partials any one tile receives: the PEs after its owner that start inside it.
  std::int64_t most = 0;
  for (const GemmConfig& c : configs) {
    const GemmGrid g = gemm_grid(c);
    const std::int64_t units = g.tiles_m * g.tiles_n / c.cubes * g.kt;  // the first cube's block, when even
    if ((g.tiles_m * g.tiles_n) % c.cubes == 0)
      for (std::int64_t t = 0; t < units / g.kt; ++t)
        most = std::max(most, gemm_pe_of_unit(units, c.pes, t * g.kt + g.kt - 1) - gemm_pe_of_unit(units, c.pes, t * g.kt));
  }
  EXPECT_EQ(most, 31);
  expect_equivalent_to_ref(configs);
}

// PEs whose tile ranges have the same shape, and cubes with blocks of the same shape, share
// one evaluation in the model. Every split of small grids of tiles over cubes (by rows and
// by columns, with and without split-K) and PEs, with and without ragged last rows and
// columns, checks that sharing against the engine; split-K with k-slices of three sizes.
TEST_P(GemmParity, EverySplitOfSmallTileGrids) {
  TopologySpec t = default_topo();
  t.hbm_latency_ns = 7;  // a latency and bandwidths that leave the PEs' finish times uneven
  t.dma_bandwidth_gbps = 3;
  std::vector<GemmConfig> configs;
  for (std::int64_t tm = 1; tm <= 12; ++tm)
    for (std::int64_t tn = 1; tn <= 5; ++tn)
      for (int ragged = 0; ragged < 4; ++ragged)
        for (std::int64_t cubes = 1; cubes <= t.cubes_per_sip(); ++cubes)
          for (std::int64_t pes = 1; pes <= t.pes_per_cube(); ++pes)
            for (std::int64_t split : {kGemmSplitRows, kGemmSplitCols, kGemmSplitRowsK, kGemmSplitColsK}) {
            GemmConfig p = gemm_request();
            p.split = split;
            p.tile_m = 3, p.tile_n = 2, p.tile_k = 2;
            p.m = tm * 3 - (ragged & 1 ? 1 : 0);
            p.n = tn * 2 - (ragged & 2 ? 1 : 0);
            p.k = gemm_split_k(split) ? 2 + (tm + tn + pes) % 5 : 3;  // 1 to 3 k-slices, ragged or not
            p.pes = pes, p.cubes = cubes;
            if (p.tile_m <= p.m && p.tile_n <= p.n) configs.push_back(gemm_config(t, p));  // one-tile grids cannot be ragged
          }
  EXPECT_EQ(configs.size(), static_cast<std::size_t>((12 * 5 * 4 - 5 * 2 - 12 * 2 + 1) * 64 * 4));
  expect_equivalent_to_ref(configs);
}

// Every backend gives the OpenMP backend's bytes.
TEST_P(GemmParity, ByteIdenticalToOpenMP) {
  const auto cases = testing::random_cases(default_topo(), 20000, 7, 1 << 20);
  std::vector<GemmConfig> configs;
  for (const auto& c : cases) configs.push_back(gemm_config(c.topo, c.params));
  const auto cpu = eval<GemmModel>(BackendKind::omp, configs, 1);
  const auto exec = eval<GemmModel>(GetParam(), configs);
  EXPECT_EQ(std::memcmp(cpu.data(), exec.data(), cpu.size() * sizeof(GemmResult)), 0);
}

TEST(GemmParityOmp, OneAndTwoThreadsAreByteIdentical) {
  const auto cases = testing::random_cases(default_topo(), 20000, 7, 1 << 20);
  std::vector<GemmConfig> configs;
  for (const auto& c : cases) configs.push_back(gemm_config(c.topo, c.params));
  const auto one = eval<GemmModel>(BackendKind::omp, configs, 1), two = eval<GemmModel>(BackendKind::omp, configs, 2);
  EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(GemmResult)), 0);
}

batched::Space test_space(const TopologySpec& topo) {
  return testing::gemm_space(topo,
                             {{"m", {32, 2048}}, {"n", {1024, 4096}}, {"k", {4096}}, {"tile_m", {32, 64, 128}},
                              {"tile_n", {64, 128, 256}}, {"tile_k", {64, 128, 256, 512}}, {"pes", {1, 2, 4, 8}},
                              {"buffers", {1, 2}}},
                             3);
}

TEST(GemmSweepOmp, BestPerGroupMatchesBruteForce) {
  const TopologySpec topo = default_topo();
  const batched::Space space = test_space(topo);
  const auto a = sweep(BackendKind::omp, space, 37, 1);  // odd chunks split groups
  const auto b = sweep(BackendKind::omp, space, 1 << 20, 2);
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
  const batched::SpaceDecoder decode(space);
  for (std::int64_t i = 0; i < space.size(); ++i) {
    const GemmResult r = gemm_model(decode_config<GemmModel>(decode, i));
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
