#include "serve_sim.h"

#include "serve_instance.h"

#include <algorithm>
#include <deque>
#include <limits>
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

}  // namespace

Instance::State& Instance::at(std::int32_t k) { return slots_[static_cast<std::size_t>(k)]; }
const Instance::State& Instance::at(std::int32_t k) const { return slots_[static_cast<std::size_t>(k)]; }

void Instance::offer(std::int64_t id, const Request& r) {
  std::int32_t k = 0;
  if (unused_.empty()) {
    k = static_cast<std::int32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    k = unused_.back();
    unused_.pop_back();
  }
  State& s = at(k);
  s = State{};
  s.id = id, s.req = r;
  s.target = r.input, s.computed = r.cached, s.generated = r.generated;
  s.out.arrival = r.arrival, s.out.input = r.input, s.out.output = r.output;
  incoming_.push_back(k);
  ++live_, ++totals_.requests;
  totals_.peak_records = std::max(totals_.peak_records, live_);
}

ps_t Instance::next_time() const {
  if (live_ == 0) return std::numeric_limits<ps_t>::max();
  if (running_.empty() && waiting_.empty()) return std::max(now_, at(incoming_.front()).out.arrival);
  return now_;
}

// Admits what has arrived by now; each adds its wait since its arrival to Little's integral
// (an arrival within a step is in the system through the rest of it).
void Instance::admit() {
  while (!incoming_.empty() && at(incoming_.front()).out.arrival <= now_) {
    const std::int32_t k = incoming_.front();
    incoming_.pop_front();
    totals_.in_system_area += static_cast<double>(now_ - at(k).out.arrival);
    waiting_.push_back(k);
  }
}

// Frees request k's blocks and puts it back at the head of the queue, to recompute.
void Instance::preempt(std::int32_t k) {
  State& s = at(k);
  free_ += s.blocks;
  s.blocks = 0, s.computed = 0, s.target = s.req.input + s.generated;
  ++s.out.preemptions, ++totals_.preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), k));
  waiting_.push_front(k);
}

// Tokens request k would compute this step, with `budget` left (0: none).
std::int64_t Instance::want(std::int32_t k, std::int64_t budget) const {
  const State& s = at(k);
  if (!s.prefilling()) return budget >= 1 ? 1 : 0;
  const std::int64_t left = s.target - s.computed;
  if (lim_.chunked_prefill) return std::min(left, budget);
  return left <= budget ? left : 0;
}

// Takes the blocks request k needs to hold `tokens` more; false when the cache is short.
bool Instance::allocate(std::int32_t k, std::int64_t tokens) {
  State& s = at(k);
  const std::int64_t need = blocks_for(s.computed + tokens) - s.blocks;
  if (need > free_) return false;
  free_ -= need, s.blocks += need;
  return true;
}

// The step's requests and their tokens.
void Instance::choose(std::vector<std::pair<std::int32_t, std::int64_t>>& chosen) {
  std::int64_t budget = lim_.max_batched_tokens;
  bool preempted = false;
  // Running requests first, in the order they were admitted; where the cache is short, the
  // latest running request is preempted (itself, when it is the latest).
  for (std::size_t j = 0; j < running_.size() && budget > 0;) {
    const std::int32_t k = running_[j];
    const std::int64_t n = want(k, budget);
    if (n == 0) {
      ++j;
      continue;
    }
    bool ok = allocate(k, n);
    while (!ok && running_.back() != k) {
      preempt(running_.back());
      preempted = true;
      ok = allocate(k, n);
    }
    if (!ok) {
      preempt(k);
      preempted = true;
      break;
    }
    chosen.emplace_back(k, n), budget -= n, ++j;
  }
  // Then waiting requests, first come first served, while a sequence slot, the budget and
  // the cache allow (none in a step that preempted).
  while (!preempted && !waiting_.empty() && budget > 0 && static_cast<std::int64_t>(running_.size()) < lim_.max_num_seqs) {
    const std::int32_t k = waiting_.front();
    const std::int64_t n = want(k, budget);
    if (n == 0 || !allocate(k, n)) break;
    waiting_.pop_front();
    running_.push_back(k);
    chosen.emplace_back(k, n), budget -= n;
    if (at(k).out.scheduled < 0) at(k).out.scheduled = now_;
  }
}

void Instance::step() {
  now_ = next_time();
  admit();
  finished_ = 0;
  chosen_.clear();
  choose(chosen_);
  if (chosen_.empty()) refuse();
  mix_.decode_contexts.clear(), mix_.prefill_tokens.clear(), mix_.prefill_before.clear();
  for (const auto& [k, n] : chosen_) {
    const State& s = at(k);
    if (s.prefilling()) mix_.prefill_tokens.push_back(n), mix_.prefill_before.push_back(s.computed);
    else mix_.decode_contexts.push_back(s.req.input + s.generated);
  }
  const ps_t dt = step_time_(mix_);
  if (dt <= 0) throw InternalError("a serving step took " + std::to_string(dt) + " ps", __FILE__, __LINE__);
  Step rec;
  rec.start = now_, rec.time = dt, rec.tokens = mix_.tokens(), rec.instance = index_;
  for (std::int64_t t : mix_.prefill_tokens) rec.prefill_tokens += t;
  rec.running = static_cast<std::int32_t>(running_.size()), rec.waiting = static_cast<std::int32_t>(waiting_.size());
  // Little's law's integral: who was in the system through the step.
  totals_.in_system_area += static_cast<double>(running_.size() + waiting_.size()) * static_cast<double>(dt);
  now_ += dt;
  for (const auto& [k, n] : chosen_) advance(k, n);
  rec.kv_blocks = lim_.kv_blocks - free_;
  sink_.step(rec);
}

