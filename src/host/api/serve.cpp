#include "serve.h"

#include "serve_sweep.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
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

// Everything a run reports, as it goes: the report, and with --out each request's and each
// step's row, streamed (requests in the order they finish).
class ServeSink final : public serve::ReportBuilder {
 public:
  ServeSink(double slo_ttft_s, double slo_tpot_s, std::ostream* requests, std::ostream* steps, std::int64_t kv_blocks)
      : ReportBuilder(slo_ttft_s, slo_tpot_s), slo_ttft_(slo_ttft_s), slo_tpot_(slo_tpot_s), requests_(requests), steps_(steps),
        kv_blocks_(kv_blocks) {
    if (requests_)
      *requests_ << "request,arrival_s,input_tokens,output_tokens,scheduled_s,first_token_s,finish_s,ttft_ms,tpot_ms,e2e_s,preemptions,met_slo\n";
    if (steps_) *steps_ << "step,instance,start_s,time_ms,running,waiting,tokens,prefill_tokens,kv_blocks,kv_use\n";
  }
  void served(std::int64_t id, const serve::Served& s) override {
    ReportBuilder::served(id, s);
    if (s.output > 1) longest_sent = std::max(longest_sent, s.input);
    if (!requests_) return;
    const double ttft = s_of(s.first_token - s.arrival);
    const double tpot = s.output > 1 ? s_of(s.finish - s.first_token) / static_cast<double>(s.output - 1) : 0.0;
    char line[512];
    std::snprintf(line, sizeof line, "%lld,%.9f,%lld,%lld,%.9f,%.9f,%.9f,%.6f,%.6f,%.9f,%lld,%d\n", static_cast<long long>(id),
                  s_of(s.arrival), static_cast<long long>(s.input), static_cast<long long>(s.output), s_of(s.scheduled),
                  s_of(s.first_token), s_of(s.finish), ttft * 1e3, tpot * 1e3, s_of(s.finish - s.arrival),
                  static_cast<long long>(s.preemptions), ttft <= slo_ttft_ && tpot <= slo_tpot_ ? 1 : 0);
    *requests_ << line;
  }
  void step(const serve::Step& s) override {
    ReportBuilder::step(s);
    if (steps_) {
      char line[256];
      std::snprintf(line, sizeof line, "%lld,%d,%.9f,%.6f,%d,%d,%lld,%lld,%lld,%.6f\n", static_cast<long long>(steps), s.instance,
                    s_of(s.start), ms_of(s.time), s.running, s.waiting, static_cast<long long>(s.tokens),
                    static_cast<long long>(s.prefill_tokens), static_cast<long long>(s.kv_blocks),
                    static_cast<double>(s.kv_blocks) / static_cast<double>(kv_blocks_));
      *steps_ << line;
    }
    ++steps;
  }
  void transfer(std::int64_t, ps_t t) override { kv_ms.add(static_cast<double>(t) / 1e9); }
  std::int64_t steps = 0, longest_sent = 0;  // longest_sent: the longest prompt sent on to decode
  serve::Quantiles kv_ms;                    // KV transfers, in milliseconds

 private:
  double slo_ttft_, slo_tpot_;
  std::ostream *requests_, *steps_;
  std::int64_t kv_blocks_;
};

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

