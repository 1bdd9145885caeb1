// milestone-llm-serving: LLaMA-3.1-70B (fp16) and Mixtral-8x7B (fp16) served on
// topologies/ring8.yaml (8 SIPs) under Poisson arrivals, aggregated (one instance of a
// tensor-parallel mapping) against disaggregated (prefill and decode instances on disjoint
// SIPs, the KV cache sent between them): tokens/s per SIP against tokens/s per user, and
// goodput at TTFT <= 2 s and TPOT <= 50 ms (P90 of each) against the arrival rate. Every run
// is `kernbench-gpu serve` (docs/model.md section 13.16); its sampled steps are re-checked on
// the reference engine.
#include "milestone_llm_serving.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <iomanip>
#include <sstream>

#include "host/api/serve.h"
#include "host/bench/registry.h"
#include "host/common/error.h"
#include "host/common/parallel.h"
#include "host/common/table.h"
#include "host/families/family.h"
#include "host/study/bench_writer.h"
#include "host/study/document.h"

namespace kb {

const std::vector<ServingSetup>& serving_setups() {
  static const std::vector<ServingSetup> s = {
      {"llama-3.1-70b", "agg tp8", 8, "", {0.5, 1, 2, 3, 4, 6}},
      {"llama-3.1-70b", "agg tp4", 4, "", {0.5, 1, 2, 3, 4, 6}},
      {"llama-3.1-70b", "agg tp2", 2, "", {0.5, 1, 2, 3, 4, 6}},
      {"llama-3.1-70b", "disagg tp2 1P:3D", 2, "1:3", {0.5, 1, 2, 3, 4, 6}},
      {"llama-3.1-70b", "disagg tp2 2P:2D", 2, "2:2", {0.5, 1, 2, 3, 4, 6}},
      {"mixtral-8x7b", "agg tp8", 8, "", {1, 2, 4, 8, 12, 16}},
      {"mixtral-8x7b", "agg tp2", 2, "", {1, 2, 4, 8, 12, 16}},
      {"mixtral-8x7b", "agg tp1", 1, "", {1, 2, 4, 8, 12, 16}},
      {"mixtral-8x7b", "disagg tp1 2P:6D", 1, "2:6", {1, 2, 4, 8, 12, 16}},
      {"mixtral-8x7b", "disagg tp1 4P:4D", 1, "4:4", {1, 2, 4, 8, 12, 16}},
  };
  return s;
}

api::ServeRequest serving_request(const ServingSetup& s, double rate, const std::string& topology_path) {
  api::ServeRequest r;
  r.llm.family = &family("llm");
  r.llm.presets["--model"] = s.model;
  r.llm.axes["tp"] = std::to_string(s.tp);
  r.llm.axes["tp_level"] = "sip";
  r.llm.topology.path = topology_path;
  r.llm.engine = "batched";
  std::ostringstream rate_text;
  rate_text << rate;
  r.arrivals = "poisson:" + rate_text.str();
  r.isl = kServingIsl, r.osl = kServingOsl;
  r.requests = std::to_string(kServingRequests);
  r.seed = "1";
  r.disagg = s.disagg;
  r.slo_ttft = "2000", r.slo_tpot = "50";
  r.recheck = "1";
  return r;
}

namespace {

// A run's row: the setup, the rate, and the report's figures.
nlohmann::json serving_row(const ServingSetup& s, double rate, const nlohmann::json& doc) {
  const nlohmann::json& r = doc["report"];
  const double ttft90 = r["ttft_ms"]["p90"], tpot90 = r["tpot_ms"]["p90"];
  return {{"model", s.model},
          {"setup", s.name},
          {"tp", s.tp},
          {"serving", s.disagg.empty() ? "aggregated" : "disaggregated"},
          {"disagg", s.disagg.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.disagg)},
          {"rate", rate},
          {"sips", r["sips"]},
          {"ttft_p50_ms", r["ttft_ms"]["p50"]},
          {"ttft_p90_ms", ttft90},
          {"tpot_p50_ms", r["tpot_ms"]["p50"]},
          {"tpot_p90_ms", tpot90},
          {"e2e_p90_s", r["e2e_s"]["p90"]},
          {"tokens_per_s_per_sip", r["output_tokens_per_s_per_sip"]},
          {"tokens_per_s_per_user", r["output_tokens_per_s_per_user"]},
          {"requests_per_s", r["requests_per_s"]},
          {"goodput_per_s", r["goodput_per_s"]},
          {"met_slo", r["met_slo"]},
          {"meets_slo_p90", ttft90 <= 2000.0 && tpot90 <= 50.0},
          {"preemptions", r["preemptions"]},
          {"peak_kv_use", r["peak_kv_use"]},
          {"j_per_output_token", doc["energy"]["j_per_output_token"]},
          {"recheck_steps", doc["recheck"]["steps"]},
          {"recheck_identical", doc["recheck"]["identical"]},
          {"recheck_skipped", doc["recheck"]["skipped"]}};
}

void run_serving_milestone(BenchContext& ctx) {
  std::ostream& out = *ctx.out;
  const auto t_start = std::chrono::steady_clock::now();
  struct Run {
    const ServingSetup* setup;
    double rate;
    nlohmann::json row;
  };
  std::vector<Run> runs;
  for (const ServingSetup& s : serving_setups())
    for (const double rate : s.rates) runs.push_back({&s, rate, {}});
  // Each run is a serving simulation of its own: on the host's cores, one a core.
  parallel_for(runs.size(), [&](std::size_t i) {
    const nlohmann::json doc = api::run_serve(serving_request(*runs[i].setup, runs[i].rate, ctx.topology_path));
    runs[i].row = serving_row(*runs[i].setup, runs[i].rate, doc);
  });
  nlohmann::json doc = document(ctx.bench->schema, ctx.bench->schema_version, ctx.topology);
  doc["bench"] = ctx.bench->name;
  doc["backend"] = "host";
  doc["workload"] = {{"isl", kServingIsl}, {"osl", kServingOsl}, {"requests", kServingRequests}, {"seed", 1}};
  doc["slo"] = {{"ttft_ms", 2000}, {"tpot_ms", 50}, {"percentile", 90}};
  doc["models"] = {"llama-3.1-70b", "mixtral-8x7b"};
  Table table({{"model", "", ColType::text},
               {"setup", "", ColType::text},
               {"rate", "1/s", ColType::text},
               {"sips", "", ColType::integer},
               {"ttft_p90_ms", "ms", ColType::text},
               {"tpot_p90_ms", "ms", ColType::text},
               {"tok_s_sip", "1/s", ColType::text},
               {"tok_s_user", "1/s", ColType::text},
               {"goodput", "1/s", ColType::text},
               {"slo", "", ColType::text}});
  nlohmann::json rows = nlohmann::json::array();
  std::int64_t checked = 0, identical = 0;
  for (const Run& r : runs) {
    const nlohmann::json& x = r.row;
    rows.push_back(x);
    checked += x["recheck_steps"].get<std::int64_t>() - x["recheck_skipped"].get<std::int64_t>();
    identical += x["recheck_identical"].get<std::int64_t>();
    table.add({x["model"].get<std::string>(), x["setup"].get<std::string>(), fixed_digits(r.rate, 2), x["sips"].get<std::int64_t>(),
               fixed_digits(x["ttft_p90_ms"], 1), fixed_digits(x["tpot_p90_ms"], 2), fixed_digits(x["tokens_per_s_per_sip"], 1),
               fixed_digits(x["tokens_per_s_per_user"], 1), fixed_digits(x["goodput_per_s"], 2), x["meets_slo_p90"] ? "met" : "-"});
  }
  if (identical != checked)
    throw InternalError("milestone-llm-serving: a re-checked step differs between the engines", __FILE__, __LINE__);
  doc["runs"] = rows;
  doc["parity"] = {{"steps_checked", checked}, {"identical", identical}};
  out << "LLaMA-3.1-70B and Mixtral-8x7B served on " << ctx.topology.name << " (" << ctx.topology.hw().sips
      << " SIPs), Poisson arrivals, prompts " << kServingIsl << ", outputs " << kServingOsl << ", " << kServingRequests
      << " requests a run; SLO: P90 TTFT <= 2 s and P90 TPOT <= 50 ms\n"
      << table.text("  ") << "  reference engine: " << identical << " of " << checked << " sampled steps identical to the picosecond\n";
  write_bench(ctx, doc, table);
  out << "wrote " << bench_json_path(ctx) << ", " << ctx.bench->csv() << " and 2 figures to " << ctx.out_dir << " in "
      << fixed_digits(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(), 1) << " s\n";
}

}  // namespace

KB_BENCH([] {
  BenchInfo b;
  b.name = "milestone-llm-serving";
  b.description =
      "LLaMA-3.1-70B and Mixtral-8x7B served on ring8 (8 SIPs) under Poisson arrivals: tokens/s per SIP against "
      "tokens/s per user and goodput at P90 TTFT <= 2 s and TPOT <= 50 ms against the arrival rate, aggregated "
      "against disaggregated prefill and decode";
  b.axes = {"model", "setup", "rate"};
  b.domain = "llm_serving";
  b.fn = run_serving_milestone;
  b.json = "llm_serving.json";
  b.schema = "kernbench-gpu/llm-serving";
  b.schema_version = "1.0.0";
  b.plot = "plot_llm_serving.py";
  b.topology = "ring8.yaml";
  return b;
}());

}  // namespace kb
