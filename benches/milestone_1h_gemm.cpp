// milestone-1h-gemm: six GEMM shapes x four tile-schedule variants, each evaluated by the
// batched model and checked against the reference engine, against a roofline.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "host/common/error.h"
#include "host/common/output.h"
#include "host/sweep/gemm_sweep.h"
#include "milestone_1h_gemm.h"
#include "registry.h"

namespace kb {
namespace {

std::string fmt_us(ps_t ps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(ps) / 1e6);
  return buf;
}

void render(const std::string& json_path, const std::string& out_dir) {
  render_figures("plot_gemm.py", json_path, out_dir);
}

void run_gemm_milestone(BenchContext& ctx) {
  std::ostream& out = *ctx.out;
  const std::string json_path = ctx.out_dir + "/gemm_sweep.json";
  if (ctx.fast) {
    // Re-render the committed results: no simulation.
    const std::string committed = source_dir() + "/docs/diagrams/gemm_sweep.json";
    write_file_atomic(json_path, read_file(committed));
    render(json_path, ctx.out_dir);
    out << "milestone-1h-gemm: re-rendered figures from " << committed << " into " << ctx.out_dir << "\n";
    return;
  }

  const TopologySpec& topo = ctx.topology;
  const BackendKind backend = resolve_backend(ctx.backend_request);
  std::vector<GemmParams> params;
  std::vector<GemmConfig> configs;
  for (const Shape& s : gemm_milestone_shapes())
    for (const Variant& v : gemm_milestone_variants()) {
      const GemmParams p = gemm_milestone_params(s, v);
      try {
        validate_gemm(topo, p);
      } catch (const InputError& e) {
        throw InputError(std::string("milestone-1h-gemm: ") + s.name + " / " + v.name + " does not fit this topology: " + e.what());
      }
      params.push_back(p);
      configs.push_back(gemm_config(topo, p));
    }
  const std::vector<GemmResult> results = eval_gemm(backend, configs);

  using nlohmann::json;
  json jconfigs = json::array();
  std::ostringstream csv;
  csv << "shape,variant,m,n,k,tile_m,tile_n,tile_k,pes,cubes,buffers,output_tiles,latency_ps,roofline_ps,"
         "compute_roof_ps,hbm_roof_ps,mac_cycles,mac_util,hbm_read_bytes,hbm_write_bytes,achieved_tflops,"
         "arithmetic_intensity,parity\n";
  std::size_t mismatches = 0;
  std::string first_mismatch;
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-11s %12s %12s %7s %8s %6s\n", "shape", "variant", "latency_us",
                "roofline_us", "ratio", "mac_util", "parity");
  out << line;
  std::size_t i = 0;
  for (const Shape& s : gemm_milestone_shapes())
    for (const Variant& v : gemm_milestone_variants()) {
      const GemmParams& p = params[i];
      const GemmResult& r = results[i];
      ++i;
      if (r.status != kGemmOk)
        throw InternalError("batched model rejected a validated config: " + gemm_status_message(r.status, configs[i - 1]),
                            __FILE__, __LINE__);
      const GemmFigures fb = figures_of(r);
      const GemmFigures fr = figures_of(run_gemm_reference(topo, p).report);
      const std::string diff = figures_diff(fr, fb);
      if (!diff.empty()) {
        ++mismatches;
        if (first_mismatch.empty()) first_mismatch = std::string(s.name) + "/" + v.name + ": " + diff;
      }
      const GemmDerived d = derive(topo, p, fb);
      const std::int64_t tiles = ceil_div(p.m, p.tile_m) * ceil_div(p.n, p.tile_n);
      jconfigs.push_back({{"shape", s.name}, {"variant", v.name}, {"m", p.m}, {"n", p.n}, {"k", p.k},
                          {"tile_m", p.tile_m}, {"tile_n", p.tile_n}, {"tile_k", p.tile_k}, {"pes", p.pes},
                          {"cubes", p.cubes}, {"buffers", p.buffers}, {"output_tiles", tiles},
                          {"latency_ps", r.latency_ps}, {"roofline_ps", r.roofline_ps},
                          {"compute_roof_ps", r.compute_roof_ps}, {"hbm_roof_ps", r.hbm_roof_ps},
                          {"mac_cycles", r.mac_cycles}, {"macs", r.macs}, {"matrix_busy_ps", r.matrix_busy_ps},
                          {"dma_busy_ps", r.dma_busy_ps}, {"max_pe_matrix_busy_ps", r.max_pe_matrix_busy_ps},
                          {"max_pe_dma_busy_ps", r.max_pe_dma_busy_ps}, {"mac_util", d.mac_util},
                          {"hbm_read_bytes", r.hbm_read_bytes}, {"hbm_write_bytes", r.hbm_write_bytes},
                          {"flops", 2 * r.macs}, {"achieved_tflops", d.achieved_tflops},
                          {"arithmetic_intensity", d.arithmetic_intensity}, {"peak_tflops", d.peak_tflops},
                          {"hbm_gbps", d.hbm_gbps}, {"parity", diff.empty()}});
      csv << s.name << ',' << v.name << ',' << p.m << ',' << p.n << ',' << p.k << ',' << p.tile_m << ',' << p.tile_n
          << ',' << p.tile_k << ',' << p.pes << ',' << p.cubes << ',' << p.buffers << ',' << tiles << ','
          << r.latency_ps << ',' << r.roofline_ps << ',' << r.compute_roof_ps << ',' << r.hbm_roof_ps << ','
          << r.mac_cycles << ',' << d.mac_util << ',' << r.hbm_read_bytes << ',' << r.hbm_write_bytes << ','
          << d.achieved_tflops << ',' << d.arithmetic_intensity << ',' << (diff.empty() ? "true" : "false") << '\n';
      std::snprintf(line, sizeof line, "%-20s %-11s %12s %12s %7.2f %7.1f%% %6s\n", s.name, v.name,
                    fmt_us(r.latency_ps).c_str(), fmt_us(r.roofline_ps).c_str(),
                    static_cast<double>(r.latency_ps) / static_cast<double>(r.roofline_ps), 100.0 * d.mac_util,
                    diff.empty() ? "ok" : "DIFF");
      out << line;
    }

