// CUDA backend: identical to the OpenMP backend, bit for bit. Skips, saying why, where
// the build has no CUDA backend or the machine has no device.
#include <gtest/gtest.h>

#include <cstring>

#include "host/common/output.h"
#include "host/sweep/backend.h"
#include "host/sweep/gemm_sweep.h"
#include "host/topology/load.h"
#include "random_configs.h"
#include "sweep_space.h"

namespace kb {
namespace {

class GemmCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (batched::cuda_device_count(&why) == 0) GTEST_SKIP() << "CUDA backend not run: " << why;
  }
  // source_dir() honours KERNBENCH_SOURCE_DIR, so a copy of this program built elsewhere
  // (tools/gpu-check.sh prepare) finds the topologies of the tree it runs in.
  TopologySpec topo = load_topology(source_dir() + "/topologies/default.yaml");
};

TEST_F(GemmCuda, TenThousandRandomConfigsMatchOpenMP) {
  const auto cases = testing::random_cases(topo, 10000, 20261129, 1500);
  std::vector<GemmConfig> configs;
  for (const auto& c : cases) configs.push_back(gemm_config(c.topo, c.params));
  const auto cpu = eval_gemm(BackendKind::omp, configs);
  const auto gpu = eval_gemm(BackendKind::cuda, configs);
  ASSERT_EQ(cpu.size(), gpu.size());
  EXPECT_EQ(std::memcmp(cpu.data(), gpu.data(), cpu.size() * sizeof(GemmResult)), 0);
  // And the engine agrees with the GPU on a sample.
  for (std::size_t i = 0; i < cases.size(); i += 50)
    EXPECT_EQ(figures_diff(figures_of(run_gemm_reference(cases[i].topo, cases[i].params).report), figures_of(gpu[i])), "");
}

TEST_F(GemmCuda, SweepMatchesOpenMP) {
  GemmParams p;
  batched::GemmSpace s;
  s.base = gemm_config(topo, p);
  using A = batched::GemmAxis;
  s.axes = {A::m, A::n, A::k, A::tile_m, A::tile_n, A::tile_k, A::pes, A::cubes, A::buffers, A::dataflow};
  s.values = {{8, 32, 2048}, {1024, 10240}, {8192}, {8, 32, 64, 128}, {64, 128, 256}, {64, 128, 256, 512},
              {1, 2, 4, 8}, {1, 2, 4, 8}, {1, 2}, {0, 1, 2}};
  // Few groups per chunk (reduce_by_key on the device), then 1,152 groups of 48 configs in
  // one chunk (CUB's segmented arg-min).
  for (int group_axes : {3, 7}) {
    s.group_axes = group_axes;
    for (std::int64_t chunk : {4099, 1 << 20})
      testing::expect_same_summary(sweep_gemm(BackendKind::omp, s, chunk), sweep_gemm(BackendKind::cuda, s, chunk));
  }
}

TEST_F(GemmCuda, SweepReductionsMatchOpenMP) {
  batched::GemmSpace space = testing::reduction_space(topo);
  for (int group_axes : {3, 0}) {
    space.group_axes = group_axes;
    for (auto kind : {batched::ParetoCost::pes, batched::ParetoCost::sram, batched::ParetoCost::hbm}) {
      const batched::GemmReductions red{50, kind, true, {}};
      const auto cpu = sweep_gemm(BackendKind::omp, space, 1 << 20, 0, red);
      for (std::int64_t chunk : {1000, 1 << 20})
        testing::expect_same_summary(cpu, sweep_gemm(BackendKind::cuda, space, chunk, 0, red));
    }
  }
}

}  // namespace
}  // namespace kb
