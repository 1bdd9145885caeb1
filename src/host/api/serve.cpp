#include "serve.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>
#include <cstdio>
#include <ostream>

#include "host/common/error.h"
#include "host/common/output.h"
#include "host/families/llm/llm_program.h"
#include "host/runtime/numeric.h"
#include "host/serve/serve_disagg.h"
#include "host/serve/serve_steps.h"
#include "host/serve/serve_workload.h"
#include "host/study/document.h"
#include "host/topology/fields.h"

namespace kb::api {

namespace serve_detail {

using serve::StepMix;
using serve::StepParts;

// The step's own axes: the scheduler sets them, step by step.
void refuse_step_axes(const EvalRequest& r) {
  for (const auto& [name, text] : r.axes)
    if (serve_step_axis(name)) {
      const AxisDesc* ax = r.family->axis(name);
      throw InputError((ax ? ax->flag : name) + ": serve sets each step's requests, tokens and contexts itself; leave it out");
    }
}

// --disagg P:D: prefill and decode instances, each at least 1 (0, 0: aggregated).
std::pair<std::int64_t, std::int64_t> parse_disagg(const std::string& text) {
  if (text.empty()) return {0, 0};
  const auto colon = text.find(':');
  std::int64_t p = 0, d = 0;
  std::string why;
  if (colon == std::string::npos || !parse_int_in(text.substr(0, colon), 1, 1024, &p, &why) ||
      !parse_int_in(text.substr(colon + 1), 1, 1024, &d, &why))
    throw InputError("--disagg " + text + ": expected P:D, prefill and decode instances, each 1 to 1024");
  return {p, d};
}

// A prompt's KV cache from a prefill instance to a decode instance: each rank's share, from
// one SIP group to the next (the pipeline's stage transfer, llm_pipeline.h), memoised.
class KvTransfer {
 public:
  explicit KvTransfer(const LlmConfig& base) : base_(base) {}
  LlmSendConfig config(std::int64_t prompt) const {
    LlmConfig c = base_;
    c.phase = static_cast<std::int64_t>(LlmPhase::prefill), c.batch = 1, c.prompt = prompt, c.prior = 0;
    const LlmRun r = llm_run_of(c);
    LlmSendConfig x{};
    x.hw = base_.hw;
    x.stage_sips = llm_ranks(base_.hw, r).sips_per_stage, x.level = base_.tp_level, x.ranks = base_.tp;
    x.bytes = llm_rank_bytes(llm_shape_of(c), r, 0).kv;
    return x;
  }
  ps_t time(std::int64_t prompt) {
    const auto hit = memo_.find(prompt);
    if (hit != memo_.end()) return hit->second;
    const LlmSendResult r = llm_send_model(config(prompt));
    if (r.status != 0) throw InputError("--disagg: a prompt of " + std::to_string(prompt) + " tokens' KV cache cannot be sent");
    memo_.emplace(prompt, r.latency_ps);
    return r.latency_ps;
  }

