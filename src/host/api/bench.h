// The typed API's bench (ADR 0029): `run --bench NAME` as a request. The runner writes the
// bench's JSON, CSV and figures to its folder (or, with `fast` or MILESTONE_FAST, re-renders
// the committed results there), everything checked before anything is written, and writes
// its lines to the request's log.
#pragma once

#include <iosfwd>
#include <string>

#include "host/api/eval.h"
#include "host/bench/registry.h"

namespace kb::api {

struct BenchRequest {
  std::string bench;         // a registered bench's name
  TopologyRequest topology;  // none given: the bench's own
  std::string out;           // "": benches/1H_milestone_output/DOMAIN
  std::string backend = "auto";
  bool fast = false;  // re-render the committed results instead of running
  std::ostream* log = nullptr;  // where its lines go (null: nowhere)
};

// The bench of that name (InputError naming the known ones).
const BenchInfo& bench_or_error(const std::string& name);
// Where a bench writes: `out`, or its default folder.
std::string bench_out_dir(const BenchInfo& b, const std::string& out);

// Runs the request; returns the folder written.
std::string run_bench(const BenchRequest& request);

}  // namespace kb::api
