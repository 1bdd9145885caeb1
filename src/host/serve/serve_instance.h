// One serving instance (docs/model.md section 13.15): the scheduler of serve_sim.h as a
// discrete-event process that a driver feeds and steps, holding only the requests it was
// handed and has not finished. The driver offers each request before the instance steps past
// its arrival: an instance steps at next_time(), and everything arriving by then must have
// been offered.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "serve_sim.h"

namespace kb::serve {

class Instance {
 public:
  Instance(const Limits& limits, const StepTime& step_time, Sink& sink, std::int32_t index)
      : lim_(limits), step_time_(step_time), sink_(sink), index_(index), free_(limits.kv_blocks) {}

  // Hands it request `id` (arrivals non-decreasing across offers).
  void offer(std::int64_t id, const Request& r);
  // Whether it holds no request.
  bool idle() const { return live_ == 0; }
  // When its next step starts: now, or its next arrival when nothing has arrived (never
  // before now); the largest time when idle.
  ps_t next_time() const;
  // Runs its next step (not idle): what has arrived by next_time() is admitted first. Requests
  // that finish go to the sink, and are counted in finished().
  void step();
  ps_t now() const { return now_; }
  std::int64_t finished() const { return finished_; }  // in the last step
  const Totals& totals() const { return totals_; }

 private:
  // A request in the instance: the tokens it must compute before it next generates (its
  // prompt, or after a preemption its prompt and what it generated, recomputed), those
  // computed, the tokens generated, its KV blocks, and its record.
  struct State {
    std::int64_t id = 0;
    Request req;
    std::int64_t target = 0, computed = 0, generated = 0, blocks = 0;
    ps_t last_token = -1;
    Served out;
    bool prefilling() const { return computed < target; }
  };
  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + lim_.kv_block - 1) / lim_.kv_block; }
  void admit();
  void preempt(std::int32_t k);
  std::int64_t want(std::int32_t k, std::int64_t budget) const;
  bool allocate(std::int32_t k, std::int64_t tokens);
  void choose(std::vector<std::pair<std::int32_t, std::int64_t>>& chosen);
  void advance(std::int32_t k, std::int64_t n);
  [[noreturn]] void refuse() const;
  State& at(std::int32_t k);
  const State& at(std::int32_t k) const;

  const Limits& lim_;
  const StepTime& step_time_;
  Sink& sink_;
  std::int32_t index_;
  std::vector<State> slots_;          // request records; slots reused once their request finishes
  std::vector<std::int32_t> unused_;  // free slots
  std::deque<std::int32_t> incoming_, waiting_;
  std::vector<std::int32_t> running_;
  std::vector<std::pair<std::int32_t, std::int64_t>> chosen_;  // the step's (slot, tokens)
  StepMix mix_;
  std::int64_t free_ = 0, live_ = 0, finished_ = 0;
  ps_t now_ = 0;
  Totals totals_;
};

}  // namespace kb::serve
