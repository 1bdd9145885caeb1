// Disaggregated serving (docs/model.md section 13.16): P prefill instances and D decode
// instances of one mapping, on disjoint parts of the machine. A request goes to a prefill
// instance (round robin), which computes its prompt and its first token; its KV cache then
// moves to a decode instance (round robin), taking `transfer(prompt)`, and arrives there with
// its prompt cached, to decode the rest. Each instance is the scheduler of serve_sim.h with the
// same limits. Prefill instances feed decode ones and nothing flows back; the instances run
// side by side in time, so that a run holds only the requests in flight.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "serve_sim.h"

namespace kb::serve {

using KvTime = std::function<ps_t(std::int64_t prompt)>;

// Open loop only. `step_time` times a step of any instance; `transfer` a prompt's KV from a
// prefill instance to a decode instance. The sink sees each request end to end (its arrival
// and first token from its prefill instance, the rest from its decode instance), the steps of
// every instance (Step::instance: prefill instances first), and each KV transfer.
Totals simulate_disagg(Source& source, const Limits& limits, const StepTime& step_time, const KvTime& transfer,
                       std::int64_t prefill, std::int64_t decode, Sink& sink);

// The same over a vector, held whole.
struct DisaggRun {
  ServeRun run;                  // the requests as served end to end; steps of every instance (Step::instance)
  std::vector<ps_t> transfer;    // each request's KV transfer time (0 for one output token: none)
};
DisaggRun simulate_disagg(const std::vector<Request>& requests, const Limits& limits, const StepTime& step_time,
                          const KvTime& transfer, std::int64_t prefill, std::int64_t decode);

}  // namespace kb::serve
