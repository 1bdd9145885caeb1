// The points of milestone-gqa-decode-4cases, for the bench and its parity test.
#pragma once

#include <vector>

#include "host/families/decode/decode_program.h"

namespace kb {

// LLaMA-3.1-70B, one KV-head group: h_q 8, h_kv 1, d_head 128, batch 1, S_kv 131,072.
DecodeConfig decode_headline(const TopologySpec& topo, std::int64_t decode_case);

// S_kv 1K..1M (powers of two) and batch 1..64 (powers of two), per case.
std::vector<std::int64_t> decode_milestone_s_kv();
std::vector<std::int64_t> decode_milestone_batches();

// Every point of the bench: the four panels, case 4 with allreduce, and both sweeps.
std::vector<DecodeConfig> decode_milestone_configs(const TopologySpec& topo);

}  // namespace kb
