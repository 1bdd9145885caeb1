// Reference collective programs on the runtime. The first: ring allreduce (sum) over the SIPs
// of a machine, a rank per SIP (its cube 0, PE 0), the data in SRAM: reduce-scatter then
// all-gather, p - 1 steps each; in every step each rank sends one of its p chunks to the next
// rank (one ring link) and the receiver adds it into its own copy on the vector engine.
#pragma once

#include <vector>

#include "../runtime/context.h"

namespace kb {

struct RingAllreduce {
  std::int64_t ranks = 0;  // SIPs 0..ranks-1
  std::int64_t bytes = 0;  // per rank, f16; a whole number of values per chunk
};

struct AllreduceResult {
  RunReport report;
  std::vector<std::vector<float>> values;  // per rank, after the allreduce (data mode)
};

// Runs the ring allreduce on `topo` (a ring of at least `ranks` SIPs); with `inputs` (one
// vector of bytes/2 values per rank) in data mode, else timing only.
AllreduceResult run_ring_allreduce(const TopologySpec& topo, const RingAllreduce& a,
                                   const std::vector<std::vector<float>>& inputs = {});

}  // namespace kb
