// The kernel memo (src/device/common/kernel_memo.h): a repeat returns what the first
// evaluation gave, configs that share a slot never get each other's result, and whole-model
// results do not depend on what the memo held: the same configs in any order on one thread
// equal each config evaluated alone on a fresh thread (an empty memo).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "device/common/kernel_memo.h"
#include "device/models/llm/llm_model.h"
#include "topologies.h"

namespace kb {
namespace {

struct Toy {
  std::int64_t a, b;
};
struct ToyResult {
  std::int64_t sum, calls;
};

TEST(KernelMemo, RepeatsAreRememberedAndSlotsNeverMixed) {
#if defined(KB_NO_KERNEL_MEMO)
  GTEST_SKIP() << "built with KB_NO_KERNEL_MEMO: every kernel is evaluated, nothing is remembered";
#endif
  std::int64_t calls = 0;
  auto eval = [&](const Toy& t) { return ToyResult{t.a + t.b, ++calls}; };
  // One slot: every new config replaces the last.
  EXPECT_EQ((memo_eval<Toy, ToyResult, 1>(Toy{1, 2}, eval).sum), 3);
  EXPECT_EQ((memo_eval<Toy, ToyResult, 1>(Toy{1, 2}, eval).calls), 1);  // remembered
  EXPECT_EQ((memo_eval<Toy, ToyResult, 1>(Toy{2, 1}, eval).sum), 3);    // another config, the same slot
  EXPECT_EQ(calls, 2);
  EXPECT_EQ((memo_eval<Toy, ToyResult, 1>(Toy{1, 2}, eval).calls), 3);  // evaluated again
  // Many slots: configs differing in one byte each get their own result.
  for (std::int64_t i = 0; i < 1000; ++i) EXPECT_EQ((memo_eval<Toy, ToyResult, 16>(Toy{i, 1 << 20}, eval).sum), i + (1 << 20));
}

// A kernel config starts with its machine, whose hash a thread keeps for the last machine it
// hashed (memo_detail::config_hash): the hash is still a function of the bytes alone, and
// configs that differ in their machine only never get each other's result.
struct OnMachine {
  HwConfig hw;
  std::int64_t m;
};
TEST(KernelMemo, AConfigsHashDependsOnItsBytesAloneAndMachinesNeverMix) {
  OnMachine a{unittest::topo("default.yaml").hw(), 7}, b = a;
  b.hw.sips += 1;
  const std::uint64_t ha = memo_detail::config_hash(a), hb = memo_detail::config_hash(b);
  EXPECT_NE(ha, hb);
  EXPECT_EQ(memo_detail::config_hash(a), ha);  // after b's machine
  std::thread([&] { EXPECT_EQ(memo_detail::config_hash(a), ha); }).join();  // on a fresh thread
  a.m = 8;
  EXPECT_NE(memo_detail::config_hash(a), ha);  // the rest of the config counts too
#if !defined(KB_NO_KERNEL_MEMO)
  auto eval = [](const OnMachine& x) { return ToyResult{x.hw.sips * 100 + x.m, 0}; };
  for (int round = 0; round < 3; ++round)
    for (std::int64_t sips = 1; sips <= 40; ++sips) {
      OnMachine c = b;
      c.hw.sips = sips;
      EXPECT_EQ((memo_eval<OnMachine, ToyResult, 8>(c, eval).sum), sips * 100 + 7);
    }
#endif
}

std::vector<LlmConfig> configs() {
  const HwConfig hw = unittest::topo("default.yaml").hw();
  std::vector<LlmConfig> out;
  for (std::int64_t batch : {1, 3, 8})
    for (std::int64_t context : {64, 300})
      for (std::int64_t algo = 0; algo < kCollAlgos; ++algo)
        for (std::int64_t kase = 1; kase <= 4; ++kase)
          for (std::int64_t tp : {2, 4}) {
            LlmConfig c{};
            c.hw = hw;
            c.hidden = 512, c.intermediate = 1376, c.heads = 8, c.kv_heads = 4, c.head_dim = 64, c.layers = 4;
            c.vocab = 2000, c.tied = 0, c.weight_bytes = 2, c.kv_bytes = 2;
            c.phase = static_cast<std::int64_t>(LlmPhase::decode), c.batch = batch, c.context = context, c.prompt = 1;
            c.tp = tp, c.tp_level = static_cast<std::int64_t>(CollLevel::cube), c.pp = 1, c.microbatches = 1;
            c.tp_algo = algo, c.attention_case = kase;
            if (llm_check(c) == kLlmOk) out.push_back(c);
          }
  return out;
}

TEST(KernelMemo, WholeModelResultsDoNotDependOnWhatTheMemoHeld) {
  const std::vector<LlmConfig> cs = configs();
  ASSERT_GT(cs.size(), 200u);
  std::vector<LlmResult> alone(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i) std::thread([&] { alone[i] = llm_model(cs[i]); }).join();
  std::vector<std::size_t> order(cs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(5);
  for (int pass = 0; pass < 3; ++pass) {  // in order, then shuffled twice: hits, misses and evictions
    for (std::size_t i : order) {
      const LlmResult r = llm_model(cs[i]);
      ASSERT_EQ(std::memcmp(&r, &alone[i], sizeof r), 0) << "config " << i << " pass " << pass;
    }
    std::shuffle(order.begin(), order.end(), rng);
  }
}

}  // namespace
}  // namespace kb
