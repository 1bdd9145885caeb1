// A serving workload (docs/model.md section 13.15): when requests arrive and how long their
// prompts and outputs are, from the flags' text or from files, seeded; and what the served
// run comes to (latency percentiles, throughput, goodput at an SLO).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
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
  std::string trace;            // a trace's file, read again row by row as the run goes
  std::int64_t trace_rows = 0;  // its requests (every row checked when parsed)
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

// A workload's requests, one at a time: arrival times from `arrivals` (a trace gives its own
// rows, n at most its length; closed loop: 0, the simulation sets them), lengths from `pairs`
// when given, else from `isl` and `osl`. Deterministic in its arguments; it holds one request
// (and a trace's open file), never the workload. InputError where a request would arrive
// after 10^6 s.
class RequestStream final : public Source {
 public:
  RequestStream(const Arrivals& arrivals, const Lengths& isl, const Lengths& osl,
                const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, std::int64_t n, std::uint64_t seed);
  ~RequestStream() override;
  RequestStream(const RequestStream&) = delete;
  RequestStream& operator=(const RequestStream&) = delete;
  bool next(Request* r) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The stream's requests, held whole.
std::vector<Request> make_requests(const Arrivals& arrivals, const Lengths& isl, const Lengths& osl,
                                   const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, std::int64_t n,
                                   std::uint64_t seed);

// Mean and nearest-rank percentiles (the smallest value with at least p % of them at or below).
struct Stats {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  std::int64_t count = 0;
};
Stats stats_of(std::vector<double> values);

// The same over a stream of values >= 0, in bounded memory: exact while it has seen at most
// kExactValues values; beyond, each percentile from a histogram of 2^12 bins an octave,
// within a relative 2^-13 of the exact one (the mean a plain sum, the extremes exact).
class Quantiles {
 public:
  static constexpr std::size_t kExactValues = std::size_t{1} << 16;
  static constexpr int kBinBits = 12;
  void add(double x);
  Stats stats() const;
  bool exact() const { return n_ <= static_cast<std::int64_t>(kExactValues); }
  std::size_t bytes() const;  // what it holds, about

 private:
  void bin(double x);
  std::vector<double> values_;               // while exact
  std::map<std::int64_t, std::int64_t> bins_;  // beyond: (octave, bin) -> values
  double sum_ = 0, min_ = 0, max_ = 0;
  std::int64_t n_ = 0;
};

// What a run comes to, in seconds and per second. TPOT of a request: (finish - first token) /
// (output - 1), for outputs above 1. Goodput: requests a second that met both SLOs (TTFT and
// TPOT at or below them; a request of one output token meets TPOT).
struct Report {
  Stats ttft, tpot, itl, e2e;
  double seconds = 0;  // the first arrival to the last finish
  double requests_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0, goodput_per_s = 0;
  std::int64_t met_slo = 0, preemptions = 0, peak_kv_blocks = 0;
};

// A report built as the run goes: a sink for serve's simulate, holding no request.
class ReportBuilder : public Sink {
 public:
  ReportBuilder(double slo_ttft_s, double slo_tpot_s) : slo_ttft_(slo_ttft_s), slo_tpot_(slo_tpot_s) {}
  void served(std::int64_t id, const Served& s) override;
  void gap(ps_t itl) override;
  void step(const Step& s) override;
  Report report(const Totals& totals) const;
  bool exact() const { return ttft_.exact() && tpot_.exact() && itl_.exact() && e2e_.exact(); }
  std::size_t bytes() const { return ttft_.bytes() + tpot_.bytes() + itl_.bytes() + e2e_.bytes(); }
  ps_t first_arrival = -1;
  std::int64_t requests = 0, output_tokens = 0, all_tokens = 0;

 private:
  double slo_ttft_, slo_tpot_;
  Quantiles ttft_, tpot_, itl_, e2e_;
  std::int64_t met_slo_ = 0, peak_kv_blocks_ = 0;
};

Report report_of(const ServeRun& run, double slo_ttft_s, double slo_tpot_s);

}  // namespace kb::serve
