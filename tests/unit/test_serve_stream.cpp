// A serving run holds only the requests in flight (docs/model.md section 13.16): requests come
// from a stream and go to a sink as they finish, latencies fold into bounded quantiles, and
// disaggregated instances run side by side in time, equal to running prefill first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "host/serve/serve_disagg.h"
#include "host/serve/serve_workload.h"

namespace kb::serve {
namespace {

constexpr ps_t kMs = INT64_C(1000000000);

// 2 ms a step, and 1 us more a token.
ps_t linear_step(const StepMix& m) { return 2 * kMs + m.tokens() * kMs / 1000; }

// Counts what it sees and keeps nothing.
struct Count final : Sink {
  void served(std::int64_t id, const Served& s) override {
    ++requests, last_id = std::max(last_id, id);
    tokens += s.output;
  }
  void gap(ps_t) override { ++gaps; }
  void step(const Step&) override { ++steps; }
  std::int64_t requests = 0, gaps = 0, steps = 0, tokens = 0, last_id = -1;
};

TEST(ServeStream, AMillionRequestsHoldOnlyThoseInFlight) {
  const Arrivals a = parse_arrivals("poisson:2000");
  const Lengths isl = parse_lengths("uniform:16:64", "--isl"), osl = parse_lengths("uniform:2:12", "--osl");
  RequestStream source(a, isl, osl, {}, 1000000, 5);
  Limits lim;
  lim.max_num_seqs = 64;
  Count count;
  const Totals t = simulate(source, lim, linear_step, count);
  EXPECT_EQ(count.requests, 1000000);
  EXPECT_EQ(count.last_id, 999999);
  EXPECT_EQ(count.gaps, count.tokens - 1000000);  // every token but each request's first
  EXPECT_EQ(t.requests, 1000000);
  // A run of 10^6 requests holds at most a few hundred records: those arrived and not done.
  EXPECT_GT(t.peak_records, 8);
  EXPECT_LT(t.peak_records, 5000);
  // Little's law on the run's own counters: L = lambda W, the area over time against the
  // mean sojourn times the rate (both from the sink-free totals and the report).
  ReportBuilder report(1.0, 1.0);
  RequestStream again(a, isl, osl, {}, 200000, 5);
  const Totals u = simulate(again, lim, linear_step, report);
  const Report r = report.report(u);
  EXPECT_FALSE(report.exact());  // more than 2^16 gaps: binned
  EXPECT_LT(report.bytes(), std::size_t{4} << 20);
  const double sojourn = r.e2e.mean * static_cast<double>(r.e2e.count) * 1e12;
  EXPECT_NEAR(u.in_system_area / sojourn, 1.0, 1e-9);
}

TEST(ServeStream, QuantilesAreExactThenWithinTheirBound) {
  std::mt19937_64 g(11);
  std::lognormal_distribution<double> d(-3.0, 1.5);
  std::vector<double> xs;
  Quantiles q;
  for (std::size_t i = 0; i < Quantiles::kExactValues; ++i) xs.push_back(d(g)), q.add(xs.back());
  const Stats exact = stats_of(xs), held = q.stats();
  EXPECT_TRUE(q.exact());
  EXPECT_EQ(held.p50, exact.p50);
  EXPECT_EQ(held.p90, exact.p90);
  EXPECT_EQ(held.p99, exact.p99);
  EXPECT_EQ(held.mean, exact.mean);
  for (int i = 0; i < 700000; ++i) xs.push_back(d(g)), q.add(xs.back());
  xs.push_back(0.0), q.add(0.0);
  const Stats all = stats_of(xs), binned = q.stats();
  EXPECT_FALSE(q.exact());
  EXPECT_EQ(binned.count, all.count);
  for (auto [b, e] : {std::pair{binned.p50, all.p50}, {binned.p90, all.p90}, {binned.p99, all.p99}})
    EXPECT_LE(std::fabs(b - e), e * std::ldexp(1.0, -13)) << b << " against " << e;
  EXPECT_NEAR(binned.mean, all.mean, all.mean * 1e-12);
  EXPECT_LT(q.bytes(), std::size_t{4} << 20);  // 766,000 values in a few thousand bins
  // The extremes stay exact; a percentile between them is its bin's middle.
  Quantiles one;
  for (int i = 0; i < 70000; ++i) one.add(1.0 + i % 7);
  EXPECT_EQ(one.stats().p99, 7.0);
  EXPECT_NEAR(one.stats().p50, 4.0, 4.0 * std::ldexp(1.0, -13));
  EXPECT_NE(one.stats().p50, 4.0);
}

// Disaggregated instances side by side in time give what running every prefill instance first,
// then the decode instances on the KV caches in order of readiness, gives.
TEST(ServeStream, DisaggregationSideBySideEqualsPrefillFirst) {
  const std::vector<Request> rs = make_requests(parse_arrivals("gamma:400:2"), parse_lengths("uniform:10:300", "--isl"),
                                                parse_lengths("uniform:1:40", "--osl"), {}, 3000, 7);
  Limits lim;
  lim.max_num_seqs = 24, lim.max_batched_tokens = 512, lim.kv_blocks = 900;
  const KvTime kv = [](std::int64_t p) { return kMs / 4 + p * kMs / 200; };
  for (auto [p, d] : {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 3}, {3, 2}}) {
    const DisaggRun got = simulate_disagg(rs, lim, linear_step, kv, p, d);
    // Prefill first: each instance alone, round robin by request.
    std::vector<Served> first(rs.size()), rest(rs.size());
    std::vector<Step> steps;
    for (std::int64_t k = 0; k < p; ++k) {
      std::vector<Request> mine;
      std::vector<std::size_t> ids;
      for (std::size_t i = static_cast<std::size_t>(k); i < rs.size(); i += static_cast<std::size_t>(p))
        ids.push_back(i), mine.push_back(rs[i]), mine.back().output = 1;
      const ServeRun r = simulate(mine, lim, linear_step);
      for (std::size_t j = 0; j < ids.size(); ++j) first[ids[j]] = r.requests[j];
      for (Step s : r.steps) s.instance = static_cast<std::int32_t>(k), steps.push_back(s);
    }
    std::vector<std::size_t> more;
    std::vector<ps_t> ready(rs.size());
    for (std::size_t i = 0; i < rs.size(); ++i)
      if (rs[i].output > 1) more.push_back(i), ready[i] = first[i].first_token + kv(rs[i].input);
    std::stable_sort(more.begin(), more.end(), [&](std::size_t a, std::size_t b) { return ready[a] < ready[b]; });
    for (std::int64_t k = 0; k < d; ++k) {
      std::vector<Request> mine;
      std::vector<std::size_t> ids;
      for (std::size_t j = static_cast<std::size_t>(k); j < more.size(); j += static_cast<std::size_t>(d)) {
        Request q = rs[more[j]];
        q.arrival = ready[more[j]], q.cached = q.input, q.generated = 1;
        ids.push_back(more[j]), mine.push_back(q);
      }
      const ServeRun r = simulate(mine, lim, linear_step);
      for (std::size_t j = 0; j < ids.size(); ++j) rest[ids[j]] = r.requests[j];
      for (Step s : r.steps) s.instance = static_cast<std::int32_t>(p + k), steps.push_back(s);
    }
    std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.start < b.start; });
    for (std::size_t i = 0; i < rs.size(); ++i) {
      const Served& s = got.run.requests[i];
      ASSERT_EQ(s.first_token, first[i].first_token) << i;
      ASSERT_EQ(s.finish, rs[i].output > 1 ? rest[i].finish : first[i].finish) << i;
      ASSERT_EQ(s.preemptions, first[i].preemptions + (rs[i].output > 1 ? rest[i].preemptions : 0)) << i;
    }
    ASSERT_EQ(got.run.steps.size(), steps.size());
    for (std::size_t j = 0; j < steps.size(); ++j) {
      ASSERT_EQ(got.run.steps[j].start, steps[j].start) << j;
      ASSERT_EQ(got.run.steps[j].instance, steps[j].instance) << j;
      ASSERT_EQ(got.run.steps[j].kv_blocks, steps[j].kv_blocks) << j;
    }
  }
}

TEST(ServeStream, DisaggregatedMillionsStayInFlightToo) {
  RequestStream source(parse_arrivals("poisson:3000"), parse_lengths("uniform:16:64", "--isl"), parse_lengths("uniform:2:8", "--osl"), {},
                       300000, 3);
  Count count;
  Limits lim;
  lim.max_num_seqs = 64;
  const Totals t = simulate_disagg(source, lim, linear_step, [](std::int64_t) { return kMs; }, 2, 2, count);
  EXPECT_EQ(count.requests, 300000);
  EXPECT_LT(t.peak_records, 5000);
}

}  // namespace
}  // namespace kb::serve
