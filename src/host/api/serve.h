// The typed API of `serve` (docs/model.md section 13.16): a serving run of a whole model under
// a mapping, its requests arriving and scheduled as vLLM-v1 schedules them, each step timed by
// the llm family (src/host/serve/serve_steps.h). The command line and the Python module build
// a ServeRequest; run_serve checks everything before any work and writes nothing on an error.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "eval.h"

namespace kb::api {

struct ServeRequest {
  // The llm family's model, hardware and mapping, as `eval llm` takes them (the step's own
  // axes, --phase, --batch, --context, --prompt, --prior, --microbatches and --layers, are the
  // scheduler's and are refused).
  EvalRequest llm;
  std::string arrivals;                  // poisson:RATE, gamma:RATE:CV, closed:N or FILE.csv
  std::string isl = "1024", osl = "128";  // N, uniform:A:B or lognormal:MEAN:SIGMA
  std::string lengths;                   // a conversations file (input,output rows), instead of isl and osl
  std::string requests, seed = "1";  // requests "": 1000, or a trace's rows
  std::string max_num_seqs = "256", max_batched_tokens = "8192", chunked_prefill = "on", kv_block = "16";
  std::string slo_ttft = "2000", slo_tpot = "50";  // milliseconds
  std::string disagg;          // "P:D": P prefill and D decode instances ("": one instance, aggregated)
  std::string recheck = "2";  // steps re-run on the reference engine
  std::string out;            // a folder for summary.json, requests.csv, steps.csv and figures ("": none)
  bool figures = true;        // with `out`: the figures too
};

// The run's summary document (schema kernbench-gpu/serve 1.0.0): the workload, the limits, the KV cache,
// the report (TTFT, TPOT, ITL and E2E at mean, P50, P90, P99; throughput; goodput), the steps,
// and the reference engine's re-check. With `out`, the files are written once all is known.
nlohmann::json run_serve(const ServeRequest& request);

// A request's model, hardware and mapping made once (eval_config and the step model, its memo
// kept), to serve under many workloads and limits: serve(q) is run_serve(q) for any q whose
// llm request is this one's (q.llm is not read again).
class ServeMapping {
 public:
  explicit ServeMapping(const ServeRequest& request);
  ~ServeMapping();
  ServeMapping(const ServeMapping&) = delete;
  ServeMapping& operator=(const ServeMapping&) = delete;
  nlohmann::json serve(const ServeRequest& q);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether an llm axis is the step's own (the scheduler sets it: phase, batch, context, prompt,
// prior, micro-batches, layers run), which serve does not take.
bool serve_step_axis(const std::string& name);

}  // namespace kb::api
