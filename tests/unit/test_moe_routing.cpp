// The seeded mixture-of-experts router and the experts' placement over expert-parallel ranks
// (src/host/llm/moe_routing.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "host/common/error.h"
#include "device/models/llm/llm_moe.h"
#include "host/llm/moe_routing.h"

namespace kb {
namespace {

std::int64_t sum(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), INT64_C(0)); }

std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MoeRouting, BalancedSpreadsEveryChoiceWithinOne) {
  for (const auto& [E, K, B] : {std::tuple<int, int, int>{8, 2, 1}, {8, 2, 13}, {128, 8, 7}, {256, 8, 100}, {16, 1, 16}}) {
    const Routed r = route_tokens(parse_routing("balanced", 0), MoeRouter{E, K}, B);
    EXPECT_EQ(sum(r.tokens), static_cast<std::int64_t>(B) * K);
    const auto [lo, hi] = std::minmax_element(r.tokens.begin(), r.tokens.end());
    EXPECT_LE(*hi - *lo, 1);
    EXPECT_LE(*hi, B);  // K distinct experts a token
    EXPECT_EQ(r.touched, std::min<std::int64_t>(E, static_cast<std::int64_t>(B) * K));
  }
}

// Uniform routing touches E (1 - (1 - K/E)^B) experts on average, not K: over 400 seeds the
// mean is within four standard errors of the formula, for decode-sized batches.
TEST(MoeRouting, UniformTouchesTheExpectedDistinctExperts) {
  for (const auto& [E, K, B] : {std::tuple<int, int, int>{8, 2, 1}, {8, 2, 4}, {128, 8, 16}, {256, 8, 32}, {128, 8, 256}}) {
    double s = 0, s2 = 0;
    const int seeds = 400;
    for (int seed = 0; seed < seeds; ++seed) {
      const Routed r = route_tokens(parse_routing("uniform", static_cast<std::uint64_t>(seed)), MoeRouter{E, K}, B);
      ASSERT_EQ(sum(r.tokens), static_cast<std::int64_t>(B) * K);
      for (const std::int64_t c : r.tokens) ASSERT_LE(c, B) << "a token routed twice to one expert";
      s += static_cast<double>(r.touched), s2 += static_cast<double>(r.touched) * static_cast<double>(r.touched);
    }
    const double mean = s / seeds, sd = std::sqrt(std::max(0.0, s2 / seeds - mean * mean)), want = expected_touched_uniform(E, K, B);
    EXPECT_NEAR(mean, want, 4 * sd / std::sqrt(seeds) + 1e-3) << E << " experts, top " << K << ", " << B << " tokens";
    if (B > 1) {
      EXPECT_GT(want, K);
    }
  }
  EXPECT_DOUBLE_EQ(expected_touched_uniform(8, 2, 1), 2.0);
}

// Pearson's chi-square of counts against equal expectations.
double chi_square(const std::vector<std::int64_t>& c) {
  const double mean = static_cast<double>(sum(c)) / static_cast<double>(c.size());
  double x = 0;
  for (const std::int64_t v : c) x += (static_cast<double>(v) - mean) * (static_cast<double>(v) - mean) / mean;
  return x;
}

// Uniform routing favours no expert: the per-expert counts of 4,000 tokens pass a chi-square
// test at the 0.1 % level (15 degrees of freedom: 37.70), with and without a group limit (the
// groups kept, and the experts in them, uniform too); a router that favoured low indices fails.
TEST(MoeRouting, UniformFavoursNoExpert) {
  for (const MoeRouter& r : {MoeRouter{16, 4}, MoeRouter{16, 4, 4, 2}}) {
    for (std::uint64_t seed : {1, 2, 3}) {
      const Routed u = route_tokens(parse_routing("uniform", seed), r, 4000);
      EXPECT_LT(chi_square(u.tokens), 37.70) << r.groups << " groups, seed " << seed;
    }
  }
  const Routed z = route_tokens(parse_routing("zipf:0.2", 1), MoeRouter{16, 4}, 4000);
  EXPECT_GT(chi_square(z.tokens), 37.70);  // a mild skew is seen
}

TEST(MoeRouting, TheSameSeedAndLayerGiveTheSameCounts) {
  const MoeRouter r{128, 8};
  const RoutingSpec a = parse_routing("zipf:1.2", 7), b = parse_routing("zipf:1.2", 8);
  EXPECT_EQ(route_tokens(a, r, 64, 3).tokens, route_tokens(a, r, 64, 3).tokens);
  EXPECT_NE(route_tokens(a, r, 64, 3).tokens, route_tokens(b, r, 64, 3).tokens);
  EXPECT_NE(route_tokens(a, r, 64, 3).tokens, route_tokens(a, r, 64, 4).tokens);  // a layer's own draw
}