// `alone`: each flag by itself (sweep serve's check of its alternatives), not how they combine.
Inputs parse_inputs(const ServeRequest& q, bool alone = false) {
  Inputs in;
  if (q.arrivals.empty()) throw InputError("--arrivals is required: poisson:RATE, gamma:RATE:CV, closed:CONCURRENCY or FILE.csv");
  in.arrivals = serve::parse_arrivals(q.arrivals);
  in.isl = serve::parse_lengths(q.isl, "--isl"), in.osl = serve::parse_lengths(q.osl, "--osl");
  if (!q.lengths.empty()) in.pairs = serve::read_lengths(q.lengths);
  const bool trace = in.arrivals.kind == serve::Arrivals::Kind::trace;
  const std::int64_t rows = in.arrivals.trace_rows;
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
  if (!alone && in.disagg() && in.arrivals.kind == serve::Arrivals::Kind::closed)
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
nlohmann::json energy_json(const ServeSink& run, ps_t end, const HwConfig& hw, long double dynamic_fj, bool overflow) {
  const ps_t first = run.requests == 0 ? end : run.first_arrival;
  const long double static_fj = static_cast<long double>(hw_static_mw(hw)) * static_cast<long double>(end - first);
  const double dynamic_j = static_cast<double>(dynamic_fj * 1e-15L), static_j = static_cast<double>(static_fj * 1e-15L);
  const double total = dynamic_j + static_j;
  return {{"status", overflow ? "energy_overflow" : "ok"},
          {"dynamic_j", dynamic_j},
          {"static_j", static_j},
          {"total_j", total},
          {"j_per_output_token", total / static_cast<double>(run.output_tokens)},
          {"j_per_token", total / static_cast<double>(run.all_tokens)},
          {"average_power_w", end > first ? total / (static_cast<double>(end - first) * 1e-12) : 0.0}};
}

// The longest prompt's KV transfer on the reference engine too.
nlohmann::json kv_recheck(KvTransfer& kv, std::int64_t longest) {
  if (longest == 0) return nullptr;  // none was sent
  const ps_t b = kv.time(longest), r = llm_send_reference(kv.config(longest)).latency_ps;
  if (b != r)
    throw InternalError("serve: a KV transfer's time differs between the engines: " + std::to_string(b) + " and " +
                            std::to_string(r) + " ps",
                        __FILE__, __LINE__);
  return {{"prompt", longest}, {"batched_ps", b}, {"reference_ps", r}, {"identical", b == r}};
}

// The step model of the request's mapping.
std::unique_ptr<serve::StepModel> step_model(const ServeRequest& q, const EvalConfig& made, const LlmConfig& base) {
  const Family& f = *q.llm.family;
  bool best_case = false;  // the attention case left to "best": each decode group's own
  for (const AxisDesc* ax : made.best_axes) best_case = best_case || ax->name == "attention_case";
  return std::make_unique<serve::StepModel>(
      base,
      base.experts > 0 ? std::function<void(LlmConfig&)>([&f, presets = q.llm.presets](LlmConfig& c) { f.prepare(presets, {}, &c); })
                       : std::function<void(LlmConfig&)>(),
      best_case);
}

// The KV cache's blocks in `lim`, from what the fullest cube leaves at its step's tokens.
std::int64_t kv_blocks_of(serve::StepModel& model, serve::Limits& lim) {
  const std::int64_t kv_tokens = model.kv_token_capacity(lim.max_batched_tokens);
  lim.kv_blocks = kv_tokens / lim.kv_block;
  if (lim.kv_blocks < 1)
    throw InputError("serve: the model leaves no room for a KV block of " + std::to_string(lim.kv_block) +
                     " tokens: the fullest cube's HBM holds its weights and a step of --max-batched-tokens " +
                     std::to_string(lim.max_batched_tokens) + " tokens' activations, and " + std::to_string(kv_tokens) +
                     " tokens of KV cache");
  return kv_tokens;
}

}  // namespace serve_detail

struct ServeMapping::Impl {
  EvalConfig made;
  LlmConfig base{};
  std::unique_ptr<serve::StepModel> model;
  std::int64_t stage_sips = 0;
};

ServeMapping::ServeMapping(const ServeRequest& q) : impl_(std::make_unique<Impl>()) {
  using namespace serve_detail;
  KB_INTERNAL_CHECK(q.llm.family != nullptr, "serve: a request without the llm family");
  refuse_step_axes(q.llm);
  // The model and its mapping, as eval llm makes them; the step model over them.
  EvalRequest llm = q.llm;
  if (!llm.axes.count("pp")) llm.axes["pp"] = "1";  // one stage, unless asked (and then refused by name)
  impl_->made = eval_config(llm);
  std::memcpy(&impl_->base, impl_->made.config.data(), sizeof impl_->base);
  impl_->model = step_model(q, impl_->made, impl_->base);
  impl_->stage_sips = llm_ranks(impl_->base.hw, llm_run_of(impl_->base)).sips_per_stage;
}

ServeMapping::~ServeMapping() = default;

void check_serve_inputs(const ServeRequest& q) { serve_detail::parse_inputs(q, true); }

nlohmann::json run_serve(const ServeRequest& q) {
  ServeMapping mapping(q);
  return mapping.serve(q);
}

