// A serving workload (docs/model.md section 13.15): when requests arrive and how long their
// prompts and outputs are, from the flags' text or from files, seeded; and what the served
// run comes to (latency percentiles, throughput, goodput at an SLO).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "serve_sim.h"

namespace kb::serve {

// --arrivals: poisson:RATE (requests a second), gamma:RATE:CV (gaps of mean 1/RATE and
// coefficient of variation CV; CV 1 is Poisson), closed:CONCURRENCY, or a trace FILE.csv
// (rows "timestamp,input,output": seconds from the start, non-decreasing, and token counts;
// an optional header row). InputError naming the flag, or FILE:LINE:COL.
struct Arrivals {
  enum class Kind { poisson, gamma, closed, trace } kind = Kind::poisson;
  double rate = 0, cv = 1;
  std::int64_t clients = 0;
  std::vector<Request> trace;  // a trace's requests, arrivals in picoseconds
};
Arrivals parse_arrivals(const std::string& text, const std::string& flag = "--arrivals");

// A flag's real number in [lo, hi] (`unit` names it in the error): "--slo-ttft x: expected
// milliseconds from 0 to 10^9".
double parse_real_flag(const std::string& flag, const std::string& text, double lo, double hi, const char* unit);

// --isl / --osl: N, uniform:A:B (integers, both ends included), or lognormal:MEAN:SIGMA (the
// distribution's mean in tokens, SIGMA the log's standard deviation), each drawn rounded
// and at least 1.
struct Lengths {
  enum class Kind { fixed, uniform, lognormal } kind = Kind::fixed;
  std::int64_t a = 1, b = 1;
  double mean = 0, sigma = 0;
};
Lengths parse_lengths(const std::string& text, const std::string& flag);

// --lengths FILE: one conversation a row, "input,output" token counts (an optional header
// row); requests draw rows uniformly, seeded. InputError at FILE:LINE:COL.
std::vector<std::pair<std::int64_t, std::int64_t>> read_lengths(const std::string& path);

// n requests: arrival times from `arrivals` (a trace gives its own rows, n at most its
// length; closed loop: 0, the simulation sets them), lengths from `pairs` when given, else
// from `isl` and `osl`. Deterministic in its arguments.
std::vector<Request> make_requests(const Arrivals& arrivals, const Lengths& isl, const Lengths& osl,
                                   const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, std::int64_t n,
                                   std::uint64_t seed);

// Mean and nearest-rank percentiles (the smallest value with at least p % of them at or below).
struct Stats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  std::int64_t count = 0;
};
Stats stats_of(std::vector<double> values);

// What a run comes to, in seconds and per second. TPOT of a request: (finish - first token) /
// (output - 1), for outputs above 1. Goodput: requests a second that met both SLOs (TTFT and
// TPOT at or below them; a request of one output token meets TPOT).
struct Report {
  Stats ttft, tpot, itl, e2e;
  double seconds = 0;  // the first arrival to the last finish
  double requests_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0, goodput_per_s = 0;
  std::int64_t met_slo = 0, preemptions = 0, peak_kv_blocks = 0;
};
Report report_of(const ServeRun& run, double slo_ttft_s, double slo_tpot_s);

}  // namespace kb::serve
