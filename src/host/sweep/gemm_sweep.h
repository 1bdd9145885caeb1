// What both GEMM engines report, side by side, and how they are compared.
#pragma once

#include <string>

#include "../kernels/gemm.h"

namespace kb {

// The figures the two engines must agree on exactly.
struct GemmFigures {
  ps_t latency_ps = 0;
  std::int64_t mac_cycles = 0, macs = 0;
  ps_t matrix_busy_ps = 0, dma_busy_ps = 0;
  ps_t max_pe_matrix_busy_ps = 0, max_pe_dma_busy_ps = 0;  // the busiest single resource
  std::int64_t hbm_read_bytes = 0, hbm_write_bytes = 0;
  std::int64_t ops = 0;
  bool operator==(const GemmFigures& o) const;
};

GemmFigures figures_of(const RunReport& r);
GemmFigures figures_of(const GemmResult& r);
// "" when equal, else the first fields that differ, e.g. "latency_ps 10 != 12".
std::string figures_diff(const GemmFigures& a, const GemmFigures& b);

// Derived, written-out-only figures (floating point from the integers).
struct GemmDerived {
  double mac_util;          // MACs / (array MACs per cycle x PEs used x latency in cycles)
  double achieved_tflops;   // 2 * MACs / latency
  double arithmetic_intensity;  // 2 * MACs / (HBM bytes read + written)
  double peak_tflops;       // of the PEs used
  double hbm_gbps;          // HBM bandwidth the used PEs can draw
};
GemmDerived derive(const TopologySpec& topo, const GemmParams& p, const GemmFigures& f);

}  // namespace kb