nlohmann::json ServeMapping::serve(const ServeRequest& q) {
  using namespace serve_detail;
  Inputs in = parse_inputs(q);
  serve::Limits& lim = in.lim;
  const EvalConfig& made = impl_->made;
  const LlmConfig& base = impl_->base;
  serve::StepModel& model = *impl_->model;
  const std::int64_t kv_tokens = kv_blocks_of(model, lim);
  const std::int64_t instances = in.disagg() ? in.prefill + in.decode : 1, sips = instances * impl_->stage_sips;
  if (sips > base.hw.sips)
    throw InputError("--disagg " + q.disagg + ": " + std::to_string(instances) + " instances of " + std::to_string(impl_->stage_sips) +
                     " SIPs each need " + std::to_string(sips) + " SIPs; the topology has " + std::to_string(base.hw.sips));

  // Every request checked before any work (a stream, read twice, never held).
  const bool closed = in.arrivals.kind == serve::Arrivals::Kind::closed;
  auto stream = [&] {
    return std::make_unique<serve::RequestStream>(in.arrivals, in.isl, in.osl, in.pairs, in.n, static_cast<std::uint64_t>(in.seed));
  };
  {
    const auto all = stream();
    serve::Request r;
    ps_t previous = 0;
    for (std::int64_t i = 0; all->next(&r); previous = r.arrival, ++i) serve::check_request(i, r, lim, closed ? -1 : previous);
  }
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
  // The per-request and per-step files, streamed as the run goes, in place once all is known.
  std::unique_ptr<AtomicFile> requests_csv, steps_csv;
  if (!q.out.empty())
    requests_csv = std::make_unique<AtomicFile>(q.out + "/requests.csv"), steps_csv = std::make_unique<AtomicFile>(q.out + "/steps.csv");
  ServeSink sink(in.slo_ttft, in.slo_tpot, requests_csv ? &requests_csv->out() : nullptr, steps_csv ? &steps_csv->out() : nullptr,
                 lim.kv_blocks);
  const auto source = stream();
  const serve::Totals totals =
      in.disagg() ? serve::simulate_disagg(*source, lim, step_time, [&](std::int64_t p) { return kv.time(p); }, in.prefill, in.decode, sink)
                  : serve::simulate(*source, lim, step_time, sink, closed ? in.arrivals.clients : 0);
  const std::int64_t evaluations = model.evaluations();  // the mapping's so far, before the re-check's
  nlohmann::json checked = recheck(model, kept);
  if (in.disagg()) checked["kv_transfer"] = kv_recheck(kv, sink.longest_sent);

  nlohmann::json doc = document("kernbench-gpu/serve", "1.1.0", made.topology);
  doc["llm"] = mapping_json(*q.llm.family, made.config);
  for (const auto& [flag, text] : q.llm.presets) doc["presets"][flag] = text;
  doc["workload"] = {{"arrivals", q.arrivals}, {"isl", q.lengths.empty() ? q.isl : ""}, {"osl", q.lengths.empty() ? q.osl : ""},
                     {"lengths", q.lengths}, {"requests", in.n}, {"seed", in.seed}};
  doc["limits"] = {{"max_num_seqs", lim.max_num_seqs}, {"max_batched_tokens", lim.max_batched_tokens},
                   {"chunked_prefill", lim.chunked_prefill}, {"kv_block", lim.kv_block}, {"kv_blocks", lim.kv_blocks},
                   {"kv_tokens", kv_tokens}};
  doc["slo"] = {{"ttft_ms", in.slo_ttft * 1e3}, {"tpot_ms", in.slo_tpot * 1e3}};
  doc["disagg"] = nullptr;
  if (in.disagg())
    doc["disagg"] = {{"prefill", in.prefill}, {"decode", in.decode}, {"kv_transfer_ms", stats_json(sink.kv_ms.stats(), 1.0)}};
  const serve::Report rep = sink.report(totals);
  doc["report"] = report_json(rep, sips, lim.kv_blocks);
  // Percentiles are exact up to 2^16 values of a kind; beyond, within a relative 2^-13.
  doc["report"]["percentiles"] = sink.exact() ? "exact" : "binned";
  doc["energy"] = energy_json(sink, totals.end, base.hw, dynamic_fj, energy_overflow);
  doc["steps"] = {{"count", sink.steps}, {"distinct_part_evaluations", evaluations}};
  doc["memory"] = {{"peak_request_records", totals.peak_records}, {"report_bytes", sink.bytes()}};
  doc["recheck"] = checked;

  if (!q.out.empty()) {
    doc["files"] = {{"requests", "requests.csv"}, {"steps", "steps.csv"}};
    requests_csv->commit(), steps_csv->commit();
    write_file_atomic(q.out + "/summary.json", doc.dump(2) + "\n");
    if (q.figures) render_figures("plot_serve.py", q.out + "/summary.json", q.out);
  }
  return doc;
}

}  // namespace kb::api
