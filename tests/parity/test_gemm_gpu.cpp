// CUDA sweeps: identical to the OpenMP backend's, in every reduction. Skips, saying why,
// where the build has no CUDA backend or the machine has no device. (Evaluation lists are
// checked per backend in test_gemm_parity.cpp.)
#include <gtest/gtest.h>

#include <cstring>

#include "host/common/output.h"
#include "host/families/family.h"
#include "host/topology/fields.h"
#include "host/sweep/backend.h"
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
  // data_dir() honours KERNBENCH_SOURCE_DIR, so a copy of this program built elsewhere
  // (tools/gpu-check.sh prepare) finds the topologies of the tree it runs in.
  TopologySpec topo = load_topology(data_dir() + "/topologies/default.yaml");
};

TEST_F(GemmCuda, SweepMatchesOpenMP) {
  batched::Space s = testing::gemm_space(
      topo, {{"m", {8, 32, 2048}}, {"n", {1024, 10240}}, {"k", {8192}}, {"tile_m", {8, 32, 64, 128}},
             {"tile_n", {64, 128, 256}}, {"tile_k", {64, 128, 256, 512}}, {"pes", {1, 2, 4, 8}}, {"cubes", {1, 2, 4, 8}},
             {"buffers", {1, 2}}, {"dataflow", {0, 1, 2}}},
      0);
  // Few groups per chunk (reduce_by_key on the device), then 1,152 groups of 48 configs in
  // one chunk (CUB's segmented arg-min).
  for (int group_axes : {3, 7}) {
    s.group_axes = group_axes;
    for (std::int64_t chunk : {4099, 1 << 20})
      testing::expect_same_summary(sweep(BackendKind::omp, s, chunk), sweep(BackendKind::cuda, s, chunk));
  }
}

TEST_F(GemmCuda, SweepReductionsMatchOpenMP) {
  batched::Space space = testing::reduction_space(topo);
  for (int group_axes : {3, 0}) {
    space.group_axes = group_axes;
    for (int kind : {kGemmCostPes, kGemmCostSram, kGemmCostHbm}) {
      const batched::Reductions red{50, kind, true, {}};
      const auto cpu = sweep(BackendKind::omp, space, 1 << 20, 0, red);
      for (std::int64_t chunk : {1000, 1 << 20})
        testing::expect_same_summary(cpu, sweep(BackendKind::cuda, space, chunk, 0, red));
    }
  }
}

// Zipped axes and hardware axes (any topology field, by offset) on the device.
TEST_F(GemmCuda, ZippedAndHardwareAxesMatchOpenMP) {
  using testing::gemm_offset;
  const Family& f = family("gemm");
  auto hw = [&](const char* path) { return static_cast<std::int64_t>(f.hw_offset + find_hw_field(path)->offset); };
  batched::Space s = testing::gemm_space(topo, {{"tile_m", {8, 32, 128}}, {"tile_n", {64, 128}}, {"pes", {1, 4, 8}}}, 0);
  s.axes.insert(s.axes.begin(), batched::Space::Axis{{gemm_offset("m"), gemm_offset("n"), gemm_offset("k")},
                                                     {32, 10240, 8192, 2048, 8192, 8192, 4096, 4096, 4096}});
  s.axes.push_back({hw("cube.hbm.bandwidth_gbps"), {205, 819, 3276}});
  s.axes.push_back({{hw("pe.matrix.rows"), hw("pe.matrix.cols")}, {16, 64, 32, 32, 64, 16}});
  s.group_axes = 1;
  const batched::Reductions red{20, kGemmCostHbm, true, {}};
  const auto cpu = sweep(BackendKind::omp, s, 1 << 20, 0, red);
  EXPECT_GT(cpu.valid, 0);
  for (std::int64_t chunk : {77, 1 << 20}) testing::expect_same_summary(cpu, sweep(BackendKind::cuda, s, chunk, 0, red));
}

}  // namespace
}  // namespace kb
