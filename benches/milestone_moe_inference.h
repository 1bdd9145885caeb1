// The points of milestone-moe-inference, for the bench and its tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/families/llm/llm_program.h"
#include "host/topology/spec.h"

namespace kb {

// How a MoE model is served on the machine: its experts expert-parallel over the ranks of
// `level` with data-parallel attention (ep-cube: inside a SIP, pipeline stages over SIPs;
// ep-sip: across SIPs), or its attention tensor-parallel over them (tp: every rank holds every
// token, the experts spread over the ranks and combined by an allreduce).
struct MoeStrategy {
  const char* name;
  CollLevel level;  // tp: cube or sip, the faster (moe_pick searches both)
  bool attention_dp;
};
const std::vector<MoeStrategy>& moe_strategies();

// The study's models (DeepSeek-V3 with its fp8 weights, Mixtral-8x7B in fp16), decode
// batches, skews (zipf alphas; "balanced" first), redundant expert counts and prompts.
std::vector<std::string> moe_milestone_models();
std::vector<std::int64_t> moe_milestone_batches();
std::vector<std::string> moe_milestone_skews();
std::vector<std::int64_t> moe_milestone_redundant(const std::string& model);
std::vector<std::int64_t> moe_milestone_prompts();

// A shipped model on `topo` as `--model NAME` gives it (its experts, latent attention and
// weight bytes included): decode, batch 1, context 4096, one rank.
LlmConfig moe_model_config(const TopologySpec& topo, const std::string& model);

// Routes the config's tokens (`routing` as --routing, seed 1) as eval and sweep do.
void moe_route(LlmConfig& c, const std::string& routing);

// The best mapping of `base` (its model, phase, batch, context or prompt, routing) under
// strategy `s`: the least whole-model step over tp 2, 4 and 8, pp 1, 2, 4 and 8 (one micro-
// batch, or pp), the attention case (decode) and, for tp, the level and the allreduce
// algorithm, on the batched model. No valid candidate: best_ps < 0.
struct MoePick {
  LlmConfig best{};
  ps_t best_ps = -1;
  std::int64_t candidates = 0, valid = 0;
};
MoePick moe_pick_mapping(const LlmConfig& base, const MoeStrategy& s, const std::string& routing);

// SIPs a mapping occupies (each pipeline stage its own).
std::int64_t moe_sips_used(const LlmConfig& c);

}  // namespace kb
