#include "serve_disagg.h"

#include <algorithm>
#include <string>

#include "../common/error.h"

namespace kb::serve {

namespace {

// Runs the requests `ids` (as `make` turns each into the instance's own request) on one
// instance, in order of arrival; what it served goes to `served`, by request.
ServeRun run_instance(std::vector<std::size_t>& ids, const std::function<Request(std::size_t)>& make, const Limits& limits,
                      const StepTime& step_time, std::int32_t instance, std::vector<Served>& served) {
  std::vector<Request> mine;
  std::stable_sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) { return make(a).arrival < make(b).arrival; });
  for (std::size_t i : ids) mine.push_back(make(i));
  ServeRun r = simulate(mine, limits, step_time, 0);
  for (std::size_t k = 0; k < ids.size(); ++k) served[ids[k]] = r.requests[k];
  for (Step& s : r.steps) s.instance = instance;
  return r;
}

}  // namespace

DisaggRun simulate_disagg(const std::vector<Request>& requests, const Limits& limits, const StepTime& step_time,
                          const std::function<ps_t(std::int64_t prompt)>& transfer, std::int64_t prefill,
                          std::int64_t decode) {
  if (prefill < 1 || decode < 1) throw InputError("--disagg: at least one prefill and one decode instance");
  check_requests(requests, limits, true);  // each request by its own index, before any instance runs
  const std::size_t n = requests.size();
  DisaggRun out;
  ServeRun& run = out.run;
  run.requests.resize(n);
  out.transfer.assign(n, 0);
  // Prefill: each request's prompt and first token.
  std::vector<Served> first(n), rest(n);
  for (std::int64_t k = 0; k < prefill; ++k) {
    std::vector<std::size_t> ids;
    for (std::size_t i = static_cast<std::size_t>(k); i < n; i += static_cast<std::size_t>(prefill)) ids.push_back(i);
    if (ids.empty()) continue;
    auto make = [&](std::size_t i) {
      Request r = requests[i];
      r.output = 1, r.cached = 0, r.generated = 0;
      return r;
    };
    ServeRun r = run_instance(ids, make, limits, step_time, static_cast<std::int32_t>(k), first);
    run.steps.insert(run.steps.end(), r.steps.begin(), r.steps.end());
    run.preemptions += r.preemptions;
  }
  // Decode: the rest of each request with more than one output token, from its KV's arrival.
  std::vector<std::size_t> more;
  for (std::size_t i = 0; i < n; ++i)
    if (requests[i].output > 1) more.push_back(i);
  std::vector<ps_t> ready(n, 0);
  for (std::size_t i : more) out.transfer[i] = transfer(requests[i].input), ready[i] = first[i].first_token + out.transfer[i];
  // Round robin in order of readiness.
  std::stable_sort(more.begin(), more.end(), [&](std::size_t a, std::size_t b) { return ready[a] < ready[b]; });
  for (std::int64_t k = 0; k < decode; ++k) {
    std::vector<std::size_t> ids;
    for (std::size_t j = static_cast<std::size_t>(k); j < more.size(); j += static_cast<std::size_t>(decode)) ids.push_back(more[j]);
    if (ids.empty()) continue;
    auto make = [&](std::size_t i) {
      Request r = requests[i];
      r.arrival = ready[i], r.cached = r.input, r.generated = 1;
      return r;
    };
    ServeRun r = run_instance(ids, make, limits, step_time, static_cast<std::int32_t>(prefill + k), rest);
    run.steps.insert(run.steps.end(), r.steps.begin(), r.steps.end());
    run.itl.insert(run.itl.end(), r.itl.begin(), r.itl.end());
    run.preemptions += r.preemptions;
  }
  // Each request end to end: arrival and first token from its prefill, the rest from its decode.
  for (std::size_t i = 0; i < n; ++i) {
    Served& s = run.requests[i];
    s = first[i];
    s.output = requests[i].output;
    if (requests[i].output > 1) {
      s.finish = rest[i].finish, s.preemptions += rest[i].preemptions;
      // The gap to its second token: the transfer, the wait, and the decode instance's first step.
      run.itl.push_back(rest[i].first_token - first[i].first_token);
    }
    run.end = std::max(run.end, s.finish);
    run.in_system_area += static_cast<double>(s.finish - s.arrival);
  }
  std::stable_sort(run.steps.begin(), run.steps.end(), [](const Step& a, const Step& b) { return a.start < b.start; });
  return out;
}

}  // namespace kb::serve
