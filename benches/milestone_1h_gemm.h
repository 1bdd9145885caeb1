// The shapes and variants of milestone-1h-gemm, shared by the bench and its tests.
#pragma once

#include <cstdint>
#include <vector>

#include "host/families/gemm/gemm_program.h"

namespace kb {

struct Shape {
  const char* name;
  std::int64_t m, n, k, tile_m, tile_n, tile_k;
  const char* description;
};

struct Variant {
  const char* name;
  std::int64_t pes, cubes, buffers;
  const char* description;
};

const std::vector<Shape>& gemm_milestone_shapes();
const std::vector<Variant>& gemm_milestone_variants();
// The energy-against-tile-size series: square tiles of these sides on one double-buffered PE
// for an M = N = K = kGemmEnergyDim GEMM.
constexpr std::int64_t kGemmEnergyDim = 512;
const std::vector<std::int64_t>& gemm_milestone_energy_tiles();
// Shape-major, variant-minor: the order of the bench's outputs.
GemmConfig gemm_milestone_params(const Shape& s, const Variant& v);

}  // namespace kb