// Zipf's popularity: at 0 it is uniform (the same draws), larger exponents concentrate the
// tokens on fewer experts, and the hottest expert differs from layer to layer.
TEST(MoeRouting, ZipfConcentratesOnTheHotExperts) {
  const MoeRouter r{64, 4};
  EXPECT_EQ(route_tokens(parse_routing("zipf:0", 5), r, 200).tokens, route_tokens(parse_routing("uniform", 5), r, 200).tokens);
  std::int64_t prev = 0;
  for (const char* alpha : {"zipf:0", "zipf:1", "zipf:2", "zipf:4"}) {
    const Routed z = route_tokens(parse_routing(alpha, 5), r, 200);
    const std::int64_t top = *std::max_element(z.tokens.begin(), z.tokens.end());
    EXPECT_GE(top, prev) << alpha;
    EXPECT_LE(top, 200);
    prev = top;
  }
  EXPECT_EQ(prev, 200);  // at 4 the hottest expert is in nearly every token's choice: every one here
  std::set<std::int64_t> hottest;
  for (int layer = 0; layer < 8; ++layer) {
    const Routed z = route_tokens(parse_routing("zipf:3", 5), r, 100, layer);
    hottest.insert(std::max_element(z.tokens.begin(), z.tokens.end()) - z.tokens.begin());
  }
  EXPECT_GT(hottest.size(), 3u);
}

// Group-limited routing (DeepSeek-V3: 8 groups, 4 kept): a single token's experts lie in at
// most topk_groups groups.
TEST(MoeRouting, GroupLimitedTokensStayInTheirGroups) {
  const MoeRouter r{256, 8, 8, 4};
  for (int seed = 0; seed < 50; ++seed) {
    const Routed one = route_tokens(parse_routing("uniform", static_cast<std::uint64_t>(seed)), r, 1);
    int groups = 0;
    for (int g = 0; g < 8; ++g)
      groups += std::accumulate(one.tokens.begin() + g * 32, one.tokens.begin() + (g + 1) * 32, INT64_C(0)) > 0;
    EXPECT_LE(groups, 4);
    EXPECT_EQ(one.touched, 8);
  }
  EXPECT_NE(input_error([&] { route_tokens(parse_routing("uniform", 0), MoeRouter{256, 8, 8, 0}, 4); }), "(no error)");
  EXPECT_NE(input_error([&] { route_tokens(parse_routing("uniform", 0), MoeRouter{16, 8, 8, 1}, 4); }), "(no error)");
}

TEST(MoeRouting, AHistogramFileWeighsTheExperts) {
  const std::string path = ::testing::TempDir() + "kb_moe_loads.csv";
  {
    std::ofstream f(path);
    f << "# expert,load\n0,0\n1,10\n2,0\n3,1000\n";
  }
  const RoutingSpec h = parse_routing(path, 3);
  EXPECT_EQ(h.loads, (std::vector<std::int64_t>{0, 10, 0, 1000}));
  const Routed r = route_tokens(h, MoeRouter{4, 1}, 500);
  EXPECT_EQ(r.tokens[0] + r.tokens[2], 0);  // a load of 0 is never drawn while others are left
  EXPECT_GT(r.tokens[3], 450);
  EXPECT_EQ(input_error([&] { route_tokens(h, MoeRouter{8, 1}, 5); }),
            path + ":1:1: load: the histogram has 4 experts, the model routes to 8");
  {
    std::ofstream f(path);
    f << "5\n7\nx\n";
  }
  EXPECT_EQ(input_error([&] { parse_routing(path, 0); }), path + ":3:1: load: expected an integer from 0 to 2^40, got 'x'");
  {
    std::ofstream f(path);
    f << "0,5\n2,7\n";
  }
  EXPECT_EQ(input_error([&] { parse_routing(path, 0); }), path + ":2:1: expert: expected 1 (experts in order from 0), got '2'");
  std::remove(path.c_str());
  {
    std::ofstream f(path);
    f << " 0 , 5\n1,  y\n";
  }
  EXPECT_EQ(input_error([&] { parse_routing(path, 0); }), path + ":2:5: load: expected an integer from 0 to 2^40, got 'y'");
  EXPECT_EQ(input_error([&] { route_tokens(parse_routing("uniform", 0), MoeRouter{8, 9}, 4); }),
            "num_experts_per_tok: 9 is outside 1..8 (the routed experts)");
  EXPECT_EQ(input_error([&] { parse_routing("zipf:x", 0); }), "--routing: 'zipf:x': zipf's ALPHA is a number from 0 to 16");
  EXPECT_EQ(input_error([&] { parse_routing("nosuch", 0); }),
            "--routing: 'nosuch': not balanced, uniform or zipf:ALPHA, and no such file");
}

