// The points of milestone-1h-ccl, for the bench and its parity test.
#pragma once

#include <vector>

#include "host/families/collective/allreduce_program.h"

namespace kb {

// 1 KiB to 1 GiB in steps of 4.
std::vector<std::int64_t> ccl_milestone_sizes();

// Every level, algorithm, 2/4/8 ranks (hier: 16 and 64 PEs), buffer kind and size
// (allreduce, one chunk): the SIP level on `ring`, the others on `topo`; the valid points, and in `invalid` those that do
// not fit (a rank count the level lacks is left out).
std::vector<AllreduceConfig> ccl_milestone_configs(const TopologySpec& topo, const TopologySpec& ring,
                                                   std::vector<AllreduceConfig>* invalid = nullptr);

}  // namespace kb
