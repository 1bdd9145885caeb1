// The GEMM family's descriptor: C[M,N] = A[M,K] x B[K,N] tiled over the PEs of some cubes.
#include <cstddef>

#include "gemm_program.h"
#include "../family.h"

namespace kb {

namespace {

using C = GemmConfig;
using R = GemmResult;

template <class F>
std::function<nlohmann::json(const void*, const void*)> col(F f) {
  return typed_getter<C, R>(f);
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }
double used_pes(const C& c) { return static_cast<double>(c.pes * c.cubes); }

Family make() {
  Family f;
  f.name = "gemm";
  f.description = "one GEMM, C[m,n] = A[m,k] x B[k,n], tiled over the PEs of some cubes";
  f.id = batched::Family::gemm;
  f.hw_offset = offsetof(C, hw);
  f.axes = {
      axis("m", "--m", "rows of A and C", offsetof(C, m)).range(1, kGemmMaxDim).defines_problem(),
      axis("n", "--n", "columns of B and C", offsetof(C, n)).range(1, kGemmMaxDim).defines_problem(),
      axis("k", "--k", "columns of A, rows of B", offsetof(C, k)).range(1, kGemmMaxDim).defines_problem(),
      axis("tile_m", "--tile-m", "output tile rows; auto: the tiling of least estimated latency (docs/model.md section 9.7)", offsetof(C, tile_m))
          .range(1, kGemmMaxDim).default_to("auto").auto_means(0),
      axis("tile_n", "--tile-n", "output tile columns; auto: as tile-m", offsetof(C, tile_n))
          .range(1, kGemmMaxDim).default_to("auto").auto_means(0),
      axis("tile_k", "--tile-k", "k-slice per step; auto: as tile-m", offsetof(C, tile_k))
          .range(1, kGemmMaxDim).default_to("auto").auto_means(0),
      axis("pes", "--pes", "PEs per cube (1..the cube's PEs)", offsetof(C, pes))
          .range(1, 0).max_of_hw([](const HwConfig& h) { return h.pes_per_cube(); }).default_to("1"),
      axis("cubes", "--cubes", "cubes (1..the SIP's cubes)", offsetof(C, cubes))
          .range(1, 0).max_of_hw([](const HwConfig& h) { return h.cubes_per_sip(); }).default_to("1"),
      axis("buffers", "--buffers", "SRAM buffer sets (1 or 2)", offsetof(C, buffers)).range(1, 2).default_to("2"),
      axis("split", "--split",
           "output tiles to cubes in blocks of tile rows or tile columns, and inside a cube whole tiles per PE or, with "
           "-k, an even share of k-slices (partial sums added by the tile's owner); auto: cols when there are fewer tile "
           "rows than cubes (and more tile columns than rows), else rows; with -k when that cuts the busiest PE's "
           "k-slices by over 10%; with an automatic tile, chosen with the tiles",
           offsetof(C, split))
          .choices(name_list(kGemmSplitNames))
          .default_to("auto").auto_means(0),
  };
  f.hw_axes = {
      {"dataflow", "--dataflow", "pe.matrix.dataflow", "systolic dataflow: os, ws or is"},
      {"array_rows", "--array-rows", "pe.matrix.rows", "systolic array rows"},
      {"array_cols", "--array-cols", "pe.matrix.cols", "systolic array columns"},
  };
  f.default_group = "m,n,k";
  f.statuses = name_list(kGemmStatusNames);
  f.status_message = [](std::int32_t s, const void* c) { return gemm_status_message(s, *static_cast<const C*>(c)); };
  f.costs = {{"pes", "PEs used (pes x cubes)"}, {"sram", "SRAM bytes per PE"}, {"hbm", "HBM bytes read and written"}};
  f.default_cost = "pes";
  auto figure = [](const char* name, const char* unit, const char* help, std::int64_t R::*m, bool terminal = false) {
    return parity_figure<C, R>(name, unit, help, m, terminal);
  };
  f.columns = {
      figure("latency_ps", "ps", "end-to-end time", &R::latency_ps, true),
      {"roofline_ps", "ps", "max(compute roof, HBM roof)", ColType::integer, col([](const C&, const R& r) { return r.roofline_ps; }), false,
       true},
      {"x_roofline", "", "latency / roofline", ColType::real, col([](const C&, const R& r) {
         return ratio(static_cast<double>(r.latency_ps), static_cast<double>(r.roofline_ps));
       }), false, true},
      {"compute_roof_ps", "ps", "every used PE at peak", ColType::integer, col([](const C&, const R& r) { return r.compute_roof_ps; })},
      {"hbm_roof_ps", "ps", "compulsory traffic at the used cubes' HBM rate", ColType::integer,
       col([](const C&, const R& r) { return r.hbm_roof_ps; })},
      figure("mac_cycles", "cycles", "matrix-engine cycles, summed over PEs", &R::mac_cycles),
      figure("macs", "", "multiply-accumulates", &R::macs),
      {"flops", "", "2 x MACs", ColType::integer, col([](const C&, const R& r) { return 2 * r.macs; })},
      {"mac_util", "", "MACs / (array MACs per cycle x PEs used x latency in cycles)", ColType::real, col([](const C& c, const R& r) {
         const double cycles = static_cast<double>(r.latency_ps) * static_cast<double>(c.hw.clock_mhz) / 1e6;
         return ratio(static_cast<double>(r.macs),
                      static_cast<double>(c.hw.matrix_rows * c.hw.matrix_cols) * used_pes(c) * cycles);
       })},
      figure("matrix_busy_ps", "ps", "matrix engines' busy time, summed", &R::matrix_busy_ps),
      figure("dma_busy_ps", "ps", "DMA queues' busy time, summed", &R::dma_busy_ps),
      figure("max_pe_matrix_busy_ps", "ps", "the busiest PE's matrix engine", &R::max_pe_matrix_busy_ps),
      figure("max_pe_dma_busy_ps", "ps", "the busiest PE's DMA queue", &R::max_pe_dma_busy_ps),
      figure("hbm_read_bytes", "bytes", "HBM bytes read", &R::hbm_read_bytes),
      figure("hbm_write_bytes", "bytes", "HBM bytes written", &R::hbm_write_bytes),
      figure("ops", "", "ops issued (loads, matmuls, stores)", &R::ops),
      {"achieved_tflops", "TFLOP/s", "2 x MACs / latency", ColType::real, col([](const C&, const R& r) {
         return ratio(2.0 * static_cast<double>(r.macs), static_cast<double>(r.latency_ps));
       })},
      {"arithmetic_intensity", "FLOP/byte", "2 x MACs / HBM bytes", ColType::real, col([](const C&, const R& r) {
         return ratio(2.0 * static_cast<double>(r.macs), static_cast<double>(r.hbm_read_bytes + r.hbm_write_bytes));
       })},
      {"peak_tflops", "TFLOP/s", "peak of the PEs used", ColType::real, col([](const C& c, const R&) {
         return 2.0 * static_cast<double>(c.hw.matrix_rows * c.hw.matrix_cols) * used_pes(c) *
                static_cast<double>(c.hw.clock_mhz) / 1e6;
       })},
      {"hbm_gbps", "GB/s", "HBM bandwidth the PEs used can draw", ColType::real, col([](const C& c, const R&) {
         const double share = std::min(static_cast<double>(c.hw.dma_gbps()),
                                       static_cast<double>(c.hw.hbm_bandwidth_gbps) / static_cast<double>(c.pes));
         return share * used_pes(c);
       })},
      {"sram_bytes", "bytes", "SRAM one PE needs for its tile buffers", ColType::integer,
       col([](const C& c, const R&) { return gemm_sram_bytes(c); })},
      {"output_tiles", "", "output tiles", ColType::integer, col([](const C& c, const R&) {
         return ceil_div(c.m, c.tile_m) * ceil_div(c.n, c.tile_n);
       })},
  };
  set_engines<C, R>(
      f, [](const C& c) { return gemm_check(c); },
      [](const C& c, const std::string* trace_path) { return gemm_reference(c, trace_path); },
      [](const C& c) { return gemm_reference_ops(c); });
  add_energy<GemmModel>(f);
  return f;
}

}  // namespace

const Family& gemm_family() {
  static const Family f = make();
  return f;
}

}  // namespace kb
