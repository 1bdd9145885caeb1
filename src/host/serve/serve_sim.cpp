#include "serve_sim.h"

#include <algorithm>
#include <deque>
#include <string>

#include "../common/error.h"

namespace kb::serve {

std::int64_t StepMix::tokens() const {
  std::int64_t n = static_cast<std::int64_t>(decode_contexts.size());
  for (std::int64_t t : prefill_tokens) n += t;
  return n;
}

namespace {

// Whether request i can run: a prefill of `prefill` tokens within the step's budget (without
// chunked prefill), and its tokens within the cache. InputError where it cannot.
void check_fits(std::size_t i, std::int64_t prefill, const Request& r, const Limits& lim) {
  if (!lim.chunked_prefill && prefill > lim.max_batched_tokens)
    throw InputError("request " + std::to_string(i) + ": a prefill of " + std::to_string(prefill) +
                     " tokens is above --max-batched-tokens " + std::to_string(lim.max_batched_tokens) + " without chunked prefill");
  // The most it holds: its prompt and every token but the last (whose KV is never stored).
  const std::int64_t held = r.input + r.output - 1, blocks = (held + lim.kv_block - 1) / lim.kv_block;
  if (blocks > lim.kv_blocks)
    throw InputError("request " + std::to_string(i) + ": its " + std::to_string(held) + " cached tokens need " +
                     std::to_string(blocks) + " KV blocks of " + std::to_string(lim.kv_block) + " tokens; the cache holds " +
                     std::to_string(lim.kv_blocks));
}

// A request's progress: the tokens it must compute before it next generates (its prompt, or
// after a preemption its prompt and what it generated, recomputed), those computed, the
// tokens generated, and its KV blocks.
struct State {
  std::int64_t target = 0, computed = 0, generated = 0, blocks = 0;
  ps_t last_token = -1;
  bool prefilling() const { return computed < target; }
};

class Simulator {
 public:
  Simulator(const std::vector<Request>& requests, const Limits& limits, const StepTime& step_time, std::int64_t clients)
      : req_(requests), lim_(limits), step_time_(step_time), clients_(clients), st_(requests.size()) {
    run_.requests.resize(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      Served& s = run_.requests[i];
      s.arrival = clients > 0 ? (static_cast<std::int64_t>(i) < clients ? 0 : -1) : requests[i].arrival;
      s.input = requests[i].input, s.output = requests[i].output;
      st_[i].target = requests[i].input;
      st_[i].computed = requests[i].cached, st_[i].generated = requests[i].generated;
    }
    released_ = clients > 0 ? std::min<std::int64_t>(clients, static_cast<std::int64_t>(requests.size()))
                            : static_cast<std::int64_t>(requests.size());
    free_ = limits.kv_blocks;
  }

  ServeRun run() {
    for (;;) {
      admit_arrivals();
      if (running_.empty() && waiting_.empty()) {
        if (next_ >= released_) break;  // every released request served (closed loop: every request)
        now_ = std::max(now_, run_.requests[static_cast<std::size_t>(next_)].arrival);
        continue;
      }
      step();
    }
    return std::move(run_);
  }

 private:
  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + lim_.kv_block - 1) / lim_.kv_block; }

  void admit_arrivals() {
    while (next_ < released_ && run_.requests[static_cast<std::size_t>(next_)].arrival <= now_) waiting_.push_back(next_++);
  }

  // Frees request i's blocks and puts it back at the head of the queue, to recompute.
  void preempt(std::int64_t i) {
    State& s = st_[static_cast<std::size_t>(i)];
    free_ += s.blocks;
    s.blocks = 0, s.computed = 0, s.target = req_[static_cast<std::size_t>(i)].input + s.generated;
    ++run_.requests[static_cast<std::size_t>(i)].preemptions, ++run_.preemptions;
    running_.erase(std::find(running_.begin(), running_.end(), i));
    waiting_.push_front(i);
  }

  // Tokens request i would compute this step, with `budget` left (0: none).
  std::int64_t want(std::int64_t i, std::int64_t budget) const {
    const State& s = st_[static_cast<std::size_t>(i)];
    if (!s.prefilling()) return budget >= 1 ? 1 : 0;
    const std::int64_t left = s.target - s.computed;
    if (lim_.chunked_prefill) return std::min(left, budget);
    return left <= budget ? left : 0;
  }

  // Takes the blocks request i needs to hold `tokens` more; false when the cache is short.
  bool allocate(std::int64_t i, std::int64_t tokens) {
    State& s = st_[static_cast<std::size_t>(i)];
    const std::int64_t need = blocks_for(s.computed + tokens) - s.blocks;
    if (need > free_) return false;
    free_ -= need, s.blocks += need;
    return true;
  }

