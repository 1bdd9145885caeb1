// milestone-moe-inference: DeepSeek-V3 (its fp8 weights, latent attention, 256 routed experts
// in 8 groups and a shared one) and Mixtral-8x7B (fp16) on topologies/ring8.yaml (8 SIPs).
// Decode tokens/s per SIP against tokens/s per user over a batch sweep, for expert
// parallelism inside a SIP, across SIPs, and tensor-parallel attention, each point under its
// best mapping; the cost of routing skew and what redundant experts recover; the dispatch's
// and combine's bandwidth against each level's link rate; prefill TTFT against prompt length.
// Every point runs on both engines with one layer (docs/model.md sections 13.11 and 13.12).
#include "milestone_moe_inference.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "host/bench/registry.h"
#include "host/common/error.h"
#include "host/common/parallel.h"
#include "host/common/table.h"
#include "host/families/family.h"
#include "host/study/bench_writer.h"
#include "host/study/study.h"

namespace kb {

const std::vector<MoeStrategy>& moe_strategies() {
  static const std::vector<MoeStrategy> s = {
      {"ep-cube", CollLevel::cube, true}, {"ep-sip", CollLevel::sip, true}, {"tp", CollLevel::sip, false}};
  return s;
}
std::vector<std::string> moe_milestone_models() { return {"deepseek-v3", "mixtral-8x7b"}; }
std::vector<std::int64_t> moe_milestone_batches() { return {8, 16, 32, 64, 128, 256}; }
std::vector<std::string> moe_milestone_skews() { return {"balanced", "zipf:0", "zipf:1.0", "zipf:1.2"}; }
std::vector<std::int64_t> moe_milestone_redundant(const std::string& model) {
  return model == "deepseek-v3" ? std::vector<std::int64_t>{0, 8, 32} : std::vector<std::int64_t>{0, 8};
}
std::vector<std::int64_t> moe_milestone_prompts() { return {256, 512, 1024, 2048, 4096}; }

LlmConfig moe_model_config(const TopologySpec& topo, const std::string& model) {
  const Family& f = family("llm");
  const std::vector<unsigned char> raw = base_config(f, topo);
  LlmConfig c{};
  std::copy(raw.begin(), raw.end(), reinterpret_cast<unsigned char*>(&c));
  for (const PresetDesc& p : f.presets) {
    if (p.flag != "--model") continue;
    for (const auto& [name, text] : p.expand(model)) {
      const AxisDesc* a = f.axis(name);
      KB_INTERNAL_CHECK(a != nullptr, "--model gives an unknown axis " + name);
      const auto it = std::find(a->names.begin(), a->names.end(), text);
      set_int(&c, a->offset, it != a->names.end() ? it - a->names.begin() : std::stoll(text));
    }
  }
  c.phase = static_cast<std::int64_t>(LlmPhase::decode);
  c.batch = 1, c.context = 4096, c.prompt = 1;
  c.tp = 1, c.tp_level = static_cast<std::int64_t>(CollLevel::cube), c.pp = 1, c.microbatches = 1;
  c.tp_algo = static_cast<std::int64_t>(CollAlgo::ring), c.attention_case = 4, c.layers_run = 0;
  c.kernel_tuning = static_cast<std::int64_t>(LlmKernelTuning::best), c.tp_channels = 1;
  return c;
}

void moe_route(LlmConfig& c, const std::string& routing) {
  family("llm").prepare({{"--routing", routing}, {"--routing-seed", "1"}}, {}, &c);
}

std::int64_t moe_sips_used(const LlmConfig& c) { return llm_ranks(c.hw, llm_run_of(c)).sips_per_stage * c.pp; }

MoePick moe_pick_mapping(const LlmConfig& base, const MoeStrategy& s, const std::string& routing) {
  std::vector<LlmConfig> cand;
  const bool prefill = base.phase == static_cast<std::int64_t>(LlmPhase::prefill);
  for (std::int64_t tp = 2; tp <= 8; tp *= 2)
    for (const CollLevel level : {CollLevel::cube, CollLevel::sip})
      for (std::int64_t pp = 1; pp <= 8; pp *= 2)
        for (std::int64_t mb = 1; mb <= pp; mb *= pp > 1 ? pp : 2)
          for (const CollAlgo algo : {CollAlgo::ring, CollAlgo::hd})
            for (std::int64_t k = 1; k <= (prefill ? 1 : 4); ++k) {
              if ((s.attention_dp && level != s.level) || (s.attention_dp && algo != CollAlgo::ring)) continue;
              if (base.batch % mb != 0) continue;
              LlmConfig c = base;
              c.tp = tp, c.tp_level = static_cast<std::int64_t>(level), c.pp = pp, c.microbatches = mb;
              c.tp_algo = static_cast<std::int64_t>(algo), c.attention_case = k, c.attention_dp = s.attention_dp;
              moe_route(c, routing);
              cand.push_back(c);
            }
  std::vector<LlmResult> res(cand.size());
  parallel_for(cand.size(), [&](std::size_t i) { res[i] = llm_model(cand[i]); });
  MoePick p;
  p.candidates = static_cast<std::int64_t>(cand.size());
  for (std::size_t i = 0; i < cand.size(); ++i) {
    if (res[i].status != kLlmOk) continue;
    ++p.valid;
    if (p.best_ps < 0 || res[i].model_latency_ps < p.best_ps) p.best = cand[i], p.best_ps = res[i].model_latency_ps;
  }
  return p;
}

namespace {

enum class Series { decode, skew, prefill };
const char* to_string(Series s) { return s == Series::decode ? "decode" : s == Series::skew ? "skew" : "prefill"; }

struct Point {
  Series series;
  std::string model, strategy, routing;
  LlmConfig config;  // valid: its mapping; invalid: the base (no mapping fits)
  bool fits;
  std::int64_t candidates, valid;
};

std::vector<Point> points(const TopologySpec& topo) {
  std::vector<Point> out;
  for (const std::string& model : moe_milestone_models()) {
    const LlmConfig base = moe_model_config(topo, model);
    LlmConfig skew_mapping{};
    bool have_skew = false;
    for (const MoeStrategy& s : moe_strategies())
      for (std::int64_t b : moe_milestone_batches()) {
        LlmConfig c = base;
        c.batch = b;
        const MoePick p = moe_pick_mapping(c, s, "uniform");
        out.push_back({Series::decode, model, s.name, "uniform", p.best_ps >= 0 ? p.best : c, p.best_ps >= 0, p.candidates, p.valid});
        if (std::string(s.name) == "ep-sip" && b == 128 && p.best_ps >= 0) skew_mapping = p.best, have_skew = true;
      }
    // Skew and redundant experts, on the ep-sip mapping of batch 128.
    for (const std::string& skew : moe_milestone_skews())
      for (std::int64_t r : moe_milestone_redundant(model)) {
        LlmConfig c = have_skew ? skew_mapping : base;
        c.redundant_experts = r;
        moe_route(c, skew);
        const bool fits = have_skew && llm_check(c) == kLlmOk;
        out.push_back({Series::skew, model, "ep-sip", skew, c, fits, 1, fits ? 1 : 0});
      }
    // Prefill: 8 prompts (one a rank of 8), the faster of ep-sip and tp.
    for (std::int64_t t : moe_milestone_prompts()) {
      LlmConfig c = base;
      c.phase = static_cast<std::int64_t>(LlmPhase::prefill), c.batch = 8, c.prompt = t;
      MoePick best;
      std::string name = "ep-sip";
      std::int64_t cands = 0, valid = 0;
      for (const MoeStrategy& s : moe_strategies()) {
        if (std::string(s.name) == "ep-cube") continue;
        const MoePick p = moe_pick_mapping(c, s, "uniform");
        cands += p.candidates, valid += p.valid;
        if (p.best_ps >= 0 && (best.best_ps < 0 || p.best_ps < best.best_ps)) best = p, name = s.name;
      }
      out.push_back({Series::prefill, model, name, "uniform", best.best_ps >= 0 ? best.best : c, best.best_ps >= 0, cands, valid});
    }
  }
  return out;
}

double step_ms(const nlohmann::json& row) { return row["step_ps"].get<double>() / 1e9; }
nlohmann::json mapping_json(const LlmConfig& c) {
  return {{"tp", c.tp},
          {"tp_level", kCollLevelNames[c.tp_level]},
          {"attention", c.attention_dp ? "dp" : "tp"},
          {"pp", c.pp},
          {"microbatches", c.microbatches},
          {"tp_algo", kCollAlgoNames[c.tp_algo]},
          {"attention_case", c.attention_case},
          {"sips", moe_sips_used(c)}};
}
std::string mapping_name(const LlmConfig& c) {
  std::string s = (c.attention_dp ? "ep " : "tp ") + std::to_string(c.tp) + " over " + kCollLevelNames[c.tp_level] + "s";
  if (c.pp > 1) s += " x pp " + std::to_string(c.pp) + (c.microbatches > 1 ? " (" + std::to_string(c.microbatches) + " mb)" : "");
  return s;
}

// The dispatch's and combine's bandwidth of a layer, from their kernels: a rank's bytes over
// the all-to-all's time (algbw), and the bytes it sends to the others ((R - 1) / R of them).
nlohmann::json bandwidth_row(const Point& p, const nlohmann::json& kernels, const HwConfig& h) {
  nlohmann::json row = {{"model", p.model}, {"strategy", p.strategy}, {"batch", p.config.batch},
                        {"tokens", p.config.batch / p.config.microbatches},  // a micro-batch's, which the all-to-alls move
                        {"level", kCollLevelNames[p.config.tp_level]}, {"ranks", p.config.tp}};
  row["link_gbps"] = p.config.tp_level == static_cast<std::int64_t>(CollLevel::sip) ? h.sip_link.bandwidth_gbps
                                                                                    : h.cube_link.bandwidth_gbps;
  for (const char* name : {"moe_dispatch", "moe_combine"})
    for (const nlohmann::json& k : kernels)
      if (k["name"] == name && k["part"] == "layer") {
        const double bytes = k["bytes"].get<double>(), ps = k["latency_ps"].get<double>(), R = static_cast<double>(p.config.tp);
        const std::string key = std::string(name).substr(4);
        row[key + "_bytes"] = k["bytes"];
        row[key + "_ps"] = k["latency_ps"];
        row[key + "_algbw_gbps"] = ps > 0 ? bytes / ps * 1000.0 : 0.0;
        row[key + "_busbw_gbps"] = ps > 0 ? bytes * (R - 1) / R / ps * 1000.0 : 0.0;
        break;
      }
  return row;
}

void run_moe_milestone(BenchContext& ctx) {
  std::ostream& out = *ctx.out;
  const auto t_start = std::chrono::steady_clock::now();
  const TopologySpec& topo = ctx.topology;
  const std::vector<Point> pts = points(topo);
  const double pick_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  const Family& fam = family("llm");
  Study study(fam, resolve_backend(ctx.backend_request));
  for (const Point& p : pts) {
    LlmConfig c = p.config;
    c.layers_run = 1;  // both engines run one layer a stage; the step counts the rest (section 13.5)
    study.add_config(c, {to_string(p.series), p.model, p.strategy});
  }
  study.run(Rejected::invalid);
  study.require_parity();
  const Table table = study.table({{"series", "", ColType::text}, {"model", "", ColType::text}, {"strategy", "", ColType::text}}, true);
  auto get = [&](std::size_t i, const char* name) { return fam.column(name)->get(study.config(i), study.batched(i)); };

  nlohmann::json doc = bench_document(ctx, study);
  doc["version"] = 1;
  doc["models"] = moe_milestone_models();
  doc["batch_values"] = moe_milestone_batches();
  doc["prompt_values"] = moe_milestone_prompts();
  doc["skews"] = moe_milestone_skews();
  doc["strategies"] = {"ep-cube", "ep-sip", "tp"};
  nlohmann::json decode = nlohmann::json::array(), skew = nlohmann::json::array(), prefill = nlohmann::json::array(),
                 bandwidth = nlohmann::json::array();
  Table dec({{"model", "", ColType::text}, {"strategy", "", ColType::text}, {"batch", "", ColType::integer},
             {"mapping", "", ColType::text}, {"tpot_ms", "ms", ColType::text}, {"tok_s_user", "1/s", ColType::text},
             {"tok_s_sip", "1/s", ColType::text}});
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Point& p = pts[i];
    const LlmConfig& c = p.config;
    const bool ok = p.fits && study.valid(i);
    nlohmann::json row = {{"model", p.model}, {"strategy", p.strategy}, {"routing", p.routing},
                          {"status", ok ? std::string("valid") : std::string(kLlmPlaceStatusNames[study.batched_as<LlmResult>(i).status])},
                          {"candidates", p.candidates}, {"valid_mappings", p.valid}};
    if (ok) {
      row["mapping"] = mapping_json(c);
      for (const char* k : {"step_ps", "tokens_per_s", "expert_ps", "dispatch_ps", "combine_ps", "gemm_ps", "attention_ps",
                            "vector_ps", "allreduce_ps", "transfer_ps", "load_imbalance", "experts_touched", "rank_tokens"})
        row[k] = get(i, k);
      const double step = static_cast<double>(study.batched_as<LlmResult>(i).model_latency_ps);
      row["tokens_per_s_per_sip"] = row["tokens_per_s"].get<double>() / static_cast<double>(moe_sips_used(c));
      row["tokens_per_s_per_user"] = 1e12 / step;
    } else {
      row["why"] = p.fits ? llm_status_message(study.batched_as<LlmResult>(i).status, c)
                          : "no mapping of this strategy fits (" + std::to_string(p.candidates) + " tried)";
    }
    switch (p.series) {
      case Series::decode:
        row["batch"] = c.batch, row["context"] = c.context;
        decode.push_back(row);
        if (ok) {
          dec.add({p.model, p.strategy, c.batch, mapping_name(c), fixed_digits(step_ms(row), 2), fixed_digits(row["tokens_per_s_per_user"].get<double>(), 1),
                   fixed_digits(row["tokens_per_s_per_sip"].get<double>(), 1)});
          if (c.attention_dp) bandwidth.push_back(bandwidth_row(p, fam.kernels(study.config(i)), c.hw));
        }
        break;
      case Series::skew:
        row["batch"] = c.batch, row["redundant_experts"] = c.redundant_experts;
        skew.push_back(row);
        break;
      case Series::prefill:
        row["batch"] = c.batch, row["prompt"] = c.prompt;
        prefill.push_back(row);
        break;
    }
  }
  doc["decode"] = decode, doc["skew"] = skew, doc["bandwidth"] = bandwidth, doc["prefill"] = prefill;
  doc["configs"] = table.json();

