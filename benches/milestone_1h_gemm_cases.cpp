#include "milestone_1h_gemm.h"

namespace kb {

// LLaMA-3.1-70B: hidden 8192, 64 query / 8 KV heads of 128 (QKV out 10240), MLP 28672.
const std::vector<Shape>& gemm_milestone_shapes() {
  static const std::vector<Shape> shapes = {
    {"qkv-decode-b32", 32, 10240, 8192, 32, 128, 256, "LLaMA-3.1-70B QKV projection, decode, batch 32"},
    {"mlp-up-decode-b32", 32, 28672, 8192, 32, 128, 256, "LLaMA-3.1-70B MLP up projection, decode, batch 32"},
    {"mlp-down-decode-b32", 32, 8192, 28672, 32, 128, 256, "LLaMA-3.1-70B MLP down projection, decode, batch 32"},
    {"qkv-prefill-2k", 2048, 10240, 8192, 128, 128, 256, "LLaMA-3.1-70B QKV projection, prefill of 2048 tokens"},
    {"o-proj-prefill-2k", 2048, 8192, 8192, 128, 128, 256, "LLaMA-3.1-70B attention output projection, prefill of 2048 tokens"},
    {"square-4096", 4096, 4096, 4096, 128, 64, 256, "square reference; 2048 output tiles of 128x64"},
  };
  return shapes;
}

const std::vector<std::int64_t>& gemm_milestone_energy_tiles() {
  static const std::vector<std::int64_t> tiles = {16, 32, 64, 128, 256};
  return tiles;
}

const std::vector<Variant>& gemm_milestone_variants() {
  static const std::vector<Variant> variants = {
    {"1pe-single", 1, 1, 1, "one PE, single-buffered: loads and compute serialise"},
    {"1pe-double", 1, 1, 2, "one PE, double-buffered: loads of the next k-slice overlap compute"},
    {"1cube-8pe", 8, 1, 2, "the 8 PEs of one cube share its HBM stack"},
    {"8cube-64pe", 8, 8, 2,
       "64 PEs over 8 cubes (8 HBM stacks); blocks of tile rows go to cubes, or of tile columns when there are fewer "
       "tile rows than cubes (decode)"},
};
  return variants;
}

GemmConfig gemm_milestone_params(const Shape& s, const Variant& v) {
  GemmConfig p = gemm_request();
  p.m = s.m, p.n = s.n, p.k = s.k;
  p.tile_m = s.tile_m, p.tile_n = s.tile_n, p.tile_k = s.tile_k;
  p.pes = v.pes, p.cubes = v.cubes, p.buffers = v.buffers;
  return p;
}

}  // namespace kb
