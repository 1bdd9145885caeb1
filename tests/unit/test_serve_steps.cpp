// A serving step's time (docs/model.md section 13.16): composed from llm configs, it is the
// llm family's own step wherever the family has one (every request decoding at one context;
// one prompt whole, or one chunk after cached positions), and the reference engine times a
// mixed step's parts to the picosecond as the batched model does.
#include <gtest/gtest.h>

#include <cstring>

#include "host/common/error.h"
#include "host/serve/serve_steps.h"
#include "tiny_llm.h"

namespace kb {
namespace {

using serve::StepMix;
using serve::StepModel;

LlmConfig tiny_base(std::int64_t tp) {
  LlmConfig c = unittest::tiny_llm(LlmPhase::decode, 1, 64, 1);
  c.tp = tp;
  return c;
}

TEST(ServeSteps, DecodingAtOneContextIsTheFamilysDecodeStep) {
  for (const std::int64_t tp : {1, 2}) {
    StepModel m(tiny_base(tp), nullptr);
    for (const std::int64_t batch : {1, 3, 16})
      for (const std::int64_t context : {1, 17, 300}) {
        StepMix mix;
        mix.decode_contexts.assign(static_cast<std::size_t>(batch), context);
        LlmConfig c = tiny_base(tp);
        c.batch = batch, c.context = context;
        const LlmResult r = llm_model(c);
        ASSERT_EQ(r.status, kLlmOk);
        EXPECT_EQ(m.time(mix), r.model_latency_ps) << "tp " << tp << " batch " << batch << " context " << context;
        // Its counted actions too (energy's): the parts' add up to the family's step's.
        const Actions want = LlmModel::actions(c, r), got = m.parts(mix).actions;
        EXPECT_EQ(std::memcmp(&want, &got, sizeof want), 0) << "tp " << tp << " batch " << batch << " context " << context
                                                            << " macs " << got.macs << " of " << want.macs;
      }
  }
}

TEST(ServeSteps, APromptWholeOrAfterCachedPositionsIsTheFamilysPrefill) {
  StepModel m(tiny_base(2), nullptr);
  for (const std::int64_t prompt : {1, 40, 513})
    for (const std::int64_t prior : {0, 1, 77}) {
      StepMix mix;
      mix.prefill_tokens = {prompt}, mix.prefill_before = {prior};
      LlmConfig c = tiny_base(2);
      c.phase = static_cast<std::int64_t>(LlmPhase::prefill), c.prompt = prompt, c.prior = prior;
      const LlmResult r = llm_model(c);
      ASSERT_EQ(r.status, kLlmOk);
      EXPECT_EQ(m.time(mix), r.model_latency_ps) << "prompt " << prompt << " prior " << prior;
      const Actions want = LlmModel::actions(c, r), got = m.parts(mix).actions;
      EXPECT_EQ(std::memcmp(&want, &got, sizeof want), 0) << "prompt " << prompt << " prior " << prior;
    }
}

TEST(ServeSteps, AMixedStepsPartsAreTheSameOnBothEngines) {
  StepModel m(tiny_base(2), nullptr);
  StepMix mix;
  mix.decode_contexts = {90, 12, 90, 5, 12, 90};
  mix.prefill_tokens = {33, 7}, mix.prefill_before = {0, 64};
  const serve::StepParts b = m.parts(mix), r = m.reference_parts(mix);
  EXPECT_EQ(b.linear, r.linear);
  EXPECT_EQ(b.head, r.head);
  EXPECT_EQ(b.decode_attention, r.decode_attention);
  EXPECT_EQ(b.prefill_attention, r.prefill_attention);
  EXPECT_GT(b.decode_attention, 0);
  EXPECT_GT(b.prefill_attention, 0);
  // The decode launches: every request in one, each padded to its launch's longest context,
  // and no slower than one launch a distinct context.
  const auto launches = m.decode_launches(mix.decode_contexts);
  ps_t sum = 0;
  std::int64_t requests = 0;
  for (const auto& [batch, context] : launches) sum += llm_model(m.decode_config(batch, context)).attention_ps, requests += batch;
  EXPECT_EQ(b.decode_attention, sum);
  EXPECT_EQ(requests, 6);
  ps_t distinct = 0;
  for (const auto& [batch, context] : {std::pair<std::int64_t, std::int64_t>{3, 90}, {2, 12}, {1, 5}})
    distinct += llm_model(m.decode_config(batch, context)).attention_ps;
  EXPECT_LE(b.decode_attention, distinct);
  // One launch padded to the longest context is one of the plans.
  EXPECT_LE(b.decode_attention, llm_model(m.decode_config(6, 90)).attention_ps);
  // The step's tokens through every other kernel, and one LM-head row a request.
  EXPECT_EQ(b.head, llm_model(m.head_config(8)).head_ps);
  const LlmResult lin = llm_model(m.linear_config(46));
  EXPECT_EQ(b.linear, lin.model_latency_ps - lin.attention_ps - lin.head_ps);
}

TEST(ServeSteps, TheCacheHoldsWhatTheFullestCubeLeaves) {
  StepModel m(tiny_base(1), nullptr);
  const std::int64_t tokens = m.kv_token_capacity(256);
  ASSERT_GT(tokens, 0);
  // A decode step of one sequence holding that many positions fits the cube's HBM with a
  // step's activations; the tiny model's KV of 2 layers x 2 KV heads x 16 x 2 values x 2 bytes.
  EXPECT_EQ(llm_kv_bytes_per_token(llm_shape_of(m.base()), 2), 256);
  const LlmConfig step = m.linear_config(256);
  const LlmCubeBytes full = llm_fullest_cube(step.hw, llm_shape_of(step), llm_run_of(step));
  EXPECT_LE(full.weights + full.activations + tokens * 256, step.hw.hbm_capacity_bytes());
  EXPECT_GT(full.weights + full.activations + (tokens + 1) * 256, step.hw.hbm_capacity_bytes());
}

TEST(ServeSteps, ServingRefusesWhatItDoesNotModel) {
  LlmConfig c = tiny_base(1);
  c.pp = 2;
  EXPECT_THROW(StepModel(c, nullptr), InputError);
  c = tiny_base(1);
  c.kv_lora = 8, c.rope_dim = 4;
  EXPECT_THROW(StepModel(c, nullptr), InputError);
  StepModel m(tiny_base(1), nullptr);
  StepMix big;
  big.decode_contexts = {kLlmMaxContext + 1};
  EXPECT_THROW(m.time(big), InputError);
}

}  // namespace
}  // namespace kb