 private:
  LlmConfig base_;
  std::map<std::int64_t, ps_t> memo_;
};

// A seeded reservoir of step mixes: `want` of all the steps, each equally likely.
struct Reservoir {
  std::size_t want;
  SplitMix64 rng;
  std::vector<StepMix> kept;
  std::uint64_t seen = 0;
  void offer(const StepMix& m) {
    ++seen;
    if (kept.size() < want) {
      kept.push_back(m);
      return;
    }
    const std::uint64_t j = rng.below(seen);
    if (j < want) kept[j] = m;
  }
};

nlohmann::json stats_json(const serve::Stats& s, double scale) {
  return {{"mean", s.mean * scale}, {"p50", s.p50 * scale}, {"p90", s.p90 * scale}, {"p99", s.p99 * scale}, {"count", s.count}};
}

nlohmann::json parts_json(const StepParts& p) {
  return {{"linear_ps", p.linear}, {"head_ps", p.head}, {"decode_attention_ps", p.decode_attention},
          {"prefill_attention_ps", p.prefill_attention}, {"total_ps", p.total()}};
}

// Whether every part config of the step is small enough for the reference engine.
bool reference_fits(serve::StepModel& m, const StepMix& mix) {
  std::vector<LlmConfig> cs{m.linear_config(mix.tokens()),
                            m.head_config(static_cast<std::int64_t>(mix.decode_contexts.size() + mix.prefill_tokens.size()))};
  for (const auto& [batch, context] : m.decode_launches(mix.decode_contexts)) cs.push_back(m.decode_config(batch, context));
  for (std::size_t i = 0; i < mix.prefill_tokens.size(); ++i) cs.push_back(m.prefill_config(mix.prefill_tokens[i], mix.prefill_before[i]));
  for (const LlmConfig& c : cs)
    if (llm_reference_ops(c) > kDefaultMaxOps) return false;
  return true;
}

// The re-check: each kept step's parts on the reference engine against the batched model's.
nlohmann::json recheck(serve::StepModel& model, const Reservoir& kept) {
  nlohmann::json steps = nlohmann::json::array();
  std::int64_t agreed = 0, skipped = 0;
  for (const StepMix& mix : kept.kept) {
    nlohmann::json one{{"tokens", mix.tokens()},
                       {"decoding", mix.decode_contexts.size()},
                       {"prefill_chunks", mix.prefill_tokens.size()}};
    if (!reference_fits(model, mix)) {
      ++skipped;
      one["skipped"] = "a part's reference run builds more than 2^24 ops";
      steps.push_back(one);
      continue;
    }
    const StepParts b = model.parts(mix), r = model.reference_parts(mix);
    one["batched"] = parts_json(b), one["reference"] = parts_json(r);
    const bool same = b.linear == r.linear && b.head == r.head && b.decode_attention == r.decode_attention &&
                      b.prefill_attention == r.prefill_attention && std::memcmp(&b.actions, &r.actions, sizeof b.actions) == 0;
    one["identical"] = same;
    agreed += same;
    steps.push_back(one);
    if (!same)
      throw InternalError("serve: a step's time differs between the engines: batched " + parts_json(b).dump() + ", reference " +
                              parts_json(r).dump(),
                          __FILE__, __LINE__);
  }
  return {{"steps", kept.kept.size()}, {"identical", agreed}, {"skipped", skipped}, {"checked", steps}};
}

double ms_of(ps_t t) { return static_cast<double>(t) / 1e9; }
double s_of(ps_t t) { return static_cast<double>(t) / 1e12; }

void write_requests_csv(std::ostream& o, const serve::ServeRun& run, double slo_ttft_s, double slo_tpot_s) {
  o << "request,arrival_s,input_tokens,output_tokens,scheduled_s,first_token_s,finish_s,ttft_ms,tpot_ms,e2e_s,preemptions,met_slo\n";
  char line[512];
  for (std::size_t i = 0; i < run.requests.size(); ++i) {
    const serve::Served& s = run.requests[i];
    const double ttft = s_of(s.first_token - s.arrival);
    const double tpot = s.output > 1 ? s_of(s.finish - s.first_token) / static_cast<double>(s.output - 1) : 0.0;
    std::snprintf(line, sizeof line, "%zu,%.9f,%lld,%lld,%.9f,%.9f,%.9f,%.6f,%.6f,%.9f,%lld,%d\n", i, s_of(s.arrival),
                  static_cast<long long>(s.input), static_cast<long long>(s.output), s_of(s.scheduled), s_of(s.first_token),
                  s_of(s.finish), ttft * 1e3, tpot * 1e3, s_of(s.finish - s.arrival), static_cast<long long>(s.preemptions),
                  ttft <= slo_ttft_s && tpot <= slo_tpot_s ? 1 : 0);
    o << line;
  }
}

void write_steps_csv(std::ostream& o, const serve::ServeRun& run, std::int64_t kv_blocks) {
  o << "step,instance,start_s,time_ms,running,waiting,tokens,prefill_tokens,kv_blocks,kv_use\n";
  char line[256];
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    const serve::Step& s = run.steps[i];
    std::snprintf(line, sizeof line, "%zu,%d,%.9f,%.6f,%d,%d,%lld,%lld,%lld,%.6f\n", i, s.instance, s_of(s.start), ms_of(s.time), s.running,
                  s.waiting, static_cast<long long>(s.tokens), static_cast<long long>(s.prefill_tokens),
                  static_cast<long long>(s.kv_blocks), static_cast<double>(s.kv_blocks) / static_cast<double>(kv_blocks));
    o << line;
  }
}

}  // namespace serve_detail

bool serve_step_axis(const std::string& name) {
  for (const char* s : {"phase", "batch", "context", "prompt", "prior", "microbatches", "layers_run"})
    if (name == s) return true;
  return false;
}

