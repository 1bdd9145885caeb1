#include "allreduce_figures.h"

namespace kb {

analytical::StepCosts collective_step_costs(const AllreduceConfig& c) {
  const HwConfig& h = c.hw;
  const LinkSpec& l = c.level == 0 ? h.ipcq : c.level == 1 ? h.cube_link : h.sip_link;
  const double lanes = static_cast<double>(h.vector_lanes), clock = static_cast<double>(h.clock_mhz);
  return {static_cast<double>(l.latency_ns) * 1000.0, 1000.0 / static_cast<double>(l.bandwidth_gbps),
          1e6 / clock / lanes / 2.0};
}

std::int64_t collective_analytical_ps(const AllreduceConfig& c) {
  if (coll_check(c) != kArOk) return 0;
  return analytical::collective_ps(static_cast<analytical::AllreduceAlgo>(c.algo),
                                   c.op == static_cast<std::int64_t>(CollOp::reduce), coll_rows(c), coll_cols(c), c.bytes,
                                   collective_step_costs(c));
}

}  // namespace kb
