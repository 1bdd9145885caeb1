// Serving at the request level (docs/model.md section 13.15): arriving requests, a scheduler
// with vLLM-v1's semantics (running requests first, one token budget a step, chunked
// prefill, paged KV blocks, the latest request preempted and recomputed when blocks run
// out), as a discrete-event simulation over engine steps whose times a caller gives (the
// llm family's batched model, or a formula in a test). Time is int64 picoseconds.
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "../../device/common/units.h"

namespace kb::serve {

// A request: when it arrives, its prompt's tokens and the tokens it generates (>= 1). One
// handed over by a prefill instance (disaggregated serving) arrives with its prompt's KV
// cached (`cached`, at most the prompt) and its first tokens generated (`generated`, below
// `output`).
struct Request {
  ps_t arrival = 0;
  std::int64_t input = 1, output = 1;
  std::int64_t cached = 0, generated = 0;
  bool operator==(const Request& o) const { return arrival == o.arrival && input == o.input && output == o.output; }
};

struct Limits {
  std::int64_t max_num_seqs = 256;         // requests running at once
  std::int64_t max_batched_tokens = 8192;  // tokens a step computes (prefill and decode together)
  bool chunked_prefill = true;             // a prompt over several steps; off: whole, in one step
  std::int64_t kv_block = 16;              // tokens a KV block holds
  std::int64_t kv_blocks = INT64_C(1) << 40;  // blocks the cache holds
};

// What one engine step computes: each decoding request's context (the positions its new
// token attends to, itself included), and each prefill chunk's tokens and the prompt's
// tokens before it.
struct StepMix {
  std::vector<std::int64_t> decode_contexts;
  std::vector<std::int64_t> prefill_tokens, prefill_before;
  std::int64_t tokens() const;
};
using StepTime = std::function<ps_t(const StepMix&)>;

// A request as served.
struct Served {
  ps_t arrival = 0;
  ps_t scheduled = -1;    // its first step's start
  ps_t first_token = -1;  // the end of the step that gave its first token
  ps_t finish = -1;       // the end of the step that gave its last
  std::int64_t input = 0, output = 0, preemptions = 0;
};

// A step as run: its start, its time, what ran and what waited, and the KV blocks held after.
struct Step {
  ps_t start = 0, time = 0;
  std::int32_t instance = 0;  // the serving instance that ran it (disaggregated serving: prefill ones first)
  std::int32_t running = 0, waiting = 0;
  std::int64_t tokens = 0, prefill_tokens = 0, kv_blocks = 0;
};

// Where a run's requests come from: one at a time, in order of arrival (a closed loop sets
// their arrivals itself); false when there are no more.
class Source {
 public:
  virtual ~Source() = default;
  virtual bool next(Request* r) = 0;
};

// The requests of a vector, in its order.
class VectorSource final : public Source {
 public:
  explicit VectorSource(const std::vector<Request>& requests) : r_(requests) {}
  bool next(Request* r) override {
    if (k_ >= r_.size()) return false;
    *r = r_[k_++];
    return true;
  }

 private:
  const std::vector<Request>& r_;
  std::size_t k_ = 0;
};

// What a run reports as it goes, so that it holds only the requests in flight: each request
// once served (by its index in the source's order; in the order they finish), each gap
// between a request's consecutive tokens, each step (in order of start, then instance), and
// under disaggregation each request's KV transfer.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void served(std::int64_t id, const Served& s) {
    (void)id;
    (void)s;
  }
  virtual void gap(ps_t itl) { (void)itl; }
  virtual void step(const Step& s) { (void)s; }
  virtual void transfer(std::int64_t id, ps_t time) {
    (void)id;
    (void)time;
  }
};

// What a run comes to beyond what its sink saw.
struct Totals {
  ps_t end = 0;  // the last request's finish
  // The integral over time of the requests in the system (arrived, not finished), in
  // request-picoseconds, counted step by step (Little's law: it equals the sum of sojourns).
  double in_system_area = 0;
  std::int64_t requests = 0, preemptions = 0;
  std::int64_t peak_records = 0;  // the most request records held at once (at most those in flight)
};

// Serves the source's requests. Open loop (clients 0): each arrives at its `arrival`
// (non-decreasing). Closed loop (clients > 0): the first `clients` arrive at 0, and each later
// one when a request finishes (no think time); arrivals given are ignored. InputError where a
// request can never run (its prompt above max_batched_tokens without chunked prefill, or its
// tokens above the cache's blocks), or arrives before the one ahead of it.
Totals simulate(Source& source, const Limits& limits, const StepTime& step_time, Sink& sink, std::int64_t clients = 0);

// A run held whole (tests, small runs): every request as served, in the order given.
struct ServeRun {
  std::vector<Served> requests;  // in the order given
  std::vector<ps_t> itl;         // every gap between a request's consecutive tokens
  std::vector<Step> steps;
  ps_t end = 0;                  // the last request's finish
  double in_system_area = 0;     // as Totals'
  std::int64_t preemptions = 0;
};

// A sink that keeps everything: a ServeRun.
class KeepAll : public Sink {
 public:
  explicit KeepAll(std::size_t n) { run.requests.resize(n); }
  void served(std::int64_t id, const Served& s) override { run.requests.at(static_cast<std::size_t>(id)) = s; }
  void gap(ps_t itl) override { run.itl.push_back(itl); }
  void step(const Step& s) override { run.steps.push_back(s); }
  ServeRun take(const Totals& t) {
    run.end = t.end, run.in_system_area = t.in_system_area, run.preemptions = t.preemptions;
    return std::move(run);
  }
  ServeRun run;
};

// simulate over a vector, every request checked before the run.
ServeRun simulate(const std::vector<Request>& requests, const Limits& limits, const StepTime& step_time, std::int64_t clients = 0);

// simulate's check of one request: the i-th, arriving after `previous` (open loop; -1: none).
void check_request(std::int64_t i, const Request& r, const Limits& limits, ps_t previous);
// simulate's checks of its arguments, alone (InputError naming request i by its index here).
void check_limits(const Limits& limits);
void check_requests(const std::vector<Request>& requests, const Limits& limits, bool open_loop);

}  // namespace kb::serve
