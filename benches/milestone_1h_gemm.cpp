// milestone-1h-gemm: six GEMM shapes x four tile-schedule variants, each evaluated by the
// batched model and checked against the reference engine, against a roofline.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "host/bench/registry.h"
#include "host/study/document.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/common/table.h"
#include "host/families/family.h"
#include "host/parity/figures.h"
#include "milestone_1h_gemm.h"

namespace kb {
namespace {

const char* kJson = "gemm_sweep.json";
const char* kPlot = "plot_gemm.py";

void run_gemm_milestone(BenchContext& ctx) {
  std::ostream& out = *ctx.out;
  const std::string json_path = ctx.out_dir + "/" + kJson;

  const Family& fam = family("gemm");
  const TopologySpec& topo = ctx.topology;
  const BackendKind backend = resolve_backend(ctx.backend_request);
  std::vector<GemmConfig> configs;
  for (const Shape& s : gemm_milestone_shapes())
    for (const Variant& v : gemm_milestone_variants()) {
      const GemmParams p = gemm_milestone_params(s, v);
      try {
        validate_gemm(topo, p);
      } catch (const InputError& e) {
        throw InputError(std::string("milestone-1h-gemm: ") + s.name + " / " + v.name + " does not fit this topology: " + e.what());
      }
      configs.push_back(gemm_config(topo, p));
    }
  const std::vector<GemmResult> results = eval<GemmModel>(backend, configs);

  std::vector<Column> cols = {{"shape", "", ColType::text}, {"variant", "", ColType::text}};
  for (const Column& c : config_columns(fam)) cols.push_back(c);
  for (const Column& c : result_columns(fam)) cols.push_back(c);
  cols.push_back({"parity", "", ColType::boolean});
  Table table(cols);
  Table summary({{"shape", "", ColType::text}, {"variant", "", ColType::text}, {"latency_ps", "ps", ColType::integer},
                 {"roofline_ps", "ps", ColType::integer}, {"x_roofline", "", ColType::real}, {"mac_util", "", ColType::real},
                 {"parity", "", ColType::text}});
  std::size_t mismatches = 0, i = 0;
  std::string first_mismatch;
  for (const Shape& s : gemm_milestone_shapes())
    for (const Variant& v : gemm_milestone_variants()) {
      const GemmConfig& c = configs[i];
      const GemmResult& r = results[i++];
      if (r.status != kGemmOk)
        throw InternalError("batched model rejected a validated config: " + gemm_status_message(r.status, c), __FILE__,
                            __LINE__);
      const std::string diff = figures_diff(fam, c, gemm_reference(c), r);
      if (!diff.empty() && mismatches++ == 0) first_mismatch = std::string(s.name) + "/" + v.name + ": " + diff;
      std::vector<nlohmann::json> row = {s.name, v.name};
      for (auto& x : config_values(fam, &c)) row.push_back(x);
      for (const ColumnDesc& col : fam.columns) row.push_back(col.get(&c, &r));
      row.push_back(diff.empty());
      table.add(row);
      summary.add({s.name, v.name, r.latency_ps, r.roofline_ps, fam.column("x_roofline")->get(&c, &r),
                   fam.column("mac_util")->get(&c, &r), diff.empty() ? "ok" : "DIFF"});
    }
  out << summary.text("");

  nlohmann::json shapes = nlohmann::json::array(), variants = nlohmann::json::array();
  for (const Shape& s : gemm_milestone_shapes())
    shapes.push_back({{"name", s.name}, {"m", s.m}, {"n", s.n}, {"k", s.k}, {"tile_m", s.tile_m},
                      {"tile_n", s.tile_n}, {"tile_k", s.tile_k}, {"description", s.description}});
  for (const Variant& v : gemm_milestone_variants())
    variants.push_back({{"name", v.name}, {"pes", v.pes}, {"cubes", v.cubes}, {"buffers", v.buffers},
                        {"description", v.description}});
  nlohmann::json doc = document("kernbench-gpu/gemm-sweep", "1.3.0", topo);
  doc["bench"] = "milestone-1h-gemm";
  doc["machine"] = {{"pe_peak_tflops", 2.0 * static_cast<double>(topo.matrix_rows * topo.matrix_cols * topo.clock_mhz) / 1e6},
                    {"cube_hbm_gbps", topo.hbm_bandwidth_gbps}};
  doc["backend"] = to_string(backend);
  doc["parity"] = {{"checked", configs.size()}, {"mismatches", mismatches}, {"ok", mismatches == 0}};
  doc["shapes"] = shapes;
  doc["variants"] = variants;
  doc["configs"] = table.json();
  write_file_atomic(json_path, doc.dump(2) + "\n");
  write_file_atomic(ctx.out_dir + "/gemm_sweep.csv", table.csv());
  out << "parity: " << (configs.size() - mismatches) << "/" << configs.size()
      << " configs identical between the reference engine and the batched model (batched backend: " << to_string(backend) << ")\n";
  if (mismatches) throw InternalError("parity failure: " + first_mismatch, __FILE__, __LINE__);
  render_figures(kPlot, json_path, ctx.out_dir);
  out << "wrote " << json_path << ", gemm_sweep.csv and 3 figures to " << ctx.out_dir << "\n";
}

}  // namespace

KB_BENCH("milestone-1h-gemm",
         "GEMM shape x tile-schedule variant sweep (LLaMA-3.1-70B projections, square reference) against a roofline",
         "gemm", kJson, kPlot, run_gemm_milestone, "shape", "variant");

}  // namespace kb
