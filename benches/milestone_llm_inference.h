// The points of milestone-llm-inference, for the bench and its tests.
#pragma once

#include <cstdint>
#include <vector>

#include "host/families/llm/llm_program.h"
#include "host/topology/spec.h"

namespace kb {

// Decode batches 1..256 and contexts 4K and 32K; prefill prompts 512..32K; the design
// question's HBM bandwidths (GB/s a cube) and PE arrays (rows = cols).
std::vector<std::int64_t> llm_milestone_batches();
std::vector<std::int64_t> llm_milestone_contexts();
std::vector<std::int64_t> llm_milestone_prompts();
std::vector<std::int64_t> llm_milestone_hbm_gbps();
std::vector<std::int64_t> llm_milestone_arrays();

// LLaMA-3.1-70B in fp16 on `topo`: decode, batch 1, context 4096, tp 8 over SIPs.
LlmConfig llm_milestone_base(const TopologySpec& topo);

// The best mapping of `base` on the batched model: the least whole-model step over every tp
// (1..64, powers of two) and level (cube, sip), pp (1, 2, 4, 8) with one micro-batch or pp of
// them, allreduce algorithm and attention case (decode); with `fixed_tp`, over the
// micro-batching, algorithms and cases only (tp, level and pp as given). The runner-up is
// the best of another tp, level or pp. No valid candidate: best_ps < 0, and `best` the candidate that got
// furthest through the check (its status says why).
struct LlmPick {
  LlmConfig best{}, runner{};
  ps_t best_ps = -1, runner_ps = -1;
  std::int64_t candidates = 0, valid = 0;
};
LlmPick llm_pick_mapping(const LlmConfig& base, bool fixed_tp);

}  // namespace kb
