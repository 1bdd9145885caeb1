#include "serve_disagg.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>

#include "../common/error.h"
#include "serve_instance.h"

namespace kb::serve {

namespace {

// The run's instances and what passes between them: requests between their prefill and
// their end, and KV caches on their way to a decode instance (by readiness, then request).
class Disagg {
 public:
  Disagg(const Limits& limits, const StepTime& step_time, const KvTime& transfer, std::int64_t prefill, std::int64_t decode,
         Sink& sink)
      : transfer_(transfer), sink_(sink), prefill_sink_(*this), decode_sink_(*this), prefill_(prefill) {
    for (std::int64_t k = 0; k < prefill + decode; ++k)
      instances_.push_back(std::make_unique<Instance>(limits, step_time, k < prefill ? static_cast<Sink&>(prefill_sink_)
                                                                                     : static_cast<Sink&>(decode_sink_),
                                                      static_cast<std::int32_t>(k)));
  }

  Totals run(Source& source, const Limits& limits) {
    Request r;
    std::int64_t id = 0, handed = 0;
    ps_t previous = 0;
    auto pull = [&] {
      if (!source.next(&r)) return false;
      check_request(id, r, limits, previous);
      previous = r.arrival;
      return true;
    };
    for (bool more = pull();;) {
      // The next event: the earliest step (lowest instance on a tie), unless a request
      // arrives or a KV cache is ready by then (they come first: a step admits both).
      std::size_t next = 0;
      ps_t t = std::numeric_limits<ps_t>::max();
      for (std::size_t k = 0; k < instances_.size(); ++k)
        if (instances_[k]->next_time() < t) t = instances_[k]->next_time(), next = k;
      if (more && r.arrival <= t) {
        Request p = r;
        p.output = 1, p.cached = 0, p.generated = 0;
        waiting_[id] = Waiting{r, Served{}};
        peak_waiting_ = std::max(peak_waiting_, static_cast<std::int64_t>(waiting_.size()));
        instances_[static_cast<std::size_t>(id % prefill_)]->offer(id, p);
        ++id;
        more = pull();
      } else if (!ready_.empty() && ready_.top().first <= t) {
        const auto [at, i] = ready_.top();
        ready_.pop();
        Request d = waiting_.at(i).request;
        d.arrival = at, d.cached = d.input, d.generated = 1;
        const std::size_t decode = instances_.size() - static_cast<std::size_t>(prefill_);
        instances_[static_cast<std::size_t>(prefill_) + static_cast<std::size_t>(handed++) % decode]->offer(i, d);
      } else if (t == std::numeric_limits<ps_t>::max()) {
        break;
      } else {
        instances_[next]->step();
      }
    }
    for (const auto& one : instances_) {
      totals_.preemptions += one->totals().preemptions;
      totals_.peak_records += one->totals().peak_records;
    }
    totals_.requests = id;
    totals_.peak_records += peak_waiting_;
    return totals_;
  }

 private:
  struct Waiting {
    Request request;
    Served first;  // from its prefill instance
  };
  // What a prefill instance served: a request's prompt and first token.
  struct PrefillSink final : Sink {
    explicit PrefillSink(Disagg& d) : d(d) {}
    void served(std::int64_t id, const Served& s) override { d.prefilled(id, s); }
    void step(const Step& s) override { d.sink_.step(s); }
    Disagg& d;
  };
  // What a decode instance served: the rest.
  struct DecodeSink final : Sink {
    explicit DecodeSink(Disagg& d) : d(d) {}
    void served(std::int64_t id, const Served& s) override { d.decoded(id, s); }
    void gap(ps_t g) override { d.sink_.gap(g); }
    void step(const Step& s) override { d.sink_.step(s); }
    Disagg& d;
  };

  void prefilled(std::int64_t id, const Served& s) {
    Waiting& w = waiting_.at(id);
    w.first = s;
    w.first.output = w.request.output;
    if (w.request.output == 1) return finish(id, w.first);
    const ps_t t = transfer_(w.request.input);
    sink_.transfer(id, t);
    ready_.emplace(s.first_token + t, id);
  }
  void decoded(std::int64_t id, const Served& rest) {
    Served s = waiting_.at(id).first;
    s.finish = rest.finish, s.preemptions += rest.preemptions;
    // The gap to its second token: the transfer, the wait, and the decode instance's first step.
    sink_.gap(rest.first_token - s.first_token);
    finish(id, s);
  }
  // Request id served end to end (`s` may be its own record, so it is erased last).
  void finish(std::int64_t id, const Served& s) {
    totals_.end = std::max(totals_.end, s.finish);
    totals_.in_system_area += static_cast<double>(s.finish - s.arrival);
    sink_.served(id, s);
    waiting_.erase(id);
  }

  const KvTime& transfer_;
  Sink& sink_;
  PrefillSink prefill_sink_;
  DecodeSink decode_sink_;
  std::int64_t prefill_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::unordered_map<std::int64_t, Waiting> waiting_;  // requests between their arrival and their end
  using Ready = std::pair<ps_t, std::int64_t>;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready_;
  std::int64_t peak_waiting_ = 0;
  Totals totals_;
};

}  // namespace

Totals simulate_disagg(Source& source, const Limits& limits, const StepTime& step_time, const KvTime& transfer,
                       std::int64_t prefill, std::int64_t decode, Sink& sink) {
  if (prefill < 1 || decode < 1) throw InputError("--disagg: at least one prefill and one decode instance");
  check_limits(limits);
  return Disagg(limits, step_time, transfer, prefill, decode, sink).run(source, limits);
}

DisaggRun simulate_disagg(const std::vector<Request>& requests, const Limits& limits, const StepTime& step_time,
                          const KvTime& transfer, std::int64_t prefill, std::int64_t decode) {
  if (prefill < 1 || decode < 1) throw InputError("--disagg: at least one prefill and one decode instance");
  check_requests(requests, limits, true);  // each request by its own index, before any instance runs
  struct Keep final : KeepAll {
    explicit Keep(std::size_t n) : KeepAll(n), times(n, 0) {}
    void transfer(std::int64_t id, ps_t t) override { times[static_cast<std::size_t>(id)] = t; }
    std::vector<ps_t> times;
  };
  VectorSource source(requests);
  Keep keep(requests.size());
  const Totals t = simulate_disagg(source, limits, step_time, transfer, prefill, decode, keep);
  DisaggRun out;
  out.transfer = std::move(keep.times);
  out.run = keep.take(t);
  return out;
}

}  // namespace kb::serve
