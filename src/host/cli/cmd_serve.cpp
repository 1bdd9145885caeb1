// `kernbench-gpu serve`: a serving run of a whole model (docs/model.md section 13.16). Its
// model, hardware and mapping flags are `eval llm`'s, less the step's own; the words become an
// api::ServeRequest (src/host/api/serve.h).
#include "cmd_serve.h"

#include <algorithm>
#include <chrono>

#include "host/api/serve.h"
#include "host/api/serve_sweep.h"
#include "host/common/table.h"
#include "host/common/output.h"
#include "host/sweep/space.h"

namespace kb {

using api::serve_step_axis;

namespace {

// The flags `serve` and `sweep serve` share; with `lists`, the ones a sweep crosses say so.
void add_serve_options(CLI::App* cmd, ServeArgs& a, bool lists) {
  const Family& f = *a.llm.family;
  const std::string list = lists ? "; a comma-separated list sweeps them" : "";
  for (const AxisDesc& ax : f.axes) {
    if (serve_step_axis(ax.name)) continue;
    std::string help = ax.help;
    if (!ax.names.empty()) help += " (" + one_of(ax.names) + ")";
    if (!ax.best.empty()) help += "; best: the one of least latency of " + ax.best + " (a decode step at --context 4096)";
    if (!ax.fallback.empty() && ax.fallback != "auto") help += " [default: " + ax.fallback + "]";
    a.llm.given[ax.name] = cmd->add_option(ax.flag, a.llm.axes[ax.name], help + list);
  }
  for (const HwAxisDesc& h : f.hw_axes)
    a.llm.given[h.name] = cmd->add_option(h.flag, a.llm.hw_axes[h.name], h.help + " (same as --set " + h.path + "=...)" + list);
  for (const PresetDesc& p : f.presets)
    a.llm.preset_given[p.flag] = cmd->add_option(p.flag, a.llm.presets[p.flag], p.help + "; a flag of its own overrides one value" + list);
  api::ServeRequest& r = a.request;
  cmd->add_option("--arrivals", r.arrivals,
                  "poisson:RATE (requests a second), gamma:RATE:CV, closed:CONCURRENCY, or a trace FILE.csv of "
                  "timestamp,input,output rows" + list)
      ->required();
  cmd->add_option("--isl", r.isl, "prompt tokens: N, uniform:A:B or lognormal:MEAN:SIGMA")->capture_default_str();
  cmd->add_option("--osl", r.osl, "output tokens: N, uniform:A:B or lognormal:MEAN:SIGMA")->capture_default_str();
  cmd->add_option("--lengths", r.lengths, "a file of conversations (input,output rows, such as ShareGPT's), drawn uniformly");
  cmd->add_option("--requests", r.requests, "requests to serve (default 1000; a trace: its rows, or at most that many)");
  cmd->add_option("--seed", r.seed, "the seed of arrivals and lengths")->capture_default_str();
  cmd->add_option("--max-num-seqs", r.max_num_seqs, "requests running at once" + list)->capture_default_str();
  cmd->add_option("--max-batched-tokens", r.max_batched_tokens, "tokens a step computes" + list)->capture_default_str();
  cmd->add_option("--chunked-prefill", r.chunked_prefill, "on or off" + list)->capture_default_str();
  cmd->add_option("--kv-block", r.kv_block, "tokens a KV cache block holds" + list)->capture_default_str();
  cmd->add_option("--slo-ttft", r.slo_ttft, "time to first token the SLO allows, in ms")->capture_default_str();
  cmd->add_option("--slo-tpot", r.slo_tpot, "time per output token the SLO allows, in ms")->capture_default_str();
  cmd->add_option("--disagg", r.disagg,
                  std::string("P:D: P prefill and D decode instances of the mapping on disjoint SIPs, the KV cache sent between them "
                              "(default: one instance serving both") +
                      (lists ? ", or none" : "") + ")" + list);
  cmd->add_option("--backend", a.llm.backend, "the batched model's backend for --tp best: auto, cuda or omp")->capture_default_str();
  a.llm.topo.add(cmd, false);
}

// The request the flags given make.
api::ServeRequest serve_request_of(const ServeArgs& a) {
  const Family& f = *a.llm.family;
  api::ServeRequest r = a.request;
  r.llm.family = &f;
  for (const AxisDesc& ax : f.axes)
    if (!serve_step_axis(ax.name) && a.llm.given.at(ax.name)->count() != 0) r.llm.axes[ax.name] = a.llm.axes.at(ax.name);
  for (const HwAxisDesc& h : f.hw_axes)
    if (a.llm.given.at(h.name)->count() != 0) r.llm.hw_axes[h.name] = a.llm.hw_axes.at(h.name);
  for (const PresetDesc& p : f.presets)
    if (a.llm.preset_given.at(p.flag)->count() != 0) r.llm.presets[p.flag] = a.llm.presets.at(p.flag);
  r.llm.topology = a.llm.topo.request();
  r.llm.backend = a.llm.backend;
  r.llm.engine = "batched";
  return r;
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeArgs& a) {
  a.llm.family = find_family("llm");
  CLI::App* cmd = app.add_subcommand(
      "serve", "serve arriving requests with a whole model: continuous batching, chunked prefill and paged KV as vLLM v1 "
               "schedules them, each step timed by the llm family; TTFT, TPOT, throughput and goodput at an SLO");
  a.cmd = cmd;
  add_serve_options(cmd, a, false);
  cmd->add_option("--recheck", a.request.recheck, "steps re-run on the reference engine, drawn from the run")->capture_default_str();
  cmd->add_option("--out", a.request.out, "a folder for summary.json, requests.csv, steps.csv and the figures");
  cmd->add_flag("--json", a.json, "print the summary as one JSON object");
  return cmd;
}

CLI::App* add_sweep_serve_command(CLI::App* sweep, SweepServeArgs& a) {
  a.serve.llm.family = find_family("llm");
  CLI::App* cmd = sweep->add_subcommand(
      "serve", "serving runs over lists of arrivals, models, mappings, hardware, batching limits and disaggregation, each as "
               "`serve` runs it; every config's figures and the SLO-aware Pareto front of tokens/s per SIP against per user");
  a.cmd = cmd;
  add_serve_options(cmd, a.serve, true);
  cmd->add_option("--recheck", a.serve.request.recheck, "steps re-run on the reference engine for each mapping")->capture_default_str();
  cmd->add_option("--slo-percentile", a.request.slo_percentile, "the percentile of TTFT and TPOT the SLO holds: 50, 90 or 99")
      ->capture_default_str();
  cmd->add_option("--out", a.request.out, "also write the JSON to FILE, and the front's figure beside it");
  cmd->add_option("--csv", a.request.csv, "also write every config's row to FILE as CSV");
  cmd->add_flag("--json", a.json, "print one JSON object instead of tables");
  return cmd;
}

void cmd_sweep_serve(SweepServeArgs& a) {
  api::ServeSweepRequest r = a.request;
  r.serve = serve_request_of(a.serve);
  const auto t0 = std::chrono::steady_clock::now();
  const nlohmann::json doc = api::sweep_serve(r);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a.json) {
    cli_out() << doc.dump(2) << "\n";
    return;
  }
  const nlohmann::json& n = doc["counts"];
  cli_printf("sweep serve: %lld configs (%lld mappings), %lld served, %lld meet the SLO (P%d TTFT <= %g ms, TPOT <= %g ms); "
             "%.3g s, %.4g configs/s\n",
             n["configs"].get<long long>(), n["mappings"].get<long long>(), n["valid"].get<long long>(), n["meet_slo"].get<long long>(),
             doc["slo"]["percentile"].get<int>(), doc["slo"]["ttft_ms"].get<double>(), doc["slo"]["tpot_ms"].get<double>(), seconds,
             static_cast<double>(n["configs"].get<long long>()) / std::max(seconds, 1e-9));
  cli_printf("front: tokens/s per SIP against tokens/s per user, of the configs that meet the SLO\n");
  // The front's rows: the swept fields that vary, and the figures the SLO and the front read.
  std::vector<Column> cols{Column{"config", "", ColType::any}};
  const nlohmann::json& configs = doc["configs"];
  const std::string pct = std::to_string(doc["slo"]["percentile"].get<int>());
  for (const nlohmann::json& c : doc["columns"]) {
    const std::string key = c.get<std::string>();
    if (key == "config") continue;
    if (key == "status") break;  // the swept fields come before it
    bool varies = false;
    for (const nlohmann::json& row : configs) varies = varies || row[key] != configs[0][key];
    if (varies) cols.push_back(Column{key, "", ColType::any});
  }
  for (const std::string& key : {std::string("sips"), "ttft_p" + pct + "_ms", "tpot_p" + pct + "_ms", std::string("tokens_per_s_per_sip"),
                                std::string("tokens_per_s_per_user"), std::string("goodput_per_s")})
    cols.push_back(Column{key, "", ColType::any});
  Table t(cols);
  for (const nlohmann::json& i : doc["front"]) {
    std::vector<nlohmann::json> row;
    for (const Column& c : cols) row.push_back(configs[i.get<std::size_t>()][c.name]);
    t.add(row);
  }
  cli_out() << t.text();
  std::int64_t checked = 0, identical = 0;
  for (const nlohmann::json& c : doc["recheck"]) checked += c["steps"].get<std::int64_t>() - c["skipped"].get<std::int64_t>(), identical += c["identical"].get<std::int64_t>();
  cli_printf("reference engine: %lld of %lld re-checked steps identical to the picosecond\n", static_cast<long long>(identical),
             static_cast<long long>(checked));
  if (!r.out.empty() && n["valid"].get<long long>() > 0)
    cli_printf("wrote %s and its figure, serve_sweep_front.png, beside it\n", r.out.c_str());
  else if (!r.out.empty())
    cli_printf("wrote %s (no config served: no figure)\n", r.out.c_str());
  if (!r.csv.empty()) cli_printf("wrote %s\n", r.csv.c_str());
}

namespace {

void serve_print_stats(const char* name, const nlohmann::json& s, const char* unit) {
  cli_printf("  %-6s mean %10.4g  p50 %10.4g  p90 %10.4g  p99 %10.4g %s\n", name, s["mean"].get<double>(), s["p50"].get<double>(),
             s["p90"].get<double>(), s["p99"].get<double>(), unit);
}

}  // namespace

void cmd_serve(ServeArgs& a) {
  const api::ServeRequest r = serve_request_of(a);
  const nlohmann::json doc = api::run_serve(r);
  if (a.json) {
    cli_out() << doc.dump(2) << "\n";
    return;
  }
  const nlohmann::json& rep = doc["report"];
  cli_printf("serve: %lld requests in %.3f s (%lld steps), %s\n", doc["workload"]["requests"].get<long long>(),
             rep["seconds"].get<double>(), doc["steps"]["count"].get<long long>(), doc["workload"]["arrivals"].get<std::string>().c_str());
  serve_print_stats("TTFT", rep["ttft_ms"], "ms");
  serve_print_stats("TPOT", rep["tpot_ms"], "ms");
  serve_print_stats("ITL", rep["itl_ms"], "ms");
  serve_print_stats("E2E", rep["e2e_s"], "s");
  cli_printf("  throughput %.2f requests/s, %.1f output tokens/s (%.1f per SIP, %lld SIPs), %.1f tokens/s in all\n",
             rep["requests_per_s"].get<double>(), rep["output_tokens_per_s"].get<double>(),
             rep["output_tokens_per_s_per_sip"].get<double>(), rep["sips"].get<long long>(), rep["total_tokens_per_s"].get<double>());
  cli_printf("  goodput %.2f requests/s (%lld met TTFT <= %g ms and TPOT <= %g ms)\n", rep["goodput_per_s"].get<double>(),
             rep["met_slo"].get<long long>(), doc["slo"]["ttft_ms"].get<double>(), doc["slo"]["tpot_ms"].get<double>());
  cli_printf("  KV cache %lld blocks of %lld tokens, peak use %.1f %%, %lld preemptions\n", doc["limits"]["kv_blocks"].get<long long>(),
             doc["limits"]["kv_block"].get<long long>(), 100.0 * rep["peak_kv_use"].get<double>(), rep["preemptions"].get<long long>());
  const nlohmann::json& en = doc["energy"];
  cli_printf("  energy %.4g J (%.4g dynamic, %.4g static), %.4g J per output token, %.4g W on average\n",
             en["total_j"].get<double>(), en["dynamic_j"].get<double>(), en["static_j"].get<double>(),
             en["j_per_output_token"].get<double>(), en["average_power_w"].get<double>());
  if (!doc["disagg"].is_null())
    cli_printf("  disaggregated: %lld prefill and %lld decode instances, KV transfer mean %.4g ms, p99 %.4g ms\n",
               doc["disagg"]["prefill"].get<long long>(), doc["disagg"]["decode"].get<long long>(),
               doc["disagg"]["kv_transfer_ms"]["mean"].get<double>(), doc["disagg"]["kv_transfer_ms"]["p99"].get<double>());
  const nlohmann::json& rc = doc["recheck"];
  cli_printf("  reference engine: %lld of %lld sampled steps identical to the picosecond (%lld too large to run)\n",
             rc["identical"].get<long long>(), rc["steps"].get<long long>(), rc["skipped"].get<long long>());
  if (!r.out.empty()) cli_printf("  wrote %s/summary.json, requests.csv, steps.csv and figures\n", r.out.c_str());
}

}  // namespace kb