  out << "DeepSeek-V3 (fp8) and Mixtral-8x7B (fp16) on " << topo.name << " (" << topo.hw().sips << " SIPs), decode at context "
      << pts.front().config.context << ", each point under its strategy's best mapping (uniform routing, seed 1):\n"
      << dec.text("  ");
  for (const nlohmann::json& s : skew)
    if (s["status"] == "valid" && s["redundant_experts"] == 0)
      out << "  skew " << s["model"].get<std::string>() << " " << s["routing"].get<std::string>() << ": tpot "
          << fixed_digits(step_ms(s), 2) << " ms, load imbalance " << fixed_digits(s["load_imbalance"].get<double>(), 2) << "\n";
  for (const nlohmann::json& p : prefill)
    if (p["status"] == "valid")
      out << "  prefill " << p["model"].get<std::string>() << " 8 x " << p["prompt"] << " tokens: ttft " << fixed_digits(step_ms(p), 1)
          << " ms (" << p["strategy"].get<std::string>() << ")\n";
  out << study.parity_line("points");
  if (study.invalid()) out << "; " << study.invalid() << " points fit no mapping (the JSON says why)";
  out << "\ntime: mapping search " << fixed_digits(pick_s, 2) << " s; batched " << fixed_digits(study.batched_seconds() * 1e3, 1)
      << " ms; reference " << fixed_digits(study.reference_seconds(), 2) << " s for " << pts.size() << " points\n";
  write_bench(ctx, doc, table);
  out << "wrote " << bench_json_path(ctx) << ", " << ctx.bench->csv() << " and 5 figures to " << ctx.out_dir << " in "
      << fixed_digits(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(), 1) << " s\n";
}

}  // namespace

KB_BENCH([] {
  BenchInfo b;
  b.name = "milestone-moe-inference";
  b.description =
      "DeepSeek-V3 (fp8) and Mixtral-8x7B on ring8 (8 SIPs): decode tokens/s per SIP against tokens/s per user for "
      "expert parallelism inside a SIP, across SIPs and tensor-parallel attention; routing skew and redundant experts; "
      "dispatch and combine bandwidth against link rates; prefill TTFT against prompt; both engines";
  b.axes = {"model", "strategy", "batch", "routing", "redundant_experts", "prompt"};
  b.domain = "moe_inference";
  b.fn = run_moe_milestone;
  b.json = "moe_inference.json";
  b.schema = "kernbench-gpu/moe-inference";
  b.schema_version = "1.0.0";
  b.plot = "plot_moe.py";
  b.topology = "ring8.yaml";
  return b;
}());

}  // namespace kb
