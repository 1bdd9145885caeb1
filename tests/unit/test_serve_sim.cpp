// The request-level serving simulation (src/host/serve/serve_sim.h): queueing theory on its
// own counters (M/D/1's mean wait, Little's law, a closed loop's throughput), and the
// scheduler's rules (the token budget, sequence slots, chunked prefill, preemption and
// recompute when KV blocks run out), by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>

#include "host/common/error.h"
#include "host/serve/serve_sim.h"
#include "host/serve/serve_workload.h"

namespace kb::serve {
namespace {

// n requests of fixed lengths arriving as a Poisson process of `rate` a second.
std::vector<Request> poisson_requests(std::int64_t n, double rate, std::uint64_t seed, std::int64_t input, std::int64_t output) {
  Lengths in, out;
  in.a = in.b = std::max<std::int64_t>(input, 1), out.a = out.b = std::max<std::int64_t>(output, 1);
  return make_requests(parse_arrivals("poisson:" + std::to_string(rate)), in, out, {}, n, seed);
}

// A step of P ps with any prefill in it, D ps otherwise: one request at a time is served in
// exactly P + (output - 1) D (a deterministic server).
StepTime two_rates(ps_t prefill, ps_t decode) {
  return [=](const StepMix& m) { return m.prefill_tokens.empty() ? decode : prefill; };
}

// Pollaczek-Khinchine for M/D/1: the mean wait in queue is rho S / (2 (1 - rho)).
TEST(ServeSim, OneAtATimeIsMD1) {
  const ps_t P = 40'000'000'000, D = 10'000'000'000;  // 40 ms and 10 ms
  const std::int64_t out = 10;
  const double S = static_cast<double>(P + (out - 1) * D) / 1e12;  // 0.13 s
  Limits lim;
  lim.max_num_seqs = 1;
  for (double rho : {0.3, 0.6, 0.8}) {
    const std::int64_t n = 40000;
    const std::vector<Request> req = poisson_requests(n, rho / S, 17, 100, out);
    const ServeRun run = simulate(req, lim, two_rates(P, D));
    // The mean wait over 20 batches of requests, and its standard error.
    const int batches = 20;
    std::vector<double> mean(batches, 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      const Served& s = run.requests[static_cast<std::size_t>(i)];
      ASSERT_EQ(s.finish - s.scheduled, P + (out - 1) * D);  // served without a break
      mean[static_cast<std::size_t>(i * batches / n)] += static_cast<double>(s.scheduled - s.arrival) / 1e12 / (n / batches);
    }
    const double m = std::accumulate(mean.begin(), mean.end(), 0.0) / batches;
    double var = 0;
    for (double x : mean) var += (x - m) * (x - m);
    const double se = std::sqrt(var / (batches - 1) / batches);
    const double want = rho * S / (2 * (1 - rho));
    std::printf("[ serve ] M/D/1 at rho %.1f: mean wait %.4f s (standard error %.4f), Pollaczek-Khinchine %.4f s\n", rho, m, se, want);
    EXPECT_NEAR(m, want, 4 * se) << "rho " << rho;
  }
}

// Little's law on the simulator's own counters: the time integral of the requests in the
// system equals the sum of their sojourns, so L = lambda W over the run.
TEST(ServeSim, LittlesLawHoldsOnItsCounters) {
  Limits lim;
  lim.max_num_seqs = 8, lim.max_batched_tokens = 512, lim.kv_block = 16, lim.kv_blocks = 100;
  std::vector<Request> req = poisson_requests(3000, 60.0, 5, 0, 0);
  for (std::size_t i = 0; i < req.size(); ++i) req[i].input = 50 + static_cast<std::int64_t>(i * 37 % 400), req[i].output = 1 + static_cast<std::int64_t>(i * 11 % 90);
  const StepTime t = [](const StepMix& m) { return ps_t{2'000'000'000} + 20'000'000 * m.tokens(); };  // 2 ms + 20 us a token
  const ServeRun run = simulate(req, lim, t);
  double sojourn = 0;
  for (const Served& s : run.requests) sojourn += static_cast<double>(s.finish - s.arrival);
  EXPECT_NEAR(run.in_system_area / sojourn, 1.0, 1e-12);
  const double T = static_cast<double>(run.end), lambda = static_cast<double>(req.size()) / T, W = sojourn / static_cast<double>(req.size());
  EXPECT_NEAR(run.in_system_area / T, lambda * W, 1e-9 * lambda * W);
  EXPECT_GT(run.preemptions, 0);  // 100 blocks of 16 tokens: requests were preempted and recomputed
}

// A closed loop of C clients without think time: throughput is C over the mean end-to-end
// latency (up to the run's ends, where fewer than C are in flight).
TEST(ServeSim, ClosedLoopThroughputIsConcurrencyOverLatency) {
  Limits lim;
  lim.max_num_seqs = 16, lim.max_batched_tokens = 1024;
  std::vector<Request> req(4000);
  for (std::size_t i = 0; i < req.size(); ++i) req[i].input = 64 + static_cast<std::int64_t>(i * 53 % 300), req[i].output = 5 + static_cast<std::int64_t>(i * 7 % 60);
  const StepTime t = [](const StepMix& m) { return ps_t{3'000'000'000} + 10'000'000 * m.tokens(); };
  for (std::int64_t C : {1, 4, 16}) {
    const ServeRun run = simulate(req, lim, t, C);
    double e2e = 0;
    for (const Served& s : run.requests) e2e += static_cast<double>(s.finish - s.arrival);
    e2e /= static_cast<double>(req.size());
    const double throughput = static_cast<double>(req.size()) / static_cast<double>(run.end);
    EXPECT_NEAR(throughput * e2e / static_cast<double>(C), 1.0, 0.01) << "clients " << C;
    for (const Step& s : run.steps) EXPECT_LE(s.running, C);
  }
}

// The scheduler's rules, step by step, on a recorded run.
TEST(ServeSim, StepsKeepTheBudgetTheSlotsAndChunkLongPrompts) {
  Limits lim;
  lim.max_num_seqs = 3, lim.max_batched_tokens = 100;
  std::vector<StepMix> seen;
  const StepTime t = [&](const StepMix& m) {
    seen.push_back(m);
    return ps_t{1'000'000};
  };
  // Two requests at 0: a prompt of 250 (three steps of chunks) and one of 10.
  const std::vector<Request> req{{0, 250, 3}, {0, 10, 2}};
  const ServeRun run = simulate(req, lim, t);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[0].prefill_tokens, (std::vector<std::int64_t>{100}));  // the first takes the whole budget
  EXPECT_EQ(seen[1].prefill_tokens, (std::vector<std::int64_t>{100}));
  EXPECT_EQ(seen[1].prefill_before, (std::vector<std::int64_t>{100}));
  EXPECT_EQ(seen[2].prefill_tokens, (std::vector<std::int64_t>{50, 10}));  // its last chunk, and the second prompt beside it
  EXPECT_EQ(seen[3].decode_contexts, (std::vector<std::int64_t>{251, 11}));  // each with its first token cached
  EXPECT_EQ(run.requests[0].first_token, 3'000'000);
  EXPECT_EQ(run.requests[1].first_token, 3'000'000);
  EXPECT_EQ(run.requests[1].finish, 4'000'000);
  EXPECT_EQ(run.requests[0].finish, 5'000'000);
  for (const StepMix& m : seen) EXPECT_LE(m.tokens(), lim.max_batched_tokens);
  // Without chunked prefill the long prompt runs whole, or never.
  lim.chunked_prefill = false;
  EXPECT_THROW(simulate(req, lim, t), InputError);
  lim.max_batched_tokens = 255;
  seen.clear();
  simulate(req, lim, t);
  EXPECT_EQ(seen[0].prefill_tokens, (std::vector<std::int64_t>{250}));
  EXPECT_EQ(seen[1].prefill_tokens, (std::vector<std::int64_t>{10}));  // 10 more would pass 255 with the 250: next step
  EXPECT_EQ(seen[1].decode_contexts, (std::vector<std::int64_t>{251}));
}

// When KV blocks run out the latest running request is preempted, frees its blocks, and is
// recomputed (its prompt and the tokens it had generated) when it runs again.
TEST(ServeSim, PreemptionRecomputesTheLatestRequest) {
  Limits lim;
  lim.max_num_seqs = 4, lim.max_batched_tokens = 64, lim.kv_block = 4, lim.kv_blocks = 6;  // 24 tokens of cache
  std::vector<StepMix> seen;
  const StepTime t = [&](const StepMix& m) {
    seen.push_back(m);
    return ps_t{1'000'000};
  };
  // Two prompts of 8 (2 blocks each) generating 8: together they outgrow the 6 blocks.
  const std::vector<Request> req{{0, 8, 8}, {0, 8, 8}};
  const ServeRun run = simulate(req, lim, t);
  EXPECT_GE(run.requests[1].preemptions, 1);
  EXPECT_EQ(run.requests[0].preemptions, 0);
  EXPECT_EQ(run.requests[0].finish, 8'000'000);  // never held back: a prefill step and 7 decode steps
  bool recomputed = false;
  for (const StepMix& m : seen)
    for (std::size_t k = 0; k < m.prefill_tokens.size(); ++k) recomputed |= m.prefill_tokens[k] > 8;  // prompt + generated
  EXPECT_TRUE(recomputed);
  for (const Step& s : run.steps) EXPECT_LE(s.kv_blocks, lim.kv_blocks);
  EXPECT_GT(run.requests[1].finish, run.requests[0].finish);
  lim.kv_blocks = 3;
  EXPECT_THROW(simulate(req, lim, t), InputError);  // 15 cached tokens need 4 blocks
  // The last token's KV is never stored: 16 tokens of prompt and one output fit one block of 16.
  Limits one;
  one.kv_block = 16, one.kv_blocks = 1;
  EXPECT_EQ(simulate({Request{0, 16, 1}}, one, t).requests[0].finish, 1'000'000);
  EXPECT_THROW(simulate({Request{0, 16, 2}}, one, t), InputError);
}

}  // namespace
}  // namespace kb::serve
