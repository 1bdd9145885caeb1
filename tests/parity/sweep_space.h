// A GEMM space for the sweep-reduction tests: 7,776 configs over shapes, tiles, PEs, cubes
// and buffering, some invalid (tiles larger than the matrix), with buffering fastest.
#pragma once

#include <gtest/gtest.h>

#include "host/kernels/gemm.h"
#include "device/backends/backends.h"

namespace kb::testing {

inline batched::GemmSpace reduction_space(const TopologySpec& topo) {
  batched::GemmSpace s;
  s.base = gemm_config(topo, GemmParams{});
  using A = batched::GemmAxis;
  s.axes = {A::m, A::n, A::k, A::tile_m, A::tile_n, A::tile_k, A::pes, A::cubes, A::buffers};
  s.values = {{32, 2048}, {1024, 4096}, {2048}, {32, 64, 128}, {64, 128, 256}, {128, 256, 512},
              {1, 2, 4, 8}, {1, 2, 8}, {1, 2}};
  s.group_axes = 3;
  return s;
}

// Two sweep summaries agree in every reduction.
inline void expect_same_summary(const batched::GemmSweepSummary& a, const batched::GemmSweepSummary& b) {
  EXPECT_EQ(a.evaluated, b.evaluated);
  EXPECT_EQ(a.valid, b.valid);
  EXPECT_EQ(a.latency_checksum, b.latency_checksum);
  for (int st = 0; st < kGemmStatusCount; ++st) EXPECT_EQ(a.by_status[st], b.by_status[st]) << "status " << st;
  ASSERT_EQ(a.best.size(), b.best.size());
  for (std::size_t g = 0; g < a.best.size(); ++g) {
    EXPECT_EQ(a.best[g].index, b.best[g].index) << g;
    EXPECT_EQ(a.best[g].latency_ps, b.best[g].latency_ps) << g;
  }
  ASSERT_EQ(a.top.size(), b.top.size());
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    EXPECT_EQ(a.top[i].index, b.top[i].index) << i;
    EXPECT_EQ(a.top[i].latency_ps, b.top[i].latency_ps) << i;
  }
  ASSERT_EQ(a.pareto.size(), b.pareto.size());
  for (std::size_t i = 0; i < a.pareto.size(); ++i) {
    EXPECT_EQ(a.pareto[i].index, b.pareto[i].index) << i;
    EXPECT_EQ(a.pareto[i].group, b.pareto[i].group) << i;
    EXPECT_EQ(a.pareto[i].cost, b.pareto[i].cost) << i;
    EXPECT_EQ(a.pareto[i].latency_ps, b.pareto[i].latency_ps) << i;
  }
  EXPECT_EQ(a.histogram, b.histogram);
}

}  // namespace kb::testing
