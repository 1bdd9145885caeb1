// milestone-llm-inference: LLaMA-3.1-70B on topologies/ring8.yaml (8 SIPs, 512 PEs). Decode
// against batch at two contexts and prefill against prompt length, each point under the best
// mapping of its own (every tensor-parallel degree and level, pipeline depth and
// micro-batching, allreduce algorithm and attention case, on the batched model); the step's
// breakdown at batch 1 and 64; tokens/s of every (tp, pp) mapping; and a design question on hardware axes (HBM bandwidth, PE array size). Every
// point runs on both engines with one layer (the rest follows, docs/model.md section 13.5).
#include <nlohmann/json.hpp>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "host/bench/registry.h"
#include "host/common/error.h"
#include "host/common/parallel.h"
#include "host/common/table.h"
#include "host/families/family.h"
#include "host/families/llm/llm_program.h"
#include "host/llm/model_file.h"
#include "host/study/bench_writer.h"
#include "host/study/study.h"
#include "milestone_llm_inference.h"

namespace kb {

std::vector<std::int64_t> llm_milestone_batches() { return {1, 2, 4, 8, 16, 32, 64, 128, 256}; }
std::vector<std::int64_t> llm_milestone_contexts() { return {4096, 32768}; }
std::vector<std::int64_t> llm_milestone_prompts() { return {512, 1024, 2048, 4096, 8192, 16384, 32768}; }
std::vector<std::int64_t> llm_milestone_hbm_gbps() { return {410, 819, 1638, 3277}; }
std::vector<std::int64_t> llm_milestone_arrays() { return {16, 32, 64}; }

LlmConfig llm_milestone_base(const TopologySpec& topo) {
  const LlmShape s = load_llm_model("llama-3.1-70b").shape;
  LlmConfig c{};
  c.hw = topo.hw();
  c.hidden = s.hidden, c.intermediate = s.intermediate, c.heads = s.heads, c.kv_heads = s.kv_heads;
  c.head_dim = s.head_dim, c.layers = s.layers, c.vocab = s.vocab, c.tied = s.tied;
  c.weight_bytes = c.kv_bytes = 2;
  c.phase = static_cast<std::int64_t>(LlmPhase::decode);
  c.batch = 1, c.context = 4096, c.prompt = 2048;
  c.tp = 8, c.tp_level = static_cast<std::int64_t>(CollLevel::sip), c.pp = 1, c.microbatches = 1;
  c.tp_algo = static_cast<std::int64_t>(CollAlgo::ring), c.attention_case = 4;
  c.layers_run = 0;
  return c;
}

LlmPick llm_pick_mapping(const LlmConfig& base, bool fixed_tp) {
  std::vector<LlmConfig> cand;
  const bool prefill = base.phase == static_cast<std::int64_t>(LlmPhase::prefill);
  for (std::int64_t tp = 1; tp <= 64; tp *= 2)
    for (const CollLevel level : {CollLevel::cube, CollLevel::sip})
      for (std::int64_t pp = 1; pp <= 8; pp *= 2)
        for (std::int64_t mb = 1; mb <= pp; mb *= pp > 1 ? pp : 2)  // one micro-batch, or pp of them
          for (std::int64_t algo = 0; algo < kCollAlgos; ++algo)
            for (std::int64_t k = 1; k <= (prefill ? 1 : 4); ++k) {
              if (base.batch % mb != 0 || !coll_algo_runs(algo, static_cast<std::int64_t>(CollOp::allreduce))) continue;
              LlmConfig c = base;
              if (!fixed_tp) c.tp = tp, c.tp_level = static_cast<std::int64_t>(level), c.pp = pp;
              else if (tp > 1 || level != CollLevel::cube || pp > 1) continue;
              c.microbatches = mb, c.tp_algo = algo, c.attention_case = k, c.layers_run = 0;
              cand.push_back(c);
            }
  std::vector<LlmResult> res(cand.size());
  parallel_for(cand.size(), [&](std::size_t i) { res[i] = llm_model(cand[i]); });
  LlmPick p;
  p.candidates = static_cast<std::int64_t>(cand.size());
  std::int32_t furthest = -1;
  for (std::size_t i = 0; i < cand.size(); ++i) {
    if (res[i].status != kLlmOk) {
      if (p.best_ps < 0 && res[i].status >= furthest) furthest = res[i].status, p.best = cand[i];
      continue;
    }
    ++p.valid;
    const ps_t t = res[i].model_latency_ps;
    if (p.best_ps < 0 || t < p.best_ps) p.best = cand[i], p.best_ps = t;
  }
  if (p.best_ps < 0) return p;  // p.best: the candidate that got furthest, for its status
  for (std::size_t i = 0; i < cand.size(); ++i)
    if (res[i].status == kLlmOk && (cand[i].tp != p.best.tp || cand[i].tp_level != p.best.tp_level || cand[i].pp != p.best.pp) &&
        (p.runner_ps < 0 || res[i].model_latency_ps < p.runner_ps))
      p.runner = cand[i], p.runner_ps = res[i].model_latency_ps;
  return p;
}

namespace {

enum class Series { decode, prefill, mapping, design };
const char* to_string(Series s) {
  switch (s) {
    case Series::decode: return "decode";
    case Series::prefill: return "prefill";
    case Series::mapping: return "mapping";
    default: return "design";
  }
}

struct Point {
  Series series;
  LlmPick pick;
};

std::vector<Point> points(const TopologySpec& topo) {
  const LlmConfig base = llm_milestone_base(topo);
  std::vector<Point> out;
  auto add = [&](Series s, const LlmConfig& c, bool fixed_tp) { out.push_back({s, llm_pick_mapping(c, fixed_tp)}); };
  for (std::int64_t ctx : llm_milestone_contexts())
    for (std::int64_t b : llm_milestone_batches()) {
      LlmConfig c = base;
      c.batch = b, c.context = ctx;
      add(Series::decode, c, false);
    }
  for (std::int64_t t : llm_milestone_prompts()) {
    LlmConfig c = base;
    c.phase = static_cast<std::int64_t>(LlmPhase::prefill), c.prompt = t;
    add(Series::prefill, c, false);
  }
  for (std::int64_t b : {1, 64})
    for (std::int64_t pp = 1; pp <= 8; pp *= 2)
      for (std::int64_t tp = 1; tp <= 8; tp *= 2) {
        LlmConfig c = base;
        c.batch = b, c.tp = tp, c.tp_level = static_cast<std::int64_t>(CollLevel::cube), c.pp = pp;
        // Every algorithm, case and micro-batching of this (tp, pp) over cubes.
        LlmPick p = llm_pick_mapping(c, true);
        if (p.best_ps < 0) p.best.tp = tp, p.best.tp_level = c.tp_level, p.best.pp = pp;
        out.push_back({Series::mapping, p});
      }
  for (std::int64_t array : llm_milestone_arrays())
    for (std::int64_t bw : llm_milestone_hbm_gbps()) {
      LlmConfig c = base;
      c.batch = 64;
      c.hw.hbm_bandwidth_gbps = bw, c.hw.matrix_rows = c.hw.matrix_cols = array;
      add(Series::design, c, false);
    }
  return out;
}

std::string ms(ps_t ps) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << static_cast<double>(ps) / 1e9;
  return o.str();
}
std::string mapping_name(const LlmConfig& c) {
  std::string s = "tp " + std::to_string(c.tp) + " over " + kCollLevelNames[c.tp_level] + "s";
  if (c.pp > 1) s += " x pp " + std::to_string(c.pp) + (c.microbatches > 1 ? " (" + std::to_string(c.microbatches) + " micro-batches)" : "");
  if (c.tp > 1) s += std::string(", ") + kCollAlgoNames[c.tp_algo];
  if (c.phase == static_cast<std::int64_t>(LlmPhase::decode)) s += ", case " + std::to_string(c.attention_case);
  return s;
}
nlohmann::json mapping_json(const LlmConfig& c) {
  return {{"tp", c.tp},         {"tp_level", kCollLevelNames[c.tp_level]}, {"pp", c.pp}, {"microbatches", c.microbatches},
          {"tp_algo", kCollAlgoNames[c.tp_algo]}, {"attention_case", c.attention_case}};
}

// Why the best mapping beats the best of another (tp, level), in the step's own terms.
std::string why(const LlmPick& p) {
  const LlmResult a = llm_model(p.best);
  const LlmBounds ab = llm_bounds(p.best.hw, llm_shape_of(p.best), llm_run_of(p.best));
  std::ostringstream o;
  o << mapping_name(p.best) << ": " << ms(a.model_latency_ps) << " ms, "
    << fixed_digits(static_cast<double>(a.model_latency_ps) / static_cast<double>(std::max(ab.memory_ps, ab.compute_ps)), 2)
    << "x its " << (ab.memory_ps >= ab.compute_ps ? "memory" : "compute") << " bound; GEMMs " << ms(a.gemm_ps)
    << " ms, attention " << ms(a.attention_ps) << ", vector " << ms(a.vector_ps) << ", allreduces " << ms(a.allreduce_ps);
  if (p.best.pp > 1) o << ", stage transfers " << ms(a.transfer_ps);
  if (p.runner_ps < 0) return o.str() + " (no other tp, level and pp fits)";
  const LlmResult b = llm_model(p.runner);
  o << ". Next: " << mapping_name(p.runner) << ", " << ms(b.model_latency_ps) << " ms ("
    << fixed_digits(static_cast<double>(b.model_latency_ps) / static_cast<double>(a.model_latency_ps), 2) << "x): GEMMs "
    << ms(b.gemm_ps) << ", attention " << ms(b.attention_ps) << ", allreduces " << ms(b.allreduce_ps);
  if (p.runner.pp > 1) o << ", stage transfers " << ms(b.transfer_ps);
  return o.str();
}

void run_llm_milestone(BenchContext& ctx) {
  std::ostream& out = *ctx.out;
  const auto t_start = std::chrono::steady_clock::now();
  const TopologySpec& topo = ctx.topology;
  const std::vector<Point> pts = points(topo);
  const double pick_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  const Family& fam = family("llm");
  Study study(fam, resolve_backend(ctx.backend_request));
  for (const Point& p : pts) {
    LlmConfig c = p.pick.best;
    c.layers_run = 1;  // both engines run one layer; the step counts it (section 13.5)
    study.add_config(c, {to_string(p.series)});
  }
  study.run(Rejected::invalid);  // a point no mapping fits is reported, not simulated
  study.require_parity();
  const Table table = study.table({{"series", "", ColType::text}}, true);

  auto get = [&](std::size_t i, const char* name) {
    return fam.column(name)->get(study.config(i), study.batched(i));
  };
  auto status = [&](std::size_t i) {
    return std::string(kLlmPlaceStatusNames[study.batched_as<LlmResult>(i).status]);
  };
  nlohmann::json doc = bench_document(ctx, study);
  doc["version"] = 1;
  doc["model"] = "llama-3.1-70b";
  doc["kernel_tuning"] = "best";  // each GEMM kernel on its tuned tiling (--kernel-tuning)
  doc["batch_values"] = llm_milestone_batches();
  doc["context_values"] = llm_milestone_contexts();
  doc["prompt_values"] = llm_milestone_prompts();
  nlohmann::json decode = nlohmann::json::array(), prefill = nlohmann::json::array(), mapping = nlohmann::json::array(),
                 design = nlohmann::json::array(), best = nlohmann::json::array(), breakdown = nlohmann::json::array();
  Table dec({{"context", "", ColType::integer}, {"batch", "", ColType::integer}, {"mapping", "", ColType::text},
             {"tpot_ms", "ms", ColType::text}, {"tokens_per_s", "1/s", ColType::real}, {"x_bound", "", ColType::real}});
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const LlmConfig& c = pts[i].pick.best;
    const bool ok = study.valid(i);
    const LlmBounds bnd = llm_bounds(c.hw, llm_shape_of(c), llm_run_of(c));
    nlohmann::json row = {{"status", status(i)}, {"mapping", mapping_json(c)}, {"candidates", pts[i].pick.candidates},
                          {"valid_mappings", pts[i].pick.valid}};
    for (const char* k : {"step_ps", "tokens_per_s", "gemm_ps", "attention_ps", "vector_ps", "allreduce_ps", "transfer_ps", "mfu", "mbu",
                          "compute_bound_ps", "memory_bound_ps", "x_bound"})
      row[k] = ok ? get(i, k) : nlohmann::json();
    if (!ok) row["why"] = llm_status_message(study.batched_as<LlmResult>(i).status, c);
    else row["kernels"] = fam.kernels(study.config(i));  // each GEMM's tuned tiling
    switch (pts[i].series) {
      case Series::decode:
        row["batch"] = c.batch, row["context"] = c.context;
        row["memory_bound_ps"] = bnd.memory_ps;  // drawn even where no mapping fits
        decode.push_back(row);
        if (ok) {
          dec.add({c.context, c.batch, mapping_name(c), ms(study.batched_as<LlmResult>(i).model_latency_ps),
                   get(i, "tokens_per_s"), get(i, "x_bound")});
          const std::string w = why(pts[i].pick);
          best.push_back({{"batch", c.batch}, {"context", c.context}, {"mapping", mapping_json(c)}, {"why", w}});
          if (c.context == 4096 && (c.batch == 1 || c.batch == 64)) breakdown.push_back(row);
        }
        break;
      case Series::prefill:
        row["prompt"] = c.prompt;
        prefill.push_back(row);
        break;
      case Series::mapping:
        row["batch"] = c.batch;
        mapping.push_back(row);
        break;
      case Series::design:
        row["hbm_bandwidth_gbps"] = c.hw.hbm_bandwidth_gbps, row["matrix"] = c.hw.matrix_rows;
        design.push_back(row);
        break;
    }
  }
  doc["decode"] = decode, doc["prefill"] = prefill, doc["breakdown"] = breakdown, doc["mappings"] = mapping;
  doc["design"] = design, doc["best"] = best;
  doc["configs"] = table.json();

