// Random GEMM configurations for parity tests: ragged shapes, every dataflow,
// rectangular arrays, 1..64 PEs, single and double buffering, every split, varied hardware
// figures.
#pragma once

#include <random>
#include <vector>

#include "energy_check.h"
#include "host/families/gemm/gemm_program.h"

namespace kb::testing {

struct RandomCase {
  TopologySpec topo;
  GemmConfig params = gemm_request();
};

inline std::vector<RandomCase> random_cases(const TopologySpec& base, int count, std::uint64_t seed,
                                            std::int64_t max_ops) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::int64_t arrays[] = {1, 2, 3, 4, 5, 8, 16, 32, 64};
  std::vector<RandomCase> out;
  while (static_cast<int>(out.size()) < count) {
    RandomCase c{base, {}};
    TopologySpec& t = c.topo;
    t.matrix_rows = arrays[pick(0, 8)];
    t.matrix_cols = arrays[pick(0, 8)];
    t.dataflow = static_cast<Dataflow>(pick(0, 2));
    t.clock_mhz = pick(0, 1) ? pick(500, 2500) : 1000;
    t.hbm_bandwidth_gbps = pick(1, 2000);
    t.hbm_latency_ns = pick(0, 300);
    t.dma_engines = pick(1, 4);
    t.dma_bandwidth_gbps = pick(1, 400);
    t.ipcq.bandwidth_gbps = pick(1, 400);
    t.ipcq.latency_ns = pick(0, 100);
    t.vector_lanes = pick(1, 128);
    random_energy(t, pick);
    GemmConfig& p = c.params;
    p.m = pick(1, pick(0, 3) ? 300 : 40);
    p.n = pick(1, 300);
    p.k = pick(1, 300);
    p.tile_m = pick(1, p.m);
    p.tile_n = pick(1, p.n);
    p.tile_k = pick(1, p.k);
    p.pes = pick(1, t.pes_per_cube());
    p.cubes = pick(1, t.cubes_per_sip());
    p.buffers = pick(1, 2);
    p.split = pick(0, 4);  // auto, rows, cols, rows-k, cols-k
    p.b_bytes = pick(1, 2);  // 8-bit or fp16 B
    const std::int64_t ops = ceil_div(p.m, p.tile_m) * ceil_div(p.n, p.tile_n) * (3 * ceil_div(p.k, p.tile_k) + 1);
    if (ops > max_ops || gemm_check(gemm_config(t, p)) != kGemmOk) continue;
    out.push_back(c);
  }
  return out;
}

}  // namespace kb::testing
