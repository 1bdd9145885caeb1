// milestone-1h-gemm: six GEMM shapes x four tile-schedule variants, each evaluated by the
// batched model and checked against the reference engine, against a roofline.
#include <nlohmann/json.hpp>

#include <iostream>

#include "host/bench/registry.h"
#include "host/common/error.h"
#include "host/common/table.h"
#include "host/families/family.h"
#include "host/study/bench_writer.h"
#include "host/study/study.h"
#include "milestone_1h_gemm.h"

namespace kb {
namespace {

void run_gemm_milestone(BenchContext& ctx) {
  std::ostream& out = *ctx.out;
  const Family& fam = family("gemm");
  const TopologySpec& topo = ctx.topology;
  Study study(fam, resolve_backend(ctx.backend_request));
  for (const Shape& s : gemm_milestone_shapes())
    for (const Variant& v : gemm_milestone_variants()) {
      const GemmConfig p = gemm_milestone_params(s, v);
      try {
        validate_gemm(topo, p);
      } catch (const InputError& e) {
        throw InputError(std::string("milestone-1h-gemm: ") + s.name + " / " + v.name + " does not fit this topology: " + e.what());
      }
      study.add_config(gemm_config(topo, p), {s.name, v.name});
    }
  study.run(Rejected::internal_error);
  study.require_parity();
  // Energy against tile size: one square GEMM on one double-buffered PE, square tiles from 16
  // to 256 (both engines, as every point).
  Study tiles(fam, resolve_backend(ctx.backend_request));
  for (std::int64_t t : gemm_milestone_energy_tiles()) {
    GemmConfig p = gemm_request();
    p.m = p.n = p.k = kGemmEnergyDim;
    p.tile_m = p.tile_n = p.tile_k = t;
    try {
      validate_gemm(topo, p);
    } catch (const InputError& e) {
      throw InputError("milestone-1h-gemm: tile " + std::to_string(t) + " does not fit this topology: " + e.what());
    }
    tiles.add_config(gemm_config(topo, p), {t});
  }
  tiles.run(Rejected::internal_error);
  tiles.require_parity();

  const Table table = study.table({{"shape", "", ColType::text}, {"variant", "", ColType::text}}, false);
  Table summary({{"shape", "", ColType::text}, {"variant", "", ColType::text}, {"latency_ps", "ps", ColType::integer},
                 {"roofline_ps", "ps", ColType::integer}, {"x_roofline", "", ColType::real}, {"mac_util", "", ColType::real},
                 {"parity", "", ColType::text}});
  std::size_t i = 0;
  for (const Shape& s : gemm_milestone_shapes())
    for (const Variant& v : gemm_milestone_variants()) {
      const GemmConfig& c = study.config_as<GemmConfig>(i);
      const GemmResult& r = study.batched_as<GemmResult>(i);
      summary.add({s.name, v.name, r.latency_ps, r.roofline_ps, fam.column("x_roofline")->get(&c, &r),
                   fam.column("mac_util")->get(&c, &r), study.diff(i++).empty() ? "ok" : "DIFF"});
    }
  out << summary.text("");

  nlohmann::json shapes = nlohmann::json::array(), variants = nlohmann::json::array();
  for (const Shape& s : gemm_milestone_shapes())
    shapes.push_back({{"name", s.name}, {"m", s.m}, {"n", s.n}, {"k", s.k}, {"tile_m", s.tile_m},
                      {"tile_n", s.tile_n}, {"tile_k", s.tile_k}, {"description", s.description}});
  for (const Variant& v : gemm_milestone_variants())
    variants.push_back({{"name", v.name}, {"pes", v.pes}, {"cubes", v.cubes}, {"buffers", v.buffers},
                        {"description", v.description}});
  nlohmann::json doc = bench_document(ctx, study);
  doc["machine"] = {{"pe_peak_tflops", 2.0 * static_cast<double>(topo.matrix_rows * topo.matrix_cols * topo.clock_mhz) / 1e6},
                    {"cube_hbm_gbps", topo.hbm_bandwidth_gbps}};
  doc["shapes"] = shapes;
  doc["variants"] = variants;
  doc["configs"] = table.json();
  doc["tile_energy"] = tiles.table({{"tile", "", ColType::integer}}, false).json();
  out << study.parity_line("configs") << "\n";
  out << tiles.parity_line("tile-size points") << "\n";
  write_bench(ctx, doc, table);
  out << "wrote " << bench_json_path(ctx) << ", " << ctx.bench->csv() << " and 5 figures to " << ctx.out_dir << "\n";
}

}  // namespace

KB_BENCH([] {
  BenchInfo b;
  b.name = "milestone-1h-gemm";
  b.description = "GEMM shape x tile-schedule variant sweep (LLaMA-3.1-70B projections, square reference) against a roofline";
  b.axes = {"shape", "variant"};
  b.domain = "gemm";
  b.fn = run_gemm_milestone;
  b.json = "gemm_sweep.json";
  b.schema = "kernbench-gpu/gemm-sweep";
  b.schema_version = "1.4.0";
  b.plot = "plot_gemm.py";
  return b;
}());

}  // namespace kb