namespace serve_detail {

// Everything the serving flags say, checked before any work.
struct Inputs {
  serve::Arrivals arrivals;
  serve::Lengths isl, osl;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;
  std::int64_t n = 0, seed = 0, rechecks = 0, prefill = 0, decode = 0;
  serve::Limits lim;
  double slo_ttft = 0, slo_tpot = 0;  // seconds
  bool disagg() const { return prefill > 0; }
};

Inputs parse_inputs(const ServeRequest& q) {
  Inputs in;
  if (q.arrivals.empty()) throw InputError("--arrivals is required: poisson:RATE, gamma:RATE:CV, closed:CONCURRENCY or FILE.csv");
  in.arrivals = serve::parse_arrivals(q.arrivals);
  in.isl = serve::parse_lengths(q.isl, "--isl"), in.osl = serve::parse_lengths(q.osl, "--osl");
  if (!q.lengths.empty()) in.pairs = serve::read_lengths(q.lengths);
  const bool trace = in.arrivals.kind == serve::Arrivals::Kind::trace;
  const std::int64_t rows = static_cast<std::int64_t>(in.arrivals.trace.size());
  in.n = q.requests.empty() ? (trace ? rows : 1000) : parse_int_flag("--requests", q.requests, 1, trace ? rows : INT64_C(1) << 24);
  in.seed = parse_int_flag("--seed", q.seed, 0, INT64_MAX);
  in.lim.max_num_seqs = parse_int_flag("--max-num-seqs", q.max_num_seqs, 1, kLlmMaxBatch);
  in.lim.max_batched_tokens = parse_int_flag("--max-batched-tokens", q.max_batched_tokens, 1, kLlmMaxPrompt);
  if (q.chunked_prefill != "on" && q.chunked_prefill != "off")
    throw InputError("--chunked-prefill " + (q.chunked_prefill.empty() ? std::string("''") : q.chunked_prefill) + ": expected on or off");
  in.lim.chunked_prefill = q.chunked_prefill == "on";
  in.lim.kv_block = parse_int_flag("--kv-block", q.kv_block, 1, INT64_C(1) << 20);
  in.slo_ttft = serve::parse_real_flag("--slo-ttft", q.slo_ttft, 0, 1e9, "milliseconds") / 1e3;
  in.slo_tpot = serve::parse_real_flag("--slo-tpot", q.slo_tpot, 0, 1e9, "milliseconds") / 1e3;
  in.rechecks = parse_int_flag("--recheck", q.recheck, 0, 1000);
  std::tie(in.prefill, in.decode) = parse_disagg(q.disagg);
  if (in.disagg() && in.arrivals.kind == serve::Arrivals::Kind::closed)
    throw InputError("--disagg " + q.disagg + ": disaggregated serving takes open-loop arrivals (poisson, gamma or a trace)");
  if (!q.out.empty())
    for (const char* name : {"summary.json", "requests.csv", "steps.csv"}) check_output_path("--out", q.out + "/" + name, name);
  return in;
}

// The llm config's axes but the step's own, as eval llm writes them.
nlohmann::json mapping_json(const Family& f, const std::vector<unsigned char>& config) {
  nlohmann::json cfg = nlohmann::json::object();
  for (const AxisDesc& ax : f.axes) {
    if (serve_step_axis(ax.name) || (ax.optional_with && get_int(config.data(), f.axis(ax.optional_with)->offset) == 0)) continue;
    const std::int64_t v = get_int(config.data(), ax.offset);
    if (!ax.names.empty()) cfg[ax.name] = ax.names[static_cast<std::size_t>(v)];
    else cfg[ax.name] = v;
  }
  return cfg;
}

nlohmann::json report_json(const serve::Report& rep, std::int64_t sips, std::int64_t kv_blocks) {
  return {{"ttft_ms", stats_json(rep.ttft, 1e3)},
          {"tpot_ms", stats_json(rep.tpot, 1e3)},
          {"itl_ms", stats_json(rep.itl, 1e3)},
          {"e2e_s", stats_json(rep.e2e, 1.0)},
          {"seconds", rep.seconds},
          {"requests_per_s", rep.requests_per_s},
          {"output_tokens_per_s", rep.output_tokens_per_s},
          {"total_tokens_per_s", rep.total_tokens_per_s},
          {"sips", sips},
          {"output_tokens_per_s_per_sip", rep.output_tokens_per_s / static_cast<double>(sips)},
          {"output_tokens_per_s_per_user", rep.tpot.mean > 0 ? 1.0 / rep.tpot.mean : 0.0},
          {"goodput_per_s", rep.goodput_per_s},
          {"met_slo", rep.met_slo},
          {"preemptions", rep.preemptions},
          {"peak_kv_blocks", rep.peak_kv_blocks},
          {"peak_kv_use", static_cast<double>(rep.peak_kv_blocks) / static_cast<double>(kv_blocks)}};
}

// The run's energy: its steps' dynamic energy, and the whole machine's static power from the
// first arrival to the last finish (idle or not), in joules, per output token and per token.
nlohmann::json energy_json(const serve::ServeRun& run, const std::vector<serve::Request>& requests, const HwConfig& hw,
                           long double dynamic_fj, bool overflow) {
  ps_t first = run.end;
  std::int64_t out_tokens = 0, all_tokens = 0;
  for (std::size_t i = 0; i < run.requests.size(); ++i)
    first = std::min(first, run.requests[i].arrival), out_tokens += requests[i].output,
    all_tokens += requests[i].input + requests[i].output;
  const long double static_fj = static_cast<long double>(hw_static_mw(hw)) * static_cast<long double>(run.end - first);
  const double dynamic_j = static_cast<double>(dynamic_fj * 1e-15L), static_j = static_cast<double>(static_fj * 1e-15L);
  const double total = dynamic_j + static_j;
  return {{"status", overflow ? "energy_overflow" : "ok"},
          {"dynamic_j", dynamic_j},
          {"static_j", static_j},
          {"total_j", total},
          {"j_per_output_token", total / static_cast<double>(out_tokens)},
          {"j_per_token", total / static_cast<double>(all_tokens)},
          {"average_power_w", run.end > first ? total / (static_cast<double>(run.end - first) * 1e-12) : 0.0}};
}

// The longest prompt's KV transfer on the reference engine too.
nlohmann::json kv_recheck(KvTransfer& kv, const std::vector<serve::Request>& requests) {
  std::int64_t longest = 0;  // of the requests that go on to a decode instance
  for (const serve::Request& r : requests)
    if (r.output > 1) longest = std::max(longest, r.input);
  if (longest == 0) return nullptr;  // none was sent
  const ps_t b = kv.time(longest), r = llm_send_reference(kv.config(longest)).latency_ps;
  if (b != r)
    throw InternalError("serve: a KV transfer's time differs between the engines: " + std::to_string(b) + " and " +
                            std::to_string(r) + " ps",
                        __FILE__, __LINE__);
  return {{"prompt", longest}, {"batched_ps", b}, {"reference_ps", r}, {"identical", b == r}};
}

// The step model of the request's mapping, its KV cache's blocks in `lim`.
serve::StepModel step_model(const ServeRequest& q, const EvalConfig& made, const LlmConfig& base, serve::Limits& lim,
                            std::int64_t* kv_tokens) {
  const Family& f = *q.llm.family;
  bool best_case = false;  // the attention case left to "best": each decode group's own
  for (const AxisDesc* ax : made.best_axes) best_case = best_case || ax->name == "attention_case";
  serve::StepModel model(base,
                         base.experts > 0 ? std::function<void(LlmConfig&)>([&f, presets = q.llm.presets](LlmConfig& c) {
                           f.prepare(presets, {}, &c);
                         })
                                          : std::function<void(LlmConfig&)>(),
                         best_case);
  *kv_tokens = model.kv_token_capacity(lim.max_batched_tokens);
  lim.kv_blocks = *kv_tokens / lim.kv_block;
  if (lim.kv_blocks < 1)
    throw InputError("serve: the model leaves no room for a KV block of " + std::to_string(lim.kv_block) +
                     " tokens: the fullest cube's HBM holds its weights and a step of --max-batched-tokens " +
                     std::to_string(lim.max_batched_tokens) + " tokens' activations, and " + std::to_string(*kv_tokens) +
                     " tokens of KV cache");
  return model;
}

}  // namespace serve_detail

