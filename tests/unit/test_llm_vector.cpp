// The vector kernels of a whole model's layer: the batched model equals the reference
// engine on random kernels and machines (tiling, uneven rows, shared HBM), and a hand-timed
// example pins the rule.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "host/families/llm/llm_program.h"
#include "topologies.h"

namespace kb {
namespace {

const std::int64_t kKinds[] = {static_cast<std::int64_t>(LlmKernelKind::norm), static_cast<std::int64_t>(LlmKernelKind::rope),
                               static_cast<std::int64_t>(LlmKernelKind::residual),
                               static_cast<std::int64_t>(LlmKernelKind::silu_mul),
                               static_cast<std::int64_t>(LlmKernelKind::kv_append),
                               static_cast<std::int64_t>(LlmKernelKind::l2_norm)};

std::string describe(const LlmVecConfig& c) {
  return "kind " + std::to_string(c.kind) + " rows " + std::to_string(c.rows) + " cols " + std::to_string(c.cols) + " head_dim " +
         std::to_string(c.head_dim) + " weight_bytes " + std::to_string(c.weight_bytes) + " cubes " +
         std::to_string(c.hw.cube_rows) + "x" + std::to_string(c.hw.cube_cols) + " pes " + std::to_string(c.hw.pe_rows) + "x" +
         std::to_string(c.hw.pe_cols) + " sram_kib " + std::to_string(c.hw.sram_kib);
}

void expect_same(const LlmVecConfig& c) {
  const LlmVecResult m = llm_vec_model(c), r = llm_vec_reference(c);
  ASSERT_EQ(m.status, kLlmVecOk) << describe(c);
  EXPECT_EQ(m.latency_ps, r.latency_ps) << describe(c);
  EXPECT_EQ(m.vector_busy_ps, r.vector_busy_ps) << describe(c);
  EXPECT_EQ(m.dma_busy_ps, r.dma_busy_ps) << describe(c);
  EXPECT_EQ(m.hbm_read_bytes, r.hbm_read_bytes) << describe(c);
  EXPECT_EQ(m.hbm_write_bytes, r.hbm_write_bytes) << describe(c);
}

TEST(LlmVector, ModelEqualsReferenceOnRandomKernels) {
  std::mt19937_64 rng(20261202);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const HwConfig base = unittest::topo("default.yaml").hw();
  int run = 0, tiled = 0, uneven = 0, converted = 0;
  for (int i = 0; i < 3000; ++i) {
    LlmVecConfig c{};
    c.hw = base;
    c.hw.sips = 1;
    c.hw.cube_rows = pick(1, 2), c.hw.cube_cols = pick(1, 3);
    c.hw.pe_rows = pick(1, 2), c.hw.pe_cols = pick(1, 4);
    c.hw.sram_kib = pick(1, 3) == 1 ? pick(4, 64) : pick(64, 2048);  // small SRAMs tile
    c.hw.vector_lanes = std::int64_t{1} << pick(2, 7);
    c.hw.hbm_bandwidth_gbps = pick(50, 2000), c.hw.hbm_latency_ns = pick(0, 300);
    c.hw.dma_engines = pick(1, 4), c.hw.dma_bandwidth_gbps = pick(16, 256);
    c.hw.clock_mhz = pick(500, 2500);
    c.kind = kKinds[pick(0, 4)];
    c.rows = pick(1, 3) == 1 ? pick(1, 8) : pick(1, 600);
    c.cols = pick(1, 3000);
    if (c.kind == static_cast<std::int64_t>(LlmKernelKind::kv_append)) c.out_bytes = pick(1, 2);  // an 8-bit cache, or fp16
    if (c.kind == static_cast<std::int64_t>(LlmKernelKind::norm)) c.weight_bytes = pick(1, 2);      // its weights' bytes
    if (c.kind == static_cast<std::int64_t>(LlmKernelKind::rope)) {                                 // heads of 2..128 values
      c.head_dim = 2 * pick(1, 64);
      c.cols = c.head_dim * pick(1, 24);
    }
    if (llm_vec_check(c) != kLlmVecOk) continue;
    ++run;
    converted += c.out_bytes == 1;
    tiled += llm_vec_tile_rows(c, llm_vec_rows_of(c, 0)) < llm_vec_rows_of(c, 0);
    uneven += llm_vec_rows_of(c, 0) != llm_vec_rows_of(c, c.hw.cubes_per_sip() * c.hw.pes_per_cube() - 1);
    expect_same(c);
    if (HasFailure()) return;
  }
  EXPECT_GT(run, 2500);
  EXPECT_GT(tiled, 200);   // PEs streaming several tiles
  EXPECT_GT(uneven, 500);  // rows that do not split evenly (some PEs idle, cubes sharing unevenly)
  EXPECT_GT(converted, 150);  // KV appends into an 8-bit cache
}

// One PE, one tile of 4 rows x 64 values, residual add: two loads of 512 bytes, one add of
// 256 values on 64 lanes (4 cycles), one store; DMA 2 x 64 GB/s, HBM 100 GB/s for one
// sharer (so 100 GB/s: 5.12 ns a tile), 100 ns HBM latency, 1 GHz.
TEST(LlmVector, HandTimedResidual) {
  LlmVecConfig c{};
  c.hw = unittest::topo("default.yaml").hw();
  c.hw.cube_rows = c.hw.cube_cols = c.hw.pe_rows = c.hw.pe_cols = 1;
  c.hw.dma_engines = 2, c.hw.dma_bandwidth_gbps = 64, c.hw.hbm_bandwidth_gbps = 100, c.hw.hbm_latency_ns = 100;
  c.hw.clock_mhz = 1000, c.hw.vector_lanes = 64;
  c.kind = static_cast<std::int64_t>(LlmKernelKind::residual), c.rows = 4, c.cols = 64;
  // loads: 0-5120 and 5120-10240 ps, landed at 110240; add 4000 ps to 114240; store
  // 114240-119360, done 219360.
  EXPECT_EQ(llm_vec_model(c).latency_ps, 219360);
  expect_same(c);
}

}  // namespace
}  // namespace kb
