// What the barrier between a step's kernels costs (docs/adr/0019-whole-models.md): one layer
// run on the reference engine as one graph, its kernels launched in turn on the rank's
// machine with no barrier between them, against the layer as both engines time it (each
// kernel from the end of the one before).
#pragma once

#include "../../../device/models/llm/llm_model.h"

namespace kb {

struct LlmBarrierCost {
  ps_t with_barrier = 0;  // the layer as timed (layer_ps): its kernels' latencies, summed
  // No barrier; a kernel's reads of the activations (every tensor in HBM but the weights and
  // RoPE's table) wait for the kernel before to end, and the rest of it (its weights' loads,
  // work on what those loaded) may start at once, in each PE's program order.
  ps_t tensor_order = 0;
  // No barrier and no order between kernels but each PE's program order: a bound that no
  // runtime keeping the kernels' programs can beat (it reads data before it is written).
  ps_t pe_order = 0;
};

// One layer of `c` (one rank, one stage, one micro-batch) three ways; InputError when `c`
// has another mapping.
LlmBarrierCost llm_barrier_cost(const LlmConfig& c);

}  // namespace kb
