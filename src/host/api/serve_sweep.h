// The typed API of `sweep serve` (docs/model.md section 13.18): serving runs over lists of
// arrival processes, models, mappings, hardware, batching limits and aggregated against
// disaggregated serving, each run exactly as `serve` runs it; every config's figures and the
// SLO-aware Pareto front of output tokens/s per SIP against tokens/s per user.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "serve.h"

namespace kb::api {

struct ServeSweepRequest {
  // `serve`'s request, where these take comma-separated alternatives: arrivals, max_num_seqs,
  // max_batched_tokens, chunked_prefill, kv_block, disagg (P:D, or "none": aggregated), and
  // the llm family's axes, hardware axes and presets (--model a,b). The others hold one value.
  // `recheck`: steps re-run on the reference engine for each mapping (its first config's);
  // `out`: not used (the sweep's own files are below).
  ServeRequest serve;
  std::string slo_percentile = "90";  // the percentile of TTFT and TPOT the SLO holds: 50, 90 or 99
  std::string out, csv;               // the sweep's JSON and CSV files ("": none)
  bool figures = true;                // with `out`: its figure beside it (serve_sweep_front.png), when a config served
  unsigned threads = 0;               // 0: one per core (the result is the same for any)
};

// Every config, in order (mappings outermost, then disagg, max_num_seqs, max_batched_tokens,
// chunked_prefill, kv_block, arrivals), and the front. Checked before any work; nothing is
// written on an error. A config that cannot serve (its mapping does not fit or has no valid
// "best" candidate, leaves no KV block, its instances need more SIPs than the topology has, a
// request can never run) is a row with that reason as its status, off the front. Deterministic, whatever the threads.
nlohmann::json sweep_serve(const ServeSweepRequest& request);

// `serve`'s flags checked each alone (every workload and limit flag), before any work; how they
// combine (disaggregated serving of a closed loop) is the config's to refuse.
void check_serve_inputs(const ServeRequest& q);

}  // namespace kb::api
