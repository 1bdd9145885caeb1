// Discrete-event simulation of a Graph. Events are ordered by (time, priority, insertion
// sequence), so every run of the same graph is identical.
#pragma once

#include <array>
#include <iosfwd>
#include <string>
#include <vector>

#include "graph.h"

namespace kb::engine {

enum class Status { ok, no_work, deadlock, error };
const char* to_string(Status s);

struct OpTiming {
  ps_t start = -1, busy_end = -1, end = -1;  // -1: never started
};

struct Summary {
  ps_t latency_ps = 0;
  std::array<ps_t, kResourceClasses> busy_ps{};  // summed over resources of a class
  std::array<ps_t, kResourceClasses> max_resource_busy_ps{};  // the busiest resource of a class
  std::int64_t mac_cycles = 0;
  std::int64_t macs = 0;
  std::int64_t hbm_read_bytes = 0, hbm_write_bytes = 0;
  std::int64_t vector_ops = 0, sram_read_bytes = 0, sram_write_bytes = 0;
  std::array<std::int64_t, kLinkLevels> link_bytes{};
  std::array<std::int64_t, kLinkLevels> link_copies{};
  std::int64_t events = 0;
  std::int64_t ops = 0;
};

struct RunResult {
  // A run's timing takes the storage the last result destroyed on its thread left
  // (engine.cpp), as a graph does.
  RunResult() = default;
  ~RunResult();
  RunResult(const RunResult&) = default;
  RunResult(RunResult&&) = default;
  RunResult& operator=(const RunResult&) = default;
  RunResult& operator=(RunResult&&) = default;

  Status status = Status::ok;
  std::string message;  // deadlock: the stuck ops and what they wait for; error: why
  bool time_overflow = false;  // error: a time passed the 2^61 ps guard (kTimeLimitPs)
  std::vector<OpTiming> timing;
  std::vector<ps_t> resource_busy_ps;     // per resource
  std::vector<std::int64_t> resource_bytes;  // per resource: bytes its ops moved
  Summary summary;
};

RunResult simulate(const Graph& g);

// Chrome trace event format (opens in Perfetto / chrome://tracing): one track per resource.
// Written event by event; the string form is for small runs.
void write_chrome_trace(std::ostream& os, const Graph& g, const RunResult& r);
std::string chrome_trace_json(const Graph& g, const RunResult& r);

}  // namespace kb::engine
