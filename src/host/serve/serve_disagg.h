// Disaggregated serving (docs/model.md section 13.16): P prefill instances and D decode
// instances of one mapping, on disjoint parts of the machine. A request goes to a prefill
// instance (round robin), which computes its prompt and its first token; its KV cache then
// moves to a decode instance (round robin), taking `transfer(prompt)`, and arrives there with
// its prompt cached, to decode the rest. Each instance is the scheduler of serve_sim.h with the
// same limits; prefill instances feed decode ones and nothing flows back, so the prefill
// instances run first and the decode instances after, each on its own arrivals.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "serve_sim.h"

namespace kb::serve {

struct DisaggRun {
  ServeRun run;                  // the requests as served end to end; steps of every instance (Step::instance)
  std::vector<ps_t> transfer;    // each request's KV transfer time (0 for one output token: none)
};

// Open loop only. `step_time` times a step of any instance; `transfer` a prompt's KV from a
// prefill instance to a decode instance.
DisaggRun simulate_disagg(const std::vector<Request>& requests, const Limits& limits, const StepTime& step_time,
                          const std::function<ps_t(std::int64_t prompt)>& transfer, std::int64_t prefill,
                          std::int64_t decode);

}  // namespace kb::serve
