#include "gemm_sweep.h"

namespace kb {

bool GemmFigures::operator==(const GemmFigures& o) const { return figures_diff(*this, o).empty(); }

GemmFigures figures_of(const RunReport& r) {
  const auto& s = r.summary;
  GemmFigures f;
  f.latency_ps = s.latency_ps;
  f.mac_cycles = s.mac_cycles;
  f.macs = s.macs;
  f.matrix_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::matrix)];
  f.dma_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)];
  f.max_pe_matrix_busy_ps = s.max_resource_busy_ps[static_cast<std::size_t>(engine::ResourceClass::matrix)];
  f.max_pe_dma_busy_ps = s.max_resource_busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)];
  f.hbm_read_bytes = s.hbm_read_bytes;
  f.hbm_write_bytes = s.hbm_write_bytes;
  f.ops = s.ops;
  return f;
}

GemmFigures figures_of(const GemmResult& r) {
  GemmFigures f;
  f.latency_ps = r.latency_ps;
  f.mac_cycles = r.mac_cycles;
  f.macs = r.macs;
  f.matrix_busy_ps = r.matrix_busy_ps;
  f.dma_busy_ps = r.dma_busy_ps;
  f.max_pe_matrix_busy_ps = r.max_pe_matrix_busy_ps;
  f.max_pe_dma_busy_ps = r.max_pe_dma_busy_ps;
  f.hbm_read_bytes = r.hbm_read_bytes;
  f.hbm_write_bytes = r.hbm_write_bytes;
  f.ops = r.ops;
  return f;
}

std::string figures_diff(const GemmFigures& a, const GemmFigures& b) {
  std::string d;
  auto cmp = [&](const char* name, std::int64_t x, std::int64_t y) {
    if (x != y) d += (d.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(x) + " != " + std::to_string(y);
  };
  cmp("latency_ps", a.latency_ps, b.latency_ps);
  cmp("mac_cycles", a.mac_cycles, b.mac_cycles);
  cmp("macs", a.macs, b.macs);
  cmp("matrix_busy_ps", a.matrix_busy_ps, b.matrix_busy_ps);
  cmp("dma_busy_ps", a.dma_busy_ps, b.dma_busy_ps);
  cmp("max_pe_matrix_busy_ps", a.max_pe_matrix_busy_ps, b.max_pe_matrix_busy_ps);
  cmp("max_pe_dma_busy_ps", a.max_pe_dma_busy_ps, b.max_pe_dma_busy_ps);
  cmp("hbm_read_bytes", a.hbm_read_bytes, b.hbm_read_bytes);
  cmp("hbm_write_bytes", a.hbm_write_bytes, b.hbm_write_bytes);
  cmp("ops", a.ops, b.ops);
  return d;
}

GemmDerived derive(const TopologySpec& t, const GemmParams& p, const GemmFigures& f) {
  GemmDerived d{};
  const double pes = static_cast<double>(p.pes * p.cubes);
  const double macs_per_cycle = static_cast<double>(t.matrix_rows * t.matrix_cols) * pes;
  const double latency_cycles = static_cast<double>(f.latency_ps) * static_cast<double>(t.clock_mhz) / 1e6;
  d.mac_util = latency_cycles > 0 ? static_cast<double>(f.macs) / (macs_per_cycle * latency_cycles) : 0.0;
  d.achieved_tflops = f.latency_ps > 0 ? 2.0 * static_cast<double>(f.macs) / static_cast<double>(f.latency_ps) : 0.0;
  const double bytes = static_cast<double>(f.hbm_read_bytes + f.hbm_write_bytes);
  d.arithmetic_intensity = bytes > 0 ? 2.0 * static_cast<double>(f.macs) / bytes : 0.0;
  d.peak_tflops = 2.0 * macs_per_cycle * static_cast<double>(t.clock_mhz) / 1e6;
  const double share = std::min(static_cast<double>(t.dma_gbps()),
                                static_cast<double>(t.hbm_bandwidth_gbps) / static_cast<double>(p.pes));
  d.hbm_gbps = share * pes;
  return d;
}

}  // namespace kb
