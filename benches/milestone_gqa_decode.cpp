// milestone-gqa-decode-4cases: decode attention of one KV-head group of LLaMA-3.1-70B on one
// SIP of cubes x PEs under four KV-cache shardings (the original study's panels, all four),
// each on both engines (parity), against two bounds; then latency against S_kv and batch per
// case, where the best case changes, and one Perfetto trace per case.
#include <nlohmann/json.hpp>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "host/bench/registry.h"
#include "host/study/document.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/common/table.h"
#include "host/families/family.h"
#include "host/kernels/decode_program.h"
#include "host/parity/figures.h"
#include "milestone_gqa_decode.h"

namespace kb {

DecodeConfig decode_headline(const TopologySpec& topo, std::int64_t decode_case) {
  DecodeConfig c{};
  c.hw = topo.hw();
  c.decode_case = decode_case;
  c.s_kv = 131072, c.batch = 1, c.h_q = 8, c.h_kv = 1, c.d_head = 128;
  c.chunk = 0, c.allreduce = 0;
  decode_complete(c);
  return c;
}

std::vector<std::int64_t> decode_milestone_s_kv() {
  std::vector<std::int64_t> s;
  for (std::int64_t v = 1024; v <= (INT64_C(1) << 20); v *= 2) s.push_back(v);
  return s;
}
std::vector<std::int64_t> decode_milestone_batches() { return {1, 2, 4, 8, 16, 32, 64}; }

namespace {

enum class Series { panel, allreduce, s_kv, batch };
const char* to_string(Series s) {
  switch (s) {
    case Series::panel: return "panel";
    case Series::allreduce: return "allreduce";
    case Series::s_kv: return "s_kv";
    default: return "batch";
  }
}

struct Point {
  Series series;
  DecodeConfig c;
};

std::vector<Point> points(const TopologySpec& topo) {
  std::vector<Point> out;
  for (std::int64_t k = 1; k <= 4; ++k) out.push_back({Series::panel, decode_headline(topo, k)});
  DecodeConfig ar = decode_headline(topo, 4);
  ar.allreduce = 1, ar.chunk = 0;
  decode_complete(ar);
  out.push_back({Series::allreduce, ar});
  for (std::int64_t k = 1; k <= 4; ++k)
    for (std::int64_t s : decode_milestone_s_kv()) {
      DecodeConfig c = decode_headline(topo, k);
      c.s_kv = s, c.chunk = 0;
      decode_complete(c);
      out.push_back({Series::s_kv, c});
    }
  for (std::int64_t k = 1; k <= 4; ++k)
    for (std::int64_t b : decode_milestone_batches()) {
      DecodeConfig c = decode_headline(topo, k);
      c.batch = b, c.chunk = 0;
      decode_complete(c);
      out.push_back({Series::batch, c});
    }
  return out;
}

}  // namespace

std::vector<DecodeConfig> decode_milestone_configs(const TopologySpec& topo) {
  std::vector<DecodeConfig> out;
  for (const Point& p : points(topo)) out.push_back(p.c);
  return out;
}

namespace {

const char* kJson = "sweep.json";
const char* kPlot = "plot_decode.py";

std::string us(ps_t ps) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << static_cast<double>(ps) / 1e6;
  return o.str();
}
std::string mib(std::int64_t b) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << static_cast<double>(b) / (1 << 20);
  return o.str();
}

// Where the best case changes along a series: [{"at": value, "case": k}, ...] from the first value.
nlohmann::json best_runs(const std::vector<Point>& pts, const std::vector<DecodeResult>& res, Series s) {
  std::map<std::int64_t, std::pair<ps_t, std::int64_t>> best;  // x -> (latency, case)
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].series != s || res[i].status != kDecOk) continue;
    const std::int64_t x = s == Series::s_kv ? pts[i].c.s_kv : pts[i].c.batch;
    auto it = best.find(x);
    if (it == best.end() || res[i].latency_ps < it->second.first) best[x] = {res[i].latency_ps, pts[i].c.decode_case};
  }
  nlohmann::json out = nlohmann::json::array();
  std::int64_t last = -1;
  for (const auto& [x, b] : best)
    if (b.second != last) {
      out.push_back({{"from", x}, {"case", b.second}});
      last = b.second;
    }
  return out;
}

