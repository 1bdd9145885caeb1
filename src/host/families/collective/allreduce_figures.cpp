#include "allreduce_figures.h"

#include <algorithm>
#include <cmath>

namespace kb {

analytical::StepCosts collective_step_costs(const AllreduceConfig& c) {
  const HwConfig& h = c.hw;
  std::int64_t level = c.level;
  if (level == static_cast<std::int64_t>(CollLevel::hier)) {  // a hier launch as one level: the highest level's link it crosses
    CollHier d;
    coll_hier_dims(c, &d);
    level = d.sips > 1 ? 2 : d.cubes > 1 ? 1 : 0;
  }
  const LinkSpec& l = level == 0 ? h.ipcq : level == 1 ? h.cube_link : h.sip_link;
  const double lanes = static_cast<double>(h.vector_lanes), clock = static_cast<double>(h.clock_mhz);
  return {static_cast<double>(l.latency_ns) * 1000.0, 1000.0 / static_cast<double>(l.bandwidth_gbps),
          1e6 / clock / lanes / 2.0};
}

namespace {

// One level's collective (a broadcast: the binomial tree's, or root's chains, second half).
std::int64_t level_ps(const AllreduceConfig& c) {
  const analytical::StepCosts k = collective_step_costs(c);
  if (c.op == static_cast<std::int64_t>(CollOp::bcast)) {
    const std::int64_t rows = coll_rows(c), cols = coll_cols(c);
    const double steps = c.algo == static_cast<std::int64_t>(CollAlgo::root)
                             ? static_cast<double>(std::max(cols / 2, cols - 1 - cols / 2) + std::max(rows / 2, rows - 1 - rows / 2))
                             : static_cast<double>(ceil_log2(c.ranks));
    return static_cast<std::int64_t>(std::llround(steps * (k.alpha_ps + static_cast<double>(c.bytes) * k.beta_ps_per_byte)));
  }
  // The grid matters to mesh2d and root; the others see p ranks in a row (4 ranks on a grid
  // 3 wide are 4, not the 1 x 3 a grid of them would hold).
  const bool grid = c.algo == static_cast<std::int64_t>(CollAlgo::mesh2d) || c.algo == static_cast<std::int64_t>(CollAlgo::root);
  return analytical::collective_op_ps(static_cast<CollOp>(c.op), static_cast<CollAlgo>(c.algo), grid ? coll_rows(c) : 1,
                                      grid ? coll_cols(c) : c.ranks, c.bytes, k);
}

}  // namespace

std::int64_t collective_analytical_ps(const AllreduceConfig& c) {
  if (coll_check(c) != kArOk) return 0;
  if (coll_one_level(c)) return level_ps(c);
  // hier: its phases one after another, each at its own level's costs.
  CollPhase ph[5];
  const int n = coll_hier_phases(c, ph);
  std::int64_t t = 0;
  for (int k = 0; k < n; ++k) t += level_ps(ph[k].sub);
  return t;
}

}  // namespace kb
