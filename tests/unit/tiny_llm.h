// The shipped tiny random model (models/llama-tiny-random.json: hidden 64, 2 layers, 4 heads,
// 2 KV heads) as a config on the default machine, one rank over a cube, for the llm tests.
#pragma once

#include "host/families/llm/llm_program.h"
#include "topologies.h"

namespace kb::unittest {

inline LlmConfig tiny_llm(LlmPhase phase, std::int64_t batch, std::int64_t context, std::int64_t prompt) {
  LlmConfig c{};
  c.hw = topo("default.yaml").hw();
  c.hidden = 64, c.intermediate = 160, c.heads = 4, c.kv_heads = 2, c.head_dim = 16, c.layers = 2, c.vocab = 256;
  c.weight_bytes = 2, c.kv_bytes = 2;
  c.phase = static_cast<std::int64_t>(phase);
  c.batch = batch, c.context = context, c.prompt = phase == LlmPhase::prefill ? prompt : 1;
  c.tp = 1, c.tp_level = static_cast<std::int64_t>(CollLevel::cube), c.pp = 1, c.microbatches = 1;
  c.tp_algo = 0, c.attention_case = 1;
  return c;
}

}  // namespace kb::unittest