void run_decode_milestone(BenchContext& ctx) {
  std::ostream& out = *ctx.out;
  const auto t_start = std::chrono::steady_clock::now();
  const Family& fam = family("decode");
  const TopologySpec& topo = ctx.topology;
  const BackendKind backend = resolve_backend(ctx.backend_request);
  const std::vector<Point> pts = points(topo);
  std::vector<DecodeConfig> configs;
  for (const Point& p : pts) configs.push_back(p.c);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<DecodeResult> results = eval<DecodeModel>(backend, configs);
  const auto t1 = std::chrono::steady_clock::now();

  std::vector<Column> cols{{"series", "", ColType::text}, {"panel", "", ColType::text}};
  for (const Column& c : config_columns(fam)) cols.push_back(c);
  for (const Column& c : result_columns(fam)) cols.push_back(c);
  cols.push_back({"reference_latency_ps", "ps", ColType::integer});
  cols.push_back({"parity", "", ColType::boolean});
  Table table(cols);
  std::size_t mismatches = 0, invalid = 0;
  std::string first_mismatch;
  double ref_s[5] = {0, 0, 0, 0, 0};
  std::vector<DecodeResult> refs(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const DecodeConfig& c = pts[i].c;
    const DecodeResult& r = results[i];
    if (r.status != kDecOk) {
      // A point the SRAM or HBM cannot hold is reported, not simulated.
      if (decode_check(c) != r.status) throw InternalError("decode: the model's status differs from the check", __FILE__, __LINE__);
      ++invalid;
      continue;
    }
    const auto r0 = std::chrono::steady_clock::now();
    refs[i] = decode_reference(c, nullptr);
    if (pts[i].series == Series::panel)
      ref_s[c.decode_case] = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    const std::string diff = figures_diff(fam, c, refs[i], r);
    if (!diff.empty() && mismatches++ == 0) first_mismatch = nlohmann::json(config_values(fam, &c)).dump() + ": " + diff;
    std::vector<nlohmann::json> row{to_string(pts[i].series), decode_panel(c.decode_case)};
    for (const auto& v : config_values(fam, &c)) row.push_back(v);
    for (const ColumnDesc& col : fam.columns) row.push_back(col.get(&c, &r));
    row.push_back(refs[i].latency_ps);
    row.push_back(diff.empty());
    table.add(row);
  }
  if (mismatches) throw InternalError("parity failure: " + first_mismatch, __FILE__, __LINE__);

  // The four panels in the original's schema.
  auto summary = [&](std::size_t i) {
    const DecodeConfig& c = pts[i].c;
    const DecodeResult& r = results[i];
    nlohmann::json s = nlohmann::json::object();
    for (const ColumnDesc& col : fam.columns) s[col.name] = col.get(&c, &r);
    s["busy_ps"] = {{"matrix", r.matrix_busy_ps}, {"vector", r.vector_busy_ps}, {"dma", r.dma_busy_ps}};
    s["copies"] = {{"pe", r.copies_pe}, {"cube", r.copies_cube}, {"sip", r.copies_sip}};
    s["link_bytes"] = {{"pe", r.link_bytes_pe}, {"cube", r.link_bytes_cube}, {"sip", r.link_bytes_sip}};
    s["reference_latency_ps"] = refs[i].latency_ps;
    s["parity"] = figures_diff(fam, c, refs[i], r).empty();
    return s;
  };
  nlohmann::json rows = nlohmann::json::array(), panels = nlohmann::json::array();
  std::size_t best = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].series != Series::panel && pts[i].series != Series::allreduce) continue;
    const DecodeConfig& c = pts[i].c;
    nlohmann::json row = {{"panel", decode_panel(c.decode_case)}, {"kind", decode_kind(c.decode_case)},
                          {"case", c.decode_case}, {"case_name", decode_case_name(c.decode_case)},
                          {"C", c.hw.cubes_per_sip()}, {"P", c.hw.pes_per_cube()}};
    if (c.decode_case == 4) row["sub_w"] = c.hw.cube_cols;
    row["T_q"] = 1;
    row["S_kv"] = c.s_kv, row["d_head"] = c.d_head, row["h_q"] = c.h_q, row["h_kv"] = c.h_kv, row["batch"] = c.batch;
    row["kv_chunk"] = c.chunk;
    row["op_log_summary"] = summary(i);
    if (pts[i].series == Series::allreduce) {
      row["allreduce"] = true;
      continue;  // reported below, as the case-4 variant
    }
    rows.push_back(row);
    panels.push_back(decode_panel(c.decode_case));
    if (results[i].latency_ps < results[best].latency_ps) best = i;
  }

  // The comparison, and the winner with the numbers that make it win.
  Table cmp({{"case", "", ColType::text},
             {"latency_us", "us", ColType::text},
             {"x_lower_bound", "", ColType::real},
             {"case_bound_us", "us", ColType::text},
             {"mac_util", "", ColType::real},
             {"pes", "", ColType::integer},
             {"copies_pe", "", ColType::integer},
             {"copies_cube", "", ColType::integer},
             {"link_kib", "KiB", ColType::real},
             {"kv_mib", "MiB", ColType::text}});
  const ColumnDesc* util = fam.column("mac_util");
  for (std::size_t i = 0; i < pts.size(); ++i) {
    if (pts[i].series != Series::panel && pts[i].series != Series::allreduce) continue;
    const DecodeConfig& c = pts[i].c;
    const DecodeResult& r = results[i];
    const std::string name = std::to_string(c.decode_case) + " " + decode_case_name(c.decode_case) +
                             (c.allreduce ? " (allreduce)" : "");
    cmp.add({name, us(r.latency_ps),
             static_cast<double>(r.latency_ps) / static_cast<double>(dec_lower_bound_ps(c)), us(dec_case_bound_ps(c)),
             util->get(&c, &r), r.working_pes, r.copies_pe, r.copies_cube,
             static_cast<double>(r.link_bytes_pe + r.link_bytes_cube) / 1024.0, mib(r.kv_footprint_bytes)});
  }
  out << "GQA decode, LLaMA-3.1-70B one KV-head group (h_q 8, h_kv 1, d_head 128, S_kv 131072, batch 1) on "
      << topo.cubes_per_sip() << " cubes x " << topo.pes_per_cube() << " PEs:\n"
      << cmp.text("  ");
  const DecodeConfig& w = pts[best].c;
  const DecodeResult& wr = results[best];
  std::size_t second = best == 0 ? 1 : 0;
  for (std::size_t i = 0; i < 4; ++i)
    if (i != best && results[i].latency_ps < results[second].latency_ps) second = i;
  std::ostringstream why;
  auto per_pe = [&](std::size_t i) { return results[i].hbm_read_bytes / std::max<std::int64_t>(1, results[i].working_pes); };
  const DecodeConfig& sc = pts[second].c;
  why << "case " << w.decode_case << " (" << decode_case_name(w.decode_case) << ") wins: " << us(wr.latency_ps) << " us, "
      << std::setprecision(3) << static_cast<double>(results[second].latency_ps) / static_cast<double>(wr.latency_ps)
      << "x faster than case " << sc.decode_case << " (" << us(results[second].latency_ps) << " us). Its "
      << wr.working_pes << " PEs each read " << mib(per_pe(best)) << " MiB of HBM (busiest cube: case bound "
      << us(dec_case_bound_ps(w)) << " us; latency " << std::setprecision(3)
      << static_cast<double>(wr.latency_ps) / static_cast<double>(dec_lower_bound_ps(w)) << "x the lower bound "
      << us(dec_lower_bound_ps(w)) << " us), where case " << sc.decode_case << "'s " << results[second].working_pes
      << " PEs each read " << mib(per_pe(second)) << " MiB (case bound " << us(dec_case_bound_ps(sc))
      << " us); combining the partials costs it " << wr.copies_pe + wr.copies_cube << " copies ("
      << (wr.link_bytes_pe + wr.link_bytes_cube) / 1024 << " KiB), against " << results[second].copies_pe + results[second].copies_cube << " ("
      << (results[second].link_bytes_pe + results[second].link_bytes_cube) / 1024 << " KiB)";
  out << "winner: " << why.str() << "\n";

  nlohmann::json doc = document("kernbench-gpu/gqa-decode-4cases", "1.0.0", topo);
  doc["bench"] = "milestone-gqa-decode-4cases";
  doc["backend"] = to_string(backend);
  doc["version"] = 1;
  doc["panels"] = panels;
  doc["rows"] = rows;
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (pts[i].series == Series::allreduce) {
      const DecodeConfig& c = pts[i].c;
      doc["allreduce_variant"] = {{"panel", decode_panel(4)}, {"kind", decode_kind(4)}, {"allreduce", true},
                                  {"op_log_summary", summary(i)}, {"S_kv", c.s_kv}, {"batch", c.batch}};
    }
  doc["winner"] = {{"case", w.decode_case}, {"panel", decode_panel(w.decode_case)}, {"why", why.str()}};
  doc["s_kv_values"] = decode_milestone_s_kv();
  doc["batch_values"] = decode_milestone_batches();
  doc["best_by_s_kv"] = best_runs(pts, results, Series::s_kv);
  doc["best_by_batch"] = best_runs(pts, results, Series::batch);
  doc["parity"] = {{"checked", pts.size() - invalid}, {"mismatches", mismatches}, {"ok", mismatches == 0}};
  doc["configs"] = table.json();
  // One Perfetto trace per case (the panels).
  nlohmann::json traces = nlohmann::json::array();
  for (std::int64_t k = 1; k <= 4; ++k) {
    const std::string name = std::string("trace_case") + std::to_string(k) + ".json";
    const std::string path = ctx.out_dir + "/" + name;
    decode_reference(decode_headline(topo, k), &path);
    traces.push_back(name);
  }
  doc["traces"] = traces;
  const std::string json_path = ctx.out_dir + "/" + kJson;
  write_file_atomic(json_path, doc.dump(2) + "\n");
  write_file_atomic(ctx.out_dir + "/sweep.csv", table.csv());
  out << "best case by S_kv: " << doc["best_by_s_kv"].dump() << "\nbest case by batch: " << doc["best_by_batch"].dump()
      << "\n";
  const double eval_s = std::chrono::duration<double>(t1 - t0).count();
  out << "parity: " << (pts.size() - invalid) << "/" << (pts.size() - invalid)
      << " points identical between the reference engine and the batched model (batched backend: " << to_string(backend) << ")";
  if (invalid) out << "; " << invalid << " points do not fit the SRAM or HBM";
  out << "\ntime: batched " << eval_s * 1e3 << " ms for " << pts.size() << " points; reference per panel (ms):";
  for (int k = 1; k <= 4; ++k) out << " case " << k << " " << ref_s[k] * 1e3;
  out << "\n";
  render_figures(kPlot, json_path, ctx.out_dir);
  out << "wrote " << json_path << ", sweep.csv, 4 traces and 3 figures to " << ctx.out_dir << " in "
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count() << " s\n";
}

}  // namespace

KB_BENCH("milestone-gqa-decode-4cases",
         "GQA decode (LLaMA-3.1-70B KV-head group): four KV-cache shardings over cubes and PEs, both engines, against "
         "bounds; latency vs S_kv (1K-1M) and batch (1-64)",
         "gqa_decode_4cases", kJson, kPlot, run_decode_milestone, "case", "s_kv", "batch");

}  // namespace kb