TEST(MoePlacement, RoundRobinAndRedundantCopiesOfTheHottest) {
  const std::vector<std::int64_t> t = {100, 10, 10, 10, 10, 10, 10, 10};
  const ExpertPlacement rr = place_experts(t, 4, 0);
  EXPECT_EQ(rr.rank[0], (std::vector<std::int32_t>{0, 4}));
  EXPECT_EQ(rr.rank_tokens, (std::vector<std::int64_t>{110, 20, 20, 20}));
  EXPECT_DOUBLE_EQ(rr.load_imbalance, 110.0 * 4 / 170);
  // Four extra copies: three to expert 0 (100 / r stays the largest share), which then has a
  // copy on every rank, and one to expert 1 (10 against 10, the lower index).
  const ExpertPlacement lb = place_experts(t, 4, 4);
  EXPECT_EQ(lb.replicas[0], 4);
  EXPECT_EQ(lb.replicas[1], 2);
  EXPECT_EQ(sum(lb.rank_tokens), 170);
  for (const auto& held : lb.rank) {
    EXPECT_EQ(held.size(), 3u);
    EXPECT_EQ(std::count(held.begin(), held.end(), 0), 1);
  }
  EXPECT_LT(lb.load_imbalance, rr.load_imbalance);
  EXPECT_LE(lb.max_rank_tokens, 45 + 10);
  EXPECT_NE(input_error([&] { place_experts(t, 3, 2); }), "(no error)");  // 10 copies over 3 ranks
  EXPECT_NE(input_error([&] { place_experts(t, 9, 0); }), "(no error)");
  EXPECT_EQ(input_error([&] { place_experts(t, 1, 8); }),
            "--redundant-experts: 8 redundant copies of 8 experts over 1 ranks: at most 0 (a copy of an expert a rank)");
  // Every copy placed, every rank full, an expert's copies on distinct ranks where the order allows.
  const std::vector<std::int64_t> skew = {19, 2, 4, 37, 18, 94, 3, 2, 29, 48, 33};
  const ExpertPlacement p = place_experts(skew, 2, 9);
  std::int64_t copies = 0;
  for (const auto& held : p.rank) {
    EXPECT_EQ(held.size(), 10u);
    copies += static_cast<std::int64_t>(held.size());
  }
  EXPECT_EQ(copies, 20);
  EXPECT_EQ(sum(p.rank_tokens), sum(skew));
}

// On a Zipf-routed batch, redundant copies bring the most tokens a rank handles down.
TEST(MoePlacement, RedundantCopiesLowerTheImbalanceOfSkewedRouting) {
  const Routed z = route_tokens(parse_routing("zipf:1.5", 11), MoeRouter{256, 8}, 256);
  const ExpertPlacement a = place_experts(z.tokens, 32, 0), b = place_experts(z.tokens, 32, 32);
  EXPECT_EQ(sum(a.rank_tokens), 256 * 8);
  EXPECT_EQ(sum(b.rank_tokens), 256 * 8);
  EXPECT_GT(a.load_imbalance, 1.5);
  EXPECT_LT(b.load_imbalance, a.load_imbalance);
}