  out << "LLaMA-3.1-70B (fp16) on " << topo.name << " (" << topo.hw().sips << " SIPs, " << topo.hw().total_pes()
      << " PEs), each point under its best mapping:\n"
      << dec.text("  ");
  for (const nlohmann::json& p : prefill)
    if (p["status"] == "valid")
      out << "  prefill " << p["prompt"] << " tokens: ttft " << ms(p["step_ps"].get<std::int64_t>()) << " ms, "
          << fixed_digits(p["tokens_per_s"].get<double>(), 0) << " tokens/s, mfu " << fixed_digits(p["mfu"].get<double>(), 3) << " ("
          << "tp " << p["mapping"]["tp"] << " over " << p["mapping"]["tp_level"].get<std::string>() << "s)\n";
  out << "best mapping per batch (context 4096), and why:\n";
  for (const nlohmann::json& b : best)
    if (b["context"] == 4096) out << "  batch " << b["batch"] << ": " << b["why"].get<std::string>() << "\n";
  // One decode layer's trace, at batch 1 under its best mapping.
  {
    LlmConfig c = pts[0].pick.best;
    c.layers_run = 1;
    const std::string path = ctx.out_dir + "/trace_decode_layer.json";
    llm_reference(c, &path);
    doc["trace"] = "trace_decode_layer.json";
  }
  out << study.parity_line("points");
  if (study.invalid()) out << "; " << study.invalid() << " points fit no mapping (the JSON says why)";
  out << "\ntime: mapping search " << fixed_digits(pick_s, 2) << " s; batched " << fixed_digits(study.batched_seconds() * 1e3, 1)
      << " ms; reference " << fixed_digits(study.reference_seconds(), 2) << " s for " << pts.size() << " points\n";
  write_bench(ctx, doc, table);
  out << "wrote " << bench_json_path(ctx) << ", " << ctx.bench->csv() << ", a trace and 5 figures to " << ctx.out_dir
      << " in " << fixed_digits(std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(), 1) << " s\n";
}

}  // namespace

KB_BENCH([] {
  BenchInfo b;
  b.name = "milestone-llm-inference";
  b.description =
      "LLaMA-3.1-70B on ring8 (8 SIPs): decode TPOT and tokens/s against batch at 4K and 32K context, prefill TTFT "
      "against prompt (512-32K), each under its best mapping; the step's breakdown, every mapping's tokens/s, and "
      "tokens/s against HBM bandwidth and PE array size; both engines";
  b.axes = {"batch", "context", "prompt", "tp", "tp_level", "pp", "hbm_bandwidth_gbps", "matrix"};
  b.domain = "llm_inference";
  b.fn = run_llm_milestone;
  b.json = "llm_inference.json";
  b.schema = "kernbench-gpu/llm-inference";
  b.schema_version = "1.1.0";
  b.plot = "plot_llm.py";
  b.topology = "ring8.yaml";
  return b;
}());

}  // namespace kb
