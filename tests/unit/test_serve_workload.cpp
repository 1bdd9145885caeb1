// A serving workload (src/host/serve/serve_workload.h): arrival processes and length
// distributions against their moments, traces and conversation files read as written and
// refused in one line where they are wrong, and a run's report (percentiles, goodput) by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "host/common/error.h"
#include "host/serve/serve_workload.h"

namespace kb::serve {
namespace {

// The gaps' mean and coefficient of variation.
std::pair<double, double> gap_moments(const std::vector<Request>& r) {
  double s = 0, s2 = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double g = static_cast<double>(r[i].arrival - (i ? r[i - 1].arrival : 0)) / 1e12;
    s += g, s2 += g * g;
  }
  const double n = static_cast<double>(r.size()), mean = s / n;
  return {mean, std::sqrt(s2 / n - mean * mean) / mean};
}

TEST(ServeWorkload, ArrivalsHaveTheirRateAndVariation) {
  Lengths one;
  for (const char* spec : {"poisson:50", "gamma:50:1", "gamma:50:0.25", "gamma:50:3"}) {
    const Arrivals a = parse_arrivals(spec);
    const std::vector<Request> r = make_requests(a, one, one, {}, 200000, 9);
    const auto [mean, cv] = gap_moments(r);
    EXPECT_NEAR(mean, 0.02, 0.02 * 0.02) << spec;  // 200,000 gaps: the mean within 2 %
    EXPECT_NEAR(cv, a.kind == Arrivals::Kind::poisson ? 1.0 : a.cv, 0.03 * (a.kind == Arrivals::Kind::poisson ? 1.0 : a.cv)) << spec;
    EXPECT_EQ(r, make_requests(a, one, one, {}, 200000, 9)) << spec;  // seeded
  }
  EXPECT_EQ(parse_arrivals("closed:16").clients, 16);
}

TEST(ServeWorkload, LengthsHaveTheirDistributions) {
  const Arrivals a = parse_arrivals("poisson:1");
  const Lengths uni = parse_lengths("uniform:100:199", "--isl"), logn = parse_lengths("lognormal:300:0.8", "--osl");
  const std::vector<Request> r = make_requests(a, uni, logn, {}, 100000, 3);
  double in = 0, out = 0;
  std::int64_t lo = 1 << 30, hi = 0;
  for (const Request& q : r) in += static_cast<double>(q.input), out += static_cast<double>(q.output), lo = std::min(lo, q.input), hi = std::max(hi, q.input);
  EXPECT_EQ(lo, 100);
  EXPECT_EQ(hi, 199);
  EXPECT_NEAR(in / 1e5, 149.5, 0.5);
  EXPECT_NEAR(out / 1e5, 300.0, 300.0 * 0.01);  // the lognormal's mean (rounding moves it by < 0.1 %)
  EXPECT_EQ(parse_lengths("512", "--isl").a, 512);
}

std::string write(const std::string& name, const std::string& text) {
  const std::string p = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(p) << text;
  return p;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(ServeWorkload, TracesAndConversationFilesAreReadAsWritten) {
  const std::string trace = write("kb_serve_trace.csv", "timestamp,input_tokens,output_tokens\n0.5, 100, 20\n# a comment\n1.25,7,1\n");
  const Arrivals a = parse_arrivals(trace);
  ASSERT_EQ(a.trace_rows, 2);
  const std::vector<Request> rows = make_requests(a, Lengths{}, Lengths{}, {}, 2, 0);  // read again, row by row
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].arrival, 500'000'000'000);
  EXPECT_EQ(rows[1].arrival, 1'250'000'000'000);
  EXPECT_EQ(rows[1].input, 7);
  EXPECT_EQ(make_requests(a, Lengths{}, Lengths{}, {}, 1, 0).size(), 1u);
  const std::string conv = write("kb_serve_conv.csv", "input,output\n10,20\n30,40\n");
  const auto pairs = read_lengths(conv);
  ASSERT_EQ(pairs.size(), 2u);
  const std::vector<Request> r = make_requests(parse_arrivals("poisson:5"), Lengths{}, Lengths{}, pairs, 1000, 4);
  int first = 0;
  for (const Request& q : r) {
    EXPECT_TRUE((q.input == 10 && q.output == 20) || (q.input == 30 && q.output == 40));
    first += q.input == 10;
  }
  EXPECT_GT(first, 400);
  EXPECT_LT(first, 600);
}

TEST(ServeWorkload, BadInputIsOneLineNamingWhere) {
  const std::string late = write("kb_serve_late.csv", "1.0,10,10\n0.5,10,10\n");
  EXPECT_EQ(refusal([&] { parse_arrivals(late); }), late + ":2:1: timestamp: 0.5 s is before the row above's");
  const std::string zero = write("kb_serve_zero.csv", "0,10,10\n1, 10, 0\n");
  EXPECT_EQ(refusal([&] { parse_arrivals(zero); }), zero + ":2:8: output: expected an integer from 1 to 2^24 tokens, got '0'");
  const std::string short_row = write("kb_serve_short.csv", "0,10\n");
  EXPECT_EQ(refusal([&] { parse_arrivals(short_row); }), short_row + ":1:1: timestamp,input,output: expected 3 fields, got 2");
  EXPECT_EQ(refusal([] { parse_arrivals("poisson:0"); }), "--arrivals poisson:0: RATE: requests a second, above 0 and at most 10^9");
  EXPECT_EQ(refusal([] { parse_arrivals("gamma:5"); }), "--arrivals gamma:5: gamma:RATE:CV");
  EXPECT_EQ(refusal([] { parse_arrivals("closed:0"); }), "--arrivals closed:0: closed:CONCURRENCY, 1 to 2^20 clients");
  EXPECT_EQ(refusal([] { parse_arrivals("bursty"); }), "--arrivals bursty: poisson:RATE, gamma:RATE:CV, closed:CONCURRENCY or a trace FILE.csv");
  EXPECT_EQ(refusal([] { parse_lengths("uniform:9:3", "--isl"); }), "--isl uniform:9:3: uniform:A:B with 1 <= A <= B <= 2^24");
  EXPECT_EQ(refusal([] { parse_lengths("0", "--osl"); }), "--osl 0: N tokens (1 to 2^24), uniform:A:B or lognormal:MEAN:SIGMA");
  const std::string conv = write("kb_serve_conv_bad.csv", "10,x\n");
  EXPECT_EQ(refusal([&] { read_lengths(conv); }), conv + ":1:4: output: expected an integer from 1 to 2^24 tokens, got 'x'");
  // Arrivals past 10^6 s (a trace's limit), which picoseconds would not hold for long.
  const Lengths one = parse_lengths("1", "--isl");
  const std::string far = refusal([&] { make_requests(parse_arrivals("poisson:0.01"), one, one, {}, 100000, 1); });
  EXPECT_EQ(far.rfind("--arrivals poisson with --requests 100000: request ", 0), 0u) << far;
  // A lognormal's far tail is clamped at 2^24 tokens, as every other length.
  const Lengths wide = parse_lengths("lognormal:1000000:4", "--osl");
  for (const Request& r : make_requests(parse_arrivals("poisson:5"), one, wide, {}, 2000, 3)) ASSERT_LE(r.output, 16777216);
}

// A run's report by hand: two requests on a fixed step time.
TEST(ServeWorkload, TheReportCountsLatenciesAndGoodput) {
  EXPECT_EQ(stats_of({4, 1, 3, 2}).p50, 2);  // nearest rank: the 2nd of 4
  EXPECT_EQ(stats_of({4, 1, 3, 2}).p90, 4);
  EXPECT_EQ(stats_of({4, 1, 3, 2}).mean, 2.5);
  Limits lim;
  lim.max_num_seqs = 1;  // one at a time
  const std::vector<Request> req{{0, 10, 3}, {0, 10, 1}};
  const ServeRun run = simulate(req, lim, [](const StepMix&) { return ps_t{100'000'000'000}; });  // 0.1 s a step
  // The first: prefill 0.1 s (TTFT), two decodes (TPOT 0.1 s, E2E 0.3 s); the second waits,
  // then its prefill gives its only token at 0.4 s.
  const Report r = report_of(run, 0.2, 0.1);
  EXPECT_DOUBLE_EQ(r.ttft.p50, 0.1);
  EXPECT_DOUBLE_EQ(r.ttft.p99, 0.4);
  EXPECT_DOUBLE_EQ(r.tpot.mean, 0.1);
  EXPECT_EQ(r.tpot.count, 1);
  EXPECT_DOUBLE_EQ(r.e2e.mean, 0.35);
  EXPECT_EQ(r.met_slo, 1);  // the second's TTFT of 0.4 s misses 0.2
  EXPECT_DOUBLE_EQ(r.seconds, 0.4);
  EXPECT_DOUBLE_EQ(r.goodput_per_s, 2.5);
  EXPECT_DOUBLE_EQ(r.output_tokens_per_s, 10.0);
}

}  // namespace
}  // namespace kb::serve