// docs/model.md section 13.11's worked example, by hand: 4 experts given 3, 2, 1 and 0 of 3
// tokens' 6 (token, expert) pairs, over 2 ranks. Round-robin: rank 0 holds experts 0 and 2
// (4 pairs), rank 1 experts 1 and 3 (2 pairs): the busiest handles 4 over 2 experts, 4 x 2 /
// 6 = 1.33 of the mean. Two redundant copies go to expert 0 (3 a copy), then expert 1 (2 a
// copy against expert 0's 1.5); the six copies (shares 2, 1; 1, 1; 1; 0) placed most tokens
// first leave 3 pairs on each rank: rank 0 (the first of the tie) with experts 0, 1 and 3,
// two of them with tokens.
TEST(MoePlacement, TheWorkedExampleByHand) {
  const std::int32_t tokens[] = {3, 2, 1, 0};
  const MoeLoad rr = moe_load(tokens, 4, 2, 0);
  EXPECT_EQ(rr.status, kMoePlaceOk);
  EXPECT_EQ(rr.rank_tokens, 4);
  EXPECT_EQ(rr.rank_copies, 2);
  EXPECT_EQ(rr.slots, 2);
  EXPECT_EQ(rr.pairs, 6);
  EXPECT_EQ(rr.touched, 3);
  const MoeLoad lb = moe_load(tokens, 4, 2, 2);
  EXPECT_EQ(lb.rank_tokens, 3);
  EXPECT_EQ(lb.rank_copies, 2);
  EXPECT_EQ(lb.slots, 3);
  const ExpertPlacement p = place_experts({3, 2, 1, 0}, 2, 2);
  EXPECT_EQ(p.replicas, (std::vector<std::int64_t>{2, 2, 1, 1}));
  EXPECT_EQ(p.rank[0], (std::vector<std::int32_t>{0, 1, 3}));
  EXPECT_EQ(p.rank[1], (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(p.rank_tokens, (std::vector<std::int64_t>{3, 3}));
  // What the placement refuses, the load says so (and holds no figures).
  EXPECT_EQ(moe_load(tokens, 4, 5, 0).status, kMoePlaceBadRanks);
  EXPECT_EQ(moe_load(tokens, 4, 2, 1).status, kMoePlaceUneven);
  EXPECT_EQ(moe_load(tokens, 4, 2, 5).status, kMoePlaceTooMany);
}

// The placement's copies go in order of most tokens (the first copy on a tie). moe_place
// sorts them once; this is the selection it replaced (the unplaced copy of most tokens,
// found by a scan each time), on random loads, ranks and redundant copies: every copy on the
// same rank.
TEST(MoePlacement, SortedOrderIsTheGreedyScans) {
  std::mt19937_64 rng(7);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  int checked = 0;
  for (int round = 0; round < 1200; ++round) {
    const std::int64_t E = pick(1, 300), ranks = pick(1, std::min<std::int64_t>(E, 64));
    std::int64_t R = pick(0, 3) == 0 ? 0 : pick(1, std::min<std::int64_t>(kMoeMaxRedundant, E * (ranks - 1)));
    if (R > 0) R -= (E + R) % ranks;  // an even split
    if (R < 0 || moe_place_check(E, ranks, R) != kMoePlaceOk) continue;
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(E));
    const std::int64_t hi = pick(0, 1) ? 3 : 1000;  // few values (many ties) or many
    for (auto& t : tokens) t = static_cast<std::int32_t>(pick(0, hi));
    std::vector<std::int64_t> share(kMoeMaxCopies), rt(static_cast<std::size_t>(ranks));
    std::vector<std::int32_t> expert(kMoeMaxCopies), rank(kMoeMaxCopies), replicas(kMoeMaxExperts), held(static_cast<std::size_t>(ranks));
    std::vector<std::int16_t> order(kMoeMaxCopies);
    const MoePlaceBuf b{share.data(), expert.data(), rank.data(), replicas.data(), rt.data(), held.data(), order.data()};
    const std::int64_t n = moe_place(tokens.data(), E, ranks, R, b);
    // The scan, from the same copies and shares (replicas as moe_place chose them).
    std::vector<std::int64_t> want(static_cast<std::size_t>(n), -1), load(static_cast<std::size_t>(ranks), 0);
    std::vector<std::int64_t> count(static_cast<std::size_t>(ranks), 0);
    const std::int64_t slots = R > 0 ? (E + R) / ranks : 0;
    for (std::int64_t placed = 0; R > 0 && placed < n; ++placed) {
      std::int64_t c = -1;
      for (std::int64_t i = 0; i < n; ++i)
        if (want[static_cast<std::size_t>(i)] < 0 && (c < 0 || share[static_cast<std::size_t>(i)] > share[static_cast<std::size_t>(c)])) c = i;
      std::int64_t to = -1;
      for (int pass = 0; pass < 2 && to < 0; ++pass)
        for (std::int64_t k = 0; k < ranks; ++k) {
          if (count[static_cast<std::size_t>(k)] >= slots) continue;
          bool has = false;
          for (std::int64_t i = 0; i < n && pass == 0; ++i)
            has = has || (expert[static_cast<std::size_t>(i)] == expert[static_cast<std::size_t>(c)] && want[static_cast<std::size_t>(i)] == k);
          if (has) continue;
          if (to < 0 || load[static_cast<std::size_t>(k)] < load[static_cast<std::size_t>(to)]) to = k;
        }
      want[static_cast<std::size_t>(c)] = to;
      load[static_cast<std::size_t>(to)] += share[static_cast<std::size_t>(c)], ++count[static_cast<std::size_t>(to)];
    }
    if (R == 0) continue;
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_EQ(rank[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)]) << "copy " << i << " E " << E << " ranks " << ranks << " R " << R;
    ++checked;
  }
  EXPECT_GT(checked, 400);
}

}  // namespace
}  // namespace kb