nlohmann::json run_serve(const ServeRequest& q) {
  using namespace serve_detail;
  KB_INTERNAL_CHECK(q.llm.family != nullptr, "serve: a request without the llm family");
  refuse_step_axes(q.llm);
  Inputs in = parse_inputs(q);
  serve::Limits& lim = in.lim;
  // The model and its mapping, as eval llm makes them; the step model over them.
  EvalRequest llm = q.llm;
  if (!llm.axes.count("pp")) llm.axes["pp"] = "1";  // one stage, unless asked (and then refused by name)
  const EvalConfig made = eval_config(llm);
  LlmConfig base{};
  std::memcpy(&base, made.config.data(), sizeof base);
  std::int64_t kv_tokens = 0;
  serve::StepModel model = step_model(q, made, base, lim, &kv_tokens);
  const std::int64_t stage_sips = llm_ranks(base.hw, llm_run_of(base)).sips_per_stage;
  const std::int64_t instances = in.disagg() ? in.prefill + in.decode : 1, sips = instances * stage_sips;
  if (sips > base.hw.sips)
    throw InputError("--disagg " + q.disagg + ": " + std::to_string(instances) + " instances of " + std::to_string(stage_sips) +
                     " SIPs each need " + std::to_string(sips) + " SIPs; the topology has " + std::to_string(base.hw.sips));

  const std::vector<serve::Request> requests =
      serve::make_requests(in.arrivals, in.isl, in.osl, in.pairs, in.n, static_cast<std::uint64_t>(in.seed));
  Reservoir kept{static_cast<std::size_t>(in.rechecks), SplitMix64{static_cast<std::uint64_t>(in.seed) ^ UINT64_C(0x5E17E)}, {}};
  // Energy: each step's counted actions (dynamic), and the machine's static power over the run.
  long double dynamic_fj = 0;
  bool energy_overflow = false;
  const serve::StepTime step_time = [&](const StepMix& mix) {
    kept.offer(mix);
    const StepParts p = model.parts(mix);
    const Energy e = energy_of(base.hw, p.actions, 0);
    energy_overflow = energy_overflow || e.status != kEnergyOk;
    dynamic_fj += static_cast<long double>(e.total);
    return p.total();
  };
  KvTransfer kv(base);
  serve::DisaggRun split;
  if (in.disagg())
    split = serve::simulate_disagg(requests, lim, step_time, [&](std::int64_t p) { return kv.time(p); }, in.prefill, in.decode);
  else
    split.run = serve::simulate(requests, lim, step_time, in.arrivals.kind == serve::Arrivals::Kind::closed ? in.arrivals.clients : 0);
  const serve::ServeRun& run = split.run;
  const std::int64_t evaluations = model.evaluations();  // the run's own, before the re-check's
  nlohmann::json checked = recheck(model, kept);
  if (in.disagg()) checked["kv_transfer"] = kv_recheck(kv, requests);

  nlohmann::json doc = document("kernbench-gpu/serve", "1.0.0", made.topology);
  doc["llm"] = mapping_json(*q.llm.family, made.config);
  for (const auto& [flag, text] : q.llm.presets) doc["presets"][flag] = text;
  doc["workload"] = {{"arrivals", q.arrivals}, {"isl", q.lengths.empty() ? q.isl : ""}, {"osl", q.lengths.empty() ? q.osl : ""},
                     {"lengths", q.lengths}, {"requests", in.n}, {"seed", in.seed}};
  doc["limits"] = {{"max_num_seqs", lim.max_num_seqs}, {"max_batched_tokens", lim.max_batched_tokens},
                   {"chunked_prefill", lim.chunked_prefill}, {"kv_block", lim.kv_block}, {"kv_blocks", lim.kv_blocks},
                   {"kv_tokens", kv_tokens}};
  doc["slo"] = {{"ttft_ms", in.slo_ttft * 1e3}, {"tpot_ms", in.slo_tpot * 1e3}};
  doc["disagg"] = nullptr;
  if (in.disagg()) {
    std::vector<double> ms;
    for (std::size_t i = 0; i < requests.size(); ++i)
      if (requests[i].output > 1) ms.push_back(static_cast<double>(split.transfer[i]) / 1e9);
    doc["disagg"] = {{"prefill", in.prefill}, {"decode", in.decode}, {"kv_transfer_ms", stats_json(serve::stats_of(ms), 1.0)}};
  }
  const serve::Report rep = serve::report_of(run, in.slo_ttft, in.slo_tpot);
  doc["report"] = report_json(rep, sips, lim.kv_blocks);
  doc["energy"] = energy_json(run, requests, base.hw, dynamic_fj, energy_overflow);
  doc["steps"] = {{"count", run.steps.size()}, {"distinct_part_evaluations", evaluations}};
  doc["recheck"] = checked;

  if (!q.out.empty()) {
    doc["files"] = {{"requests", "requests.csv"}, {"steps", "steps.csv"}};
    write_file_atomic(q.out + "/requests.csv", [&](std::ostream& o) { write_requests_csv(o, run, in.slo_ttft, in.slo_tpot); });
    write_file_atomic(q.out + "/steps.csv", [&](std::ostream& o) { write_steps_csv(o, run, lim.kv_blocks); });
    write_file_atomic(q.out + "/summary.json", doc.dump(2) + "\n");
    if (q.figures) render_figures("plot_serve.py", q.out + "/summary.json", q.out);
  }
  return doc;
}

}  // namespace kb::api