  json shapes = json::array(), variants = json::array();
  for (const Shape& s : gemm_milestone_shapes())
    shapes.push_back({{"name", s.name}, {"m", s.m}, {"n", s.n}, {"k", s.k}, {"tile_m", s.tile_m},
                      {"tile_n", s.tile_n}, {"tile_k", s.tile_k}, {"description", s.description}});
  for (const Variant& v : gemm_milestone_variants())
    variants.push_back({{"name", v.name}, {"pes", v.pes}, {"cubes", v.cubes}, {"buffers", v.buffers},
                        {"description", v.description}});
  const double pe_peak = 2.0 * static_cast<double>(topo.matrix_rows * topo.matrix_cols * topo.clock_mhz) / 1e6;
  json doc = {{"schema", "kernbench-gpu/gemm-sweep"},
              {"schema_version", "1.0.0"},
              {"bench", "milestone-1h-gemm"},
              {"generator", std::string("kernbench-gpu ") + KB_VERSION},
              {"topology",
               {{"name", topo.name}, {"hash", hash_hex(topo.hash)}, {"source", topo.source},
                {"pe_peak_tflops", pe_peak}, {"cube_hbm_gbps", topo.hbm_bandwidth_gbps}}},
              {"backend", to_string(backend)},
              {"parity", {{"checked", configs.size()}, {"mismatches", mismatches}, {"ok", mismatches == 0}}},
              {"shapes", shapes},
              {"variants", variants},
              {"configs", jconfigs}};
  write_file_atomic(json_path, doc.dump(2) + "\n");
  write_file_atomic(ctx.out_dir + "/gemm_sweep.csv", csv.str());
  out << "parity: " << (configs.size() - mismatches) << "/" << configs.size()
      << " configs identical between the reference engine and the batched model (" << to_string(backend) << ")\n";
  if (mismatches)
    throw InternalError("parity failure: " + first_mismatch, __FILE__, __LINE__);
  render(json_path, ctx.out_dir);
  out << "wrote " << json_path << ", gemm_sweep.csv and 3 figures to " << ctx.out_dir << "\n";
}

}  // namespace

KB_BENCH("milestone-1h-gemm",
         "GEMM shape x tile-schedule variant sweep (LLaMA-3.1-70B projections, square reference) against a roofline",
         "gemm", run_gemm_milestone, "shape", "variant");

}  // namespace kb
