// Disaggregated serving (docs/model.md section 13.16): a request's prompt and first token on
// a prefill instance, its KV sent, the rest on a decode instance; by hand, and as invariants
// of a loaded run.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "host/common/error.h"
#include "host/serve/serve_disagg.h"
#include "host/serve/serve_workload.h"

namespace kb::serve {
namespace {

constexpr ps_t kMs = INT64_C(1000000000);

// A step of prefill tokens takes 10 ms; a step of decoding only 1 ms.
ps_t two_speeds(const StepMix& m) { return m.prefill_tokens.empty() ? kMs : 10 * kMs; }

TEST(ServeDisagg, OneRequestByHand) {
  const std::vector<Request> one{Request{5 * kMs, 100, 5}};
  const DisaggRun d = simulate_disagg(one, Limits{}, two_speeds, [](std::int64_t p) { return p * kMs / 100 * 3; }, 1, 1);
  const Served& s = d.run.requests[0];
  EXPECT_EQ(s.scheduled, 5 * kMs);
  EXPECT_EQ(s.first_token, 15 * kMs);  // the prompt's step on the prefill instance
  EXPECT_EQ(d.transfer[0], 3 * kMs);   // its KV to the decode instance
  EXPECT_EQ(s.finish, 22 * kMs);       // arrives at 18 ms, four decode steps of 1 ms
  std::vector<ps_t> itl = d.run.itl;
  std::sort(itl.begin(), itl.end());
  EXPECT_EQ(itl, (std::vector<ps_t>{kMs, kMs, kMs, 4 * kMs}));  // the first gap: the transfer and its first step
  ASSERT_EQ(d.run.steps.size(), 5u);
  EXPECT_EQ(d.run.steps[0].instance, 0);
  EXPECT_EQ(d.run.steps[1].instance, 1);
  // One output token: no decode instance, no transfer.
  const DisaggRun solo = simulate_disagg({Request{0, 100, 1}}, Limits{}, two_speeds, [](std::int64_t) { return kMs; }, 2, 3);
  EXPECT_EQ(solo.run.requests[0].finish, 10 * kMs);
  EXPECT_EQ(solo.transfer[0], 0);
}

TEST(ServeDisagg, ALoadedRunKeepsEveryRequestsTokens) {
  Arrivals a;
  a.rate = 200;
  Lengths isl, osl;
  isl.kind = osl.kind = Lengths::Kind::uniform;
  isl.a = 10, isl.b = 600, osl.a = 1, osl.b = 40;
  const std::vector<Request> rs = make_requests(a, isl, osl, {}, 2000, 3);
  Limits lim;
  lim.max_num_seqs = 16, lim.max_batched_tokens = 512, lim.kv_blocks = 60;
  const DisaggRun d = simulate_disagg(rs, lim, two_speeds, [](std::int64_t p) { return p * 1000; }, 3, 2);
  std::int64_t gaps = 0;
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const Served& s = d.run.requests[i];
    ASSERT_GE(s.first_token, s.arrival + 10 * kMs) << i;
    ASSERT_GE(s.finish, s.first_token + d.transfer[i] + (rs[i].output - 1) * kMs) << i;
    gaps += rs[i].output - 1;
  }
  EXPECT_EQ(static_cast<std::int64_t>(d.run.itl.size()), gaps);
  std::set<std::int32_t> seen;
  for (const Step& s : d.run.steps) seen.insert(s.instance);
  EXPECT_EQ(seen, (std::set<std::int32_t>{0, 1, 2, 3, 4}));
  EXPECT_GT(d.run.preemptions, 0);  // the decode instances' caches fill up
  EXPECT_THROW(simulate_disagg(rs, lim, two_speeds, [](std::int64_t) { return 0; }, 0, 1), InputError);
}

}  // namespace
}  // namespace kb::serve