  void step() {
    std::int64_t budget = lim_.max_batched_tokens;
    std::vector<std::pair<std::int64_t, std::int64_t>> chosen;  // (request, tokens)
    bool preempted = false;
    // Running requests first, in the order they were admitted; where the cache is short, the
    // latest running request is preempted (itself, when it is the latest).
    for (std::size_t k = 0; k < running_.size() && budget > 0;) {
      const std::int64_t i = running_[k], n = want(i, budget);
      if (n == 0) {
        ++k;
        continue;
      }
      bool ok = allocate(i, n);
      while (!ok && running_.back() != i) {
        preempt(running_.back());
        preempted = true;
        ok = allocate(i, n);
      }
      if (!ok) {
        preempt(i);
        preempted = true;
        break;
      }
      chosen.emplace_back(i, n), budget -= n, ++k;
    }
    // Then waiting requests, first come first served, while a sequence slot, the budget and
    // the cache allow (none in a step that preempted).
    while (!preempted && !waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < lim_.max_num_seqs) {
      const std::int64_t i = waiting_.front(), n = want(i, budget);
      if (n == 0 || !allocate(i, n)) break;
      waiting_.pop_front();
      running_.push_back(i);
      chosen.emplace_back(i, n), budget -= n;
      Served& s = run_.requests[static_cast<std::size_t>(i)];
      if (s.scheduled < 0) s.scheduled = now_;
    }
    if (chosen.empty()) refuse();
    StepMix mix;
    for (const auto& [i, n] : chosen) {
      const State& s = st_[static_cast<std::size_t>(i)];
      if (s.prefilling()) mix.prefill_tokens.push_back(n), mix.prefill_before.push_back(s.computed);
      else mix.decode_contexts.push_back(req_[static_cast<std::size_t>(i)].input + s.generated);
    }
    const ps_t dt = step_time_(mix);
    if (dt <= 0) throw InternalError("a serving step took " + std::to_string(dt) + " ps", __FILE__, __LINE__);
    Step rec;
    rec.start = now_, rec.time = dt, rec.tokens = mix.tokens();
    for (std::int64_t t : mix.prefill_tokens) rec.prefill_tokens += t;
    rec.running = static_cast<std::int32_t>(running_.size()), rec.waiting = static_cast<std::int32_t>(waiting_.size());
    // Little's law's integral: who was in the system through the step, and who arrived in it.
    const ps_t end = now_ + dt;
    std::int64_t inside = static_cast<std::int64_t>(running_.size() + waiting_.size());
    run_.in_system_area += static_cast<double>(inside) * static_cast<double>(dt);
    for (std::int64_t j = next_; j < released_ && run_.requests[static_cast<std::size_t>(j)].arrival < end; ++j)
      run_.in_system_area += static_cast<double>(end - run_.requests[static_cast<std::size_t>(j)].arrival);
    now_ = end;
    for (const auto& [i, n] : chosen) advance(i, n);
    rec.kv_blocks = lim_.kv_blocks - free_;
    run_.steps.push_back(rec);
  }

  // Request i computed n tokens in the step that ended now.
  void advance(std::int64_t i, std::int64_t n) {
    State& s = st_[static_cast<std::size_t>(i)];
    Served& out = run_.requests[static_cast<std::size_t>(i)];
    const bool decode = !s.prefilling();
    s.computed += decode ? 0 : n;
    if (!decode && s.prefilling()) return;  // a chunk of a prompt, more to come
    if (decode) ++s.computed, ++s.target;   // the token it decoded is now cached
    ++s.generated;
    if (s.last_token >= 0) run_.itl.push_back(now_ - s.last_token);
    s.last_token = now_;
    if (out.first_token < 0) out.first_token = now_;
    if (s.generated < out.output) return;
    out.finish = now_;
    run_.end = std::max(run_.end, now_);
    free_ += s.blocks, s.blocks = 0;
    running_.erase(std::find(running_.begin(), running_.end(), i));
    if (clients_ > 0 && released_ < static_cast<std::int64_t>(req_.size()))  // its client sends the next
      run_.requests[static_cast<std::size_t>(released_++)].arrival = now_;
  }

  // No request could run this step: the one at the head (a recompute of its prompt and what it
  // had generated, above the budget without chunked prefill).
  [[noreturn]] void refuse() const {
    const std::int64_t i = waiting_.empty() ? running_.front() : waiting_.front();
    const State& s = st_[static_cast<std::size_t>(i)];
    check_fits(static_cast<std::size_t>(i), s.target - s.computed, req_[static_cast<std::size_t>(i)], lim_);
    throw InternalError("request " + std::to_string(i) + " fits, yet no request could be scheduled", __FILE__, __LINE__);
  }

  const std::vector<Request>& req_;
  const Limits& lim_;
  const StepTime& step_time_;
  std::int64_t clients_;
  std::vector<State> st_;
  ServeRun run_;
  std::deque<std::int64_t> waiting_;
  std::vector<std::int64_t> running_;
  std::int64_t next_ = 0, released_ = 0, free_ = 0;
  ps_t now_ = 0;
};

}  // namespace

void check_requests(const std::vector<Request>& requests, const Limits& limits, bool open_loop) {
  if (limits.max_num_seqs < 1 || limits.max_batched_tokens < 1 || limits.kv_block < 1 || limits.kv_blocks < 1)
    throw InputError("serving limits: max_num_seqs, max_batched_tokens, kv_block and kv_blocks must be at least 1");
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const Request& r = requests[i];
    if (r.input < 1 || r.output < 1) throw InputError("request " + std::to_string(i) + ": input and output tokens must be at least 1");
    if (r.cached < 0 || r.cached > r.input || r.generated < 0 || r.generated >= r.output)
      throw InputError("request " + std::to_string(i) + ": its cached tokens must be 0..input, its generated ones below output");
    if (open_loop && i > 0 && r.arrival < requests[i - 1].arrival)
      throw InputError("request " + std::to_string(i) + ": arrivals must not go back in time");
    check_fits(i, r.input - r.cached, r, limits);
  }
}

ServeRun simulate(const std::vector<Request>& requests, const Limits& limits, const StepTime& step_time, std::int64_t clients) {
  check_requests(requests, limits, clients == 0);
  return Simulator(requests, limits, step_time, clients).run();
}


}  // namespace kb::serve
