#include "serve_steps.h"

#include <algorithm>
#include <string>
#include <utility>

#include "../common/error.h"
#include "../families/llm/llm_program.h"

namespace kb::serve {

StepModel::StepModel(const LlmConfig& base, std::function<void(LlmConfig&)> route, bool best_case)
    : base_(base), route_(std::move(route)), best_case_(best_case), batched_([](const LlmConfig& c) { return llm_model(c); }) {
  if (base.pp != 1 || base.microbatches != 1)
    throw InputError("serve runs one pipeline stage and one micro-batch a step (--pp 1): pipelined serving is not modelled yet");
  if (base.attention_dp)
    throw InputError("serve runs attention tensor-parallel (--attention tp): data-parallel attention's split of a step's "
                     "requests over the ranks is not modelled yet");
  if (base.kv_lora > 0)
    throw InputError("serve: latent attention (a --kv-lora model) runs decode absorbed and prefill expanded, so a mixed "
                     "step's projections differ by request; not modelled yet");
  if (base.attn_chunk > 0)
    throw InputError("serve: chunked attention (--attn-chunk) with chunked prefill is not modelled yet");
}

namespace {

// Sequences, tokens and positions a part's config may hold.
void check_part(const char* what, std::int64_t v, std::int64_t hi) {
  if (v < 1 || v > hi)
    throw InputError(std::string("serve: a step's ") + what + " of " + std::to_string(v) + " is outside the llm family's 1.." +
                     std::to_string(hi));
}

}  // namespace

// A decode step of one token a sequence at context 1 (its attention the least there is), or
// above the family's batch, one prompt of every token: the kernels but attention are alike.
LlmConfig StepModel::linear_config(std::int64_t tokens) {
  if (tokens <= kLlmMaxBatch) return any_case(plain_decode(tokens, 1));
  check_part("tokens", tokens, kLlmMaxPrompt);
  LlmConfig c = base_;
  c.phase = static_cast<std::int64_t>(LlmPhase::prefill), c.batch = 1, c.prompt = tokens, c.prior = 0;
  c.layers_run = 1, c.microbatches = 1;
  if (route_) route_(c);
  return c;
}

LlmConfig StepModel::head_config(std::int64_t sequences) { return any_case(plain_decode(sequences, 1)); }

// The first attention case the config's kernels take (cube-replicated first: it splits no
// KV cache), or the config as it is for its check to name.
LlmConfig StepModel::any_case(LlmConfig c) const {
  for (const std::int64_t k : {2, 1, 3, 4}) {
    c.attention_case = k;
    if (llm_check(c) == kLlmOk) return c;
  }
  c.attention_case = base_.attention_case;
  return c;
}

LlmConfig StepModel::decode_config(std::int64_t batch, std::int64_t context) {
  LlmConfig c = plain_decode(batch, context);
  if (!best_case_) return c;
  const std::pair<std::int64_t, std::int64_t> key{batch, context};
  const auto hit = case_of_.find(key);
  if (hit != case_of_.end()) {
    c.attention_case = hit->second;
    return c;
  }
  std::int64_t best = 0;
  ps_t least = 0;
  for (std::int64_t k = 1; k <= 4; ++k) {
    c.attention_case = k;
    ++evaluations_;
    const LlmResult r = llm_model(c);
    if (r.status == kLlmOk && (best == 0 || r.attention_ps < least)) best = k, least = r.attention_ps;
  }
  c.attention_case = best > 0 ? best : base_.attention_case;  // none valid: the base's, for the check to name
  case_of_.emplace(key, c.attention_case);
  return c;
}

LlmConfig StepModel::plain_decode(std::int64_t batch, std::int64_t context) const {
  check_part("decoding requests", batch, kLlmMaxBatch);
  check_part("context", context, kLlmMaxContext);
  LlmConfig c = base_;
  c.phase = static_cast<std::int64_t>(LlmPhase::decode), c.batch = batch, c.context = context, c.prior = 0;
  c.layers_run = 1, c.microbatches = 1;
  if (route_) route_(c);
  return c;
}

LlmConfig StepModel::prefill_config(std::int64_t tokens, std::int64_t prior) const {
  check_part("prompt chunk", tokens, kLlmMaxPrompt);
  if (prior < 0 || prior + tokens > kLlmMaxContext)
    throw InputError("serve: a prompt of " + std::to_string(prior + tokens) + " tokens is above the llm family's " +
                     std::to_string(kLlmMaxContext) + " positions");
  LlmConfig c = base_;
  c.phase = static_cast<std::int64_t>(LlmPhase::prefill), c.batch = 1, c.prompt = tokens, c.prior = prior;
  c.layers_run = 1, c.microbatches = 1;
  if (route_) route_(c);
  return c;
}

LlmResult StepModel::run(const LlmEval& eval, const LlmConfig& c) {
  ++evaluations_;
  const LlmResult r = eval(c);
  if (r.status != kLlmOk) throw InputError("serve: " + llm_status_message(r.status, c));
  return r;
}

namespace {

// a - b, count by count (b's counts a part of a's).
Actions actions_less(const Actions& a, const Actions& b) {
  return Actions{a.macs - b.macs,
                 a.vector_ops - b.vector_ops,
                 a.sram_read_bytes - b.sram_read_bytes,
                 a.sram_write_bytes - b.sram_write_bytes,
                 a.hbm_read_bytes - b.hbm_read_bytes,
                 a.hbm_write_bytes - b.hbm_write_bytes,
                 a.link_bytes_pe - b.link_bytes_pe,
                 a.link_bytes_cube - b.link_bytes_cube,
                 a.link_bytes_sip - b.link_bytes_sip};
}

}  // namespace

ActionSplit llm_action_split(const LlmConfig& c) {
  // The attention kernels and the head's, each into an LlmTally of its own, as the model adds
  // them: the tally's finish counts them over the ranks, the layers and the micro-batches.
  struct Split {
    LlmTally attn{}, head{};
    std::int64_t tp = 1;
    void layer_kind(bool dense) { attn.layer_kind(dense); }
    void gemm(const GemmConfig& g, const LlmKernel& k, bool layer) {
      const GemmResult r = gemm_model(g);
      if (!layer) head.add(false, LlmTally::kGemm, r.latency_ps, GemmModel::actions(g, r), tp, 0, k);
    }
    void attention_of(bool layer, ps_t latency, const Actions& a, const LlmKernel& k) {
      if (layer) attn.add(true, LlmTally::kAttention, latency, a, tp, 0, k);
    }
    void attention(const DecodeConfig& d, const LlmKernel& k, bool layer) {
      const DecodeResult r = DecodeModel::evaluate(d);
      attention_of(layer, r.latency_ps, DecodeModel::actions(d, r), k);
    }
    void attention(const LlmAttnConfig& x, const LlmKernel& k, bool layer) {
      const LlmAttnResult r = llm_attn_model(x);
      attention_of(layer, r.latency_ps, llm_attn_actions(r), k);
    }
    void allreduce(const AllreduceConfig&, const LlmKernel&, bool) {}
    void vector(const LlmVecConfig& x, const LlmKernel& k, bool layer) {
      const LlmVecResult r = llm_vec_model(x);
      if (!layer) head.add(false, LlmTally::kVector, r.latency_ps, llm_vec_actions(r), tp, 0, k);
    }
    void transfer(const LlmSendConfig&) {}
  } split;
  split.tp = c.tp;
  llm_for_each_kernel(c, split);
  return ActionSplit{LlmModel::actions(c, split.attn.finish(c)), LlmModel::actions(c, split.head.finish(c))};
}

// Part `part` of config c: 0 every kernel but attention and the head, 1 the head, 2 attention.
StepModel::Fig StepModel::figure(const LlmEval& eval, const LlmConfig& c, int part) {
  const LlmResult r = run(eval, c);
  const ActionSplit a = llm_action_split(c);
  switch (part) {
    case 0:
      return Fig{r.model_latency_ps - r.attention_ps - r.head_ps,
                 actions_less(actions_less(LlmModel::actions(c, r), a.attention), a.head)};
    case 1: return Fig{r.head_ps, a.head};
    default: return Fig{r.attention_ps, a.attention};
  }
}

StepParts StepModel::parts_with(const StepMix& mix, const LlmEval& eval, Memo& memo) {
  auto once = [&](auto& map, const auto& key, auto&& compute) {
    const auto hit = map.find(key);
    if (hit != map.end()) return hit->second;
    const Fig v = compute();
    map.emplace(key, v);
    return v;
  };
  StepParts p;
  const std::int64_t M = mix.tokens(), S = static_cast<std::int64_t>(mix.decode_contexts.size() + mix.prefill_tokens.size());
  if (M < 1) throw InternalError("a serving step without tokens", __FILE__, __LINE__);
  const Fig lin = once(memo.linear, M, [&] { return figure(eval, linear_config(M), 0); });
  const Fig head = once(memo.head, S, [&] { return figure(eval, head_config(S), 1); });
  p.linear = lin.time, p.head = head.time;
  p.actions = actions_add(lin.actions, head.actions);
  // Decoding requests in the launches the plan of least time on the batched model gives.
  for (const auto& key : decode_launches(mix.decode_contexts)) {
    const Fig f = once(memo.decode, key, [&] { return figure(eval, decode_config(key.first, key.second), 2); });
    if (f.time < 0) run(eval, decode_config(key.first, key.second));  // not valid: its status, in one line
    p.decode_attention += f.time, p.actions = actions_add(p.actions, f.actions);
  }
  for (std::size_t i = 0; i < mix.prefill_tokens.size(); ++i) {
    const std::pair<std::int64_t, std::int64_t> key{mix.prefill_tokens[i], mix.prefill_before[i]};
    const Fig f = once(memo.prefill, key, [&] { return figure(eval, prefill_config(key.first, key.second), 2); });
    p.prefill_attention += f.time, p.actions = actions_add(p.actions, f.actions);
  }
  return p;
}

// -1 where the config is not valid (a launch padded to a longer context may not fit the HBM).
ps_t StepModel::decode_attention(std::int64_t batch, std::int64_t context) {
  const std::pair<std::int64_t, std::int64_t> key{batch, context};
  const auto hit = memo_.decode.find(key);
  if (hit != memo_.decode.end()) return hit->second.time;
  const LlmConfig c = decode_config(batch, context);
  ++evaluations_;
  const LlmResult r = llm_model(c);
  const Fig f = r.status == kLlmOk ? Fig{r.attention_ps, llm_action_split(c).attention} : Fig{-1, {}};
  memo_.decode.emplace(key, f);
  return f.time;
}

std::vector<std::pair<std::int64_t, std::int64_t>> StepModel::decode_launches(std::vector<std::int64_t> contexts) {
  using Launches = std::vector<std::pair<std::int64_t, std::int64_t>>;
  std::sort(contexts.begin(), contexts.end());
  const std::size_t n = contexts.size();
  Launches best;  // one launch a distinct context
  for (std::size_t i = 0, j = 0; i < n; i = j) {
    while (j < n && contexts[j] == contexts[i]) ++j;
    best.emplace_back(static_cast<std::int64_t>(j - i), contexts[i]);
  }
  if (best.size() <= 1) return best;
  auto time_of = [&](const Launches& l) {
    ps_t t = 0;
    for (const auto& [b, ctx] : l) {
      const ps_t one = decode_attention(b, ctx);
      if (one < 0) return ps_t{-1};
      t += one;
    }
    return t;
  };
  ps_t least = time_of(best);
  if (least < 0) return best;  // the part's own run names what does not fit
  // q launches of (nearly) equal counts, each padded to its longest context.
  for (const std::size_t q : {1, 2, 4, 8}) {
    if (q >= best.size()) break;
    Launches l;
    for (std::size_t k = 0; k < q; ++k) {
      const std::size_t lo = k * n / q, hi = (k + 1) * n / q;
      l.emplace_back(static_cast<std::int64_t>(hi - lo), contexts[hi - 1]);
    }
    const ps_t t = time_of(l);
    if (t >= 0 && t < least) least = t, best = std::move(l);  // a padded plan that does not fit is not a plan
  }
  return best;
}

StepParts StepModel::reference_parts(const StepMix& mix) {
  Memo fresh;
  return parts_with(mix, [](const LlmConfig& c) { return llm_reference(c); }, fresh);
}

std::int64_t StepModel::kv_token_capacity(std::int64_t max_step_tokens) {
  const LlmConfig step = linear_config(max_step_tokens);
  const LlmShape m = llm_shape_of(step);
  LlmRun r = llm_run_of(step);
  const LlmCubeBytes full = llm_fullest_cube(step.hw, m, r);
  // One position of one sequence: a token's KV bytes on that cube.
  r.phase = static_cast<std::int64_t>(LlmPhase::prefill), r.batch = 1, r.prompt = 1, r.prior = 0;
  const std::int64_t per_token = llm_fullest_cube(step.hw, m, r).kv;
  const std::int64_t left = step.hw.hbm_capacity_bytes() - full.weights - full.activations;
  if (left <= 0 || per_token <= 0) return 0;
  return left / per_token;
}

}  // namespace kb::serve
