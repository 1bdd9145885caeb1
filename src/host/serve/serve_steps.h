// The time of a serving step (docs/model.md section 13.16): the llm family's step, composed
// from configs both engines run. A step of a continuous batch mixes decoding requests, each at
// its own context, and chunks of prompts, each after the prompt's tokens before it. Its kernels
// run in turn with a barrier between them (ADR 0019), so its time is the sum of theirs:
//
//   every kernel but attention, over all M tokens of the step, and every layer;
//   the final norm and LM head over the step's S sequences (one row each);
//   decode attention, one launch a group of decoding requests at equal context;
//   prefill attention, one launch a chunk, after the chunk's cached positions (--prior).
//
// Each part is a figure of one llm config (LlmResult's model_latency_ps less its attention_ps
// and head_ps; head_ps; attention_ps), so the batched model and the reference engine time the
// same step by the same sum. Parts are memoised.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "../../device/models/llm/llm_model.h"
#include "serve_sim.h"

namespace kb::serve {

// The parts of a step's time, each over every layer, and the actions the step counts (every
// rank, every layer: docs/model.md section 14), composed as its time is.
struct StepParts {
  ps_t linear = 0, head = 0, decode_attention = 0, prefill_attention = 0;
  Actions actions{};
  ps_t total() const { return linear + head + decode_attention + prefill_attention; }
};

// A config's actions split: its attention kernels' and its head's (every rank, every layer),
// as the llm model's tally counts them; the rest is its other kernels'.
struct ActionSplit {
  Actions attention{}, head{};
};
ActionSplit llm_action_split(const LlmConfig& c);

// An llm config's figures: the batched model's (llm_model) or the reference engine's.
using LlmEval = std::function<LlmResult(const LlmConfig&)>;

class StepModel {
 public:
  // `base`: a checked llm config (model, hardware, mapping; one pipeline stage, one
  // micro-batch). `route`: fixes a MoE config's routed tokens for its tokens (the llm family's
  // prepare step); nothing to do for a dense model. InputError where serving cannot run it.
  // `best_case`: each decode group's attention case is the one of least time of those valid
  // for it (the base's attention_case was "best"); else the base's, for every group.
  StepModel(const LlmConfig& base, std::function<void(LlmConfig&)> route, bool best_case = false);

  // The step's time on the batched model (memoised by part).
  ps_t time(const StepMix& mix) { return parts(mix).total(); }
  StepParts parts(const StepMix& mix) { return parts_with(mix, batched_, memo_); }
  // The same step's parts, each config run on the reference engine (not memoised).
  StepParts reference_parts(const StepMix& mix);

  // The configs of each part, as both engines run them. The linear part's and the head's
  // attention (left out of their figures) runs the first attention case valid at context 1.
  LlmConfig linear_config(std::int64_t tokens);
  LlmConfig head_config(std::int64_t sequences);
  LlmConfig decode_config(std::int64_t batch, std::int64_t context);
  LlmConfig prefill_config(std::int64_t tokens, std::int64_t prior) const;

  // Tokens of KV cache the machine holds once the weights and the activations of a step of
  // `max_step_tokens` tokens are placed: the fullest cube's HBM left over, a token's bytes on
  // that cube apart. 0 where nothing is left.
  std::int64_t kv_token_capacity(std::int64_t max_step_tokens);

  // The launches of a step's decode attention, (requests, context) each: the decoding
  // requests sorted by context and cut into launches, each padded to its longest context, by
  // the plan of least time on the batched model among one launch a distinct context and 1, 2,
  // 4 or 8 launches of (nearly) equal counts.
  std::vector<std::pair<std::int64_t, std::int64_t>> decode_launches(std::vector<std::int64_t> contexts);

  std::int64_t evaluations() const { return evaluations_; }
  const LlmConfig& base() const { return base_; }

 private:
  struct Fig {
    ps_t time = 0;  // -1: a config that is not valid
    Actions actions{};
  };
  struct Memo {
    std::map<std::int64_t, Fig> linear, head;
    std::map<std::pair<std::int64_t, std::int64_t>, Fig> decode, prefill;
  };
  Fig figure(const LlmEval& eval, const LlmConfig& c, int part);
  StepParts parts_with(const StepMix& mix, const LlmEval& eval, Memo& memo);
  LlmResult run(const LlmEval& eval, const LlmConfig& c);

  ps_t decode_attention(std::int64_t batch, std::int64_t context);  // batched, memoised
  LlmConfig plain_decode(std::int64_t batch, std::int64_t context) const;
  LlmConfig any_case(LlmConfig c) const;

  LlmConfig base_;
  std::function<void(LlmConfig&)> route_;
  bool best_case_ = false;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> case_of_;  // (batch, context) -> attention case
  LlmEval batched_;
  Memo memo_;
  std::int64_t evaluations_ = 0;
};

}  // namespace kb::serve
