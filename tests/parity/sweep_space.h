// GEMM spaces for the sweep tests, by axis name (a family axis or a hardware axis such as
// "dataflow"), and a check that two sweep summaries agree in every reduction.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "host/families/family.h"
#include "host/families/gemm/gemm_program.h"
#include "host/sweep/backend.h"
#include "host/topology/fields.h"

namespace kb::testing {

inline std::int64_t gemm_offset(const std::string& name) {
  const Family& f = family("gemm");
  if (const AxisDesc* a = f.axis(name)) return static_cast<std::int64_t>(a->offset);
  for (const HwAxisDesc& h : f.hw_axes)
    if (h.name == name) return static_cast<std::int64_t>(f.hw_offset + find_hw_field(h.path)->offset);
  ADD_FAILURE() << "no gemm axis " << name;
  return 0;
}

inline batched::Space gemm_space(const TopologySpec& topo,
                                 const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& axes,
                                 int group_axes) {
  batched::Space s = make_space<GemmModel>(gemm_config(topo, gemm_request()));
  for (const auto& [name, values] : axes) s.axes.push_back({gemm_offset(name), values});
  s.group_axes = group_axes;
  return s;
}

// 7,776 configs over shapes, tiles, PEs, cubes and buffering, some invalid (tiles larger
// than the matrix), with buffering fastest.
inline batched::Space reduction_space(const TopologySpec& topo) {
  return gemm_space(topo,
                    {{"m", {32, 2048}}, {"n", {1024, 4096}}, {"k", {2048}}, {"tile_m", {32, 64, 128}},
                     {"tile_n", {64, 128, 256}}, {"tile_k", {128, 256, 512}}, {"pes", {1, 2, 4, 8}},
                     {"cubes", {1, 2, 8}}, {"buffers", {1, 2}}},
                    3);
}

// Two sweep summaries agree in every reduction.
inline void expect_same_summary(const batched::SweepSummary& a, const batched::SweepSummary& b) {
  EXPECT_EQ(a.evaluated, b.evaluated);
  EXPECT_EQ(a.valid, b.valid);
  EXPECT_EQ(a.latency_checksum, b.latency_checksum);
  EXPECT_EQ(a.by_status, b.by_status);
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