// Request k computed n tokens in the step that ended now.
void Instance::advance(std::int32_t k, std::int64_t n) {
  State& s = at(k);
  const bool decode = !s.prefilling();
  s.computed += decode ? 0 : n;
  if (!decode && s.prefilling()) return;  // a chunk of a prompt, more to come
  if (decode) ++s.computed, ++s.target;   // the token it decoded is now cached
  ++s.generated;
  if (s.last_token >= 0) sink_.gap(now_ - s.last_token);
  s.last_token = now_;
  if (s.out.first_token < 0) s.out.first_token = now_;
  if (s.generated < s.req.output) return;
  s.out.finish = now_;
  totals_.end = std::max(totals_.end, now_);
  free_ += s.blocks, s.blocks = 0;
  running_.erase(std::find(running_.begin(), running_.end(), k));
  ++finished_, --live_;
  unused_.push_back(k);
  sink_.served(s.id, s.out);
}

// No request could run this step: the one at the head (a recompute of its prompt and what it
// had generated, above the budget without chunked prefill).
void Instance::refuse() const {
  const State& s = at(waiting_.empty() ? running_.front() : waiting_.front());
  check_fits(static_cast<std::size_t>(s.id), s.target - s.computed, s.req, lim_);
  throw InternalError("request " + std::to_string(s.id) + " fits, yet no request could be scheduled", __FILE__, __LINE__);
}

void check_limits(const Limits& limits) {
  if (limits.max_num_seqs < 1 || limits.max_batched_tokens < 1 || limits.kv_block < 1 || limits.kv_blocks < 1)
    throw InputError("serving limits: max_num_seqs, max_batched_tokens, kv_block and kv_blocks must be at least 1");
}

void check_request(std::int64_t i, const Request& r, const Limits& limits, ps_t previous) {
  if (r.input < 1 || r.output < 1) throw InputError("request " + std::to_string(i) + ": input and output tokens must be at least 1");
  if (r.cached < 0 || r.cached > r.input || r.generated < 0 || r.generated >= r.output)
    throw InputError("request " + std::to_string(i) + ": its cached tokens must be 0..input, its generated ones below output");
  if (previous >= 0 && r.arrival < previous)
    throw InputError("request " + std::to_string(i) + ": arrivals must not go back in time");
  check_fits(static_cast<std::size_t>(i), r.input - r.cached, r, limits);
}

void check_requests(const std::vector<Request>& requests, const Limits& limits, bool open_loop) {
  check_limits(limits);
  for (std::size_t i = 0; i < requests.size(); ++i)
    check_request(static_cast<std::int64_t>(i), requests[i], limits, open_loop && i > 0 ? requests[i - 1].arrival : -1);
}

Totals simulate(Source& source, const Limits& limits, const StepTime& step_time, Sink& sink, std::int64_t clients) {
  check_limits(limits);
  Instance one(limits, step_time, sink, 0);
  Request r;
  std::int64_t id = 0;
  ps_t previous = 0;
  // The next request from the source, checked; false when there is none.
  auto pull = [&] {
    if (!source.next(&r)) return false;
    check_request(id, r, limits, clients > 0 ? -1 : previous);
    previous = r.arrival;
    return true;
  };
  if (clients > 0) {
    for (std::int64_t c = 0; c < clients && pull(); ++c) r.arrival = 0, one.offer(id++, r);
  }
  bool more = clients > 0 ? true : pull();
  for (;;) {
    // Open loop: every request arrived by the next step (the next one, when it is idle).
    while (clients == 0 && more && (one.idle() || r.arrival <= one.next_time())) {
      one.offer(id++, r);
      more = pull();
    }
    if (one.idle()) break;
    one.step();
    // Closed loop: each request finished sends its client's next one.
    for (std::int64_t f = 0; clients > 0 && f < one.finished() && pull(); ++f) r.arrival = one.now(), one.offer(id++, r);
  }
  return one.totals();
}

ServeRun simulate(const std::vector<Request>& requests, const Limits& limits, const StepTime& step_time, std::int64_t clients) {
  check_requests(requests, limits, clients == 0);
  VectorSource source(requests);
  KeepAll keep(requests.size());
  const Totals t = simulate(source, limits, step_time, keep, clients);
  return keep.take(t);
}

}  // namespace kb::serve
