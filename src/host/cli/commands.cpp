#include "commands.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "benches/registry.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/cli/sweep_gemm.h"
#include "host/sweep/gemm_sweep.h"
#include "host/topology/load.h"
#include "host/topology/summary.h"

namespace kb {
namespace {

std::string default_topology() { return source_dir() + "/topologies/default.yaml"; }
const char* kDefaultOutRoot = "benches/1H_milestone_output";

struct TopoArgs {
  std::string path;
  std::vector<std::string> sets;
  void add(CLI::App* app, bool positional) {
    if (positional) app->add_option("file", path, "topology YAML file")->required();
    else app->add_option("--topology", path, "topology YAML file (default: topologies/default.yaml)");
    app->add_option("--set", sets, "override a field, PATH=VALUE (repeatable)")->take_all()->allow_extra_args(false);
  }
  TopologySpec load() const { return load_topology(path.empty() ? default_topology() : path, sets); }
};

void cmd_list() {
  std::printf("%-28s %s\n", "bench", "description [axes]");
  for (const auto& b : benches()) {
    std::string axes;
    for (const auto& a : b.axes) axes += (axes.empty() ? "" : ", ") + a;
    std::printf("%-28s %s [%s]\n", b.name.c_str(), b.description.c_str(), axes.c_str());
  }
}

const BenchInfo& bench_or_error(const std::string& name) {
  if (const BenchInfo* b = find_bench(name)) return *b;
  std::string known;
  for (const auto& b : benches()) known += (known.empty() ? "" : ", ") + b.name;
  throw InputError("--bench " + name + ": unknown bench (known: " + known + ")");
}

struct GemmArgs {
  GemmParams p;
  TopoArgs topo;
  std::string trace, engine = "both", backend = "auto";
  std::string dataflow, array_rows, array_cols;  // shorthands for --set pe.matrix.*
  bool json = false;
};

std::string us(ps_t ps) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f us", static_cast<double>(ps) / 1e6);
  return b;
}

void cmd_eval_gemm(GemmArgs a) {
  if (!a.dataflow.empty()) a.topo.sets.push_back("pe.matrix.dataflow=" + a.dataflow);
  if (!a.array_rows.empty()) a.topo.sets.push_back("pe.matrix.rows=" + a.array_rows);
  if (!a.array_cols.empty()) a.topo.sets.push_back("pe.matrix.cols=" + a.array_cols);
  const TopologySpec topo = a.topo.load();
  auto auto_tile = [](std::int64_t& tile, std::int64_t dim) {
    if (tile == 0) tile = dim >= 1 ? std::min<std::int64_t>(128, dim) : 1;
  };
  auto_tile(a.p.tile_m, a.p.m);
  auto_tile(a.p.tile_n, a.p.n);
  auto_tile(a.p.tile_k, a.p.k);
  if (a.engine != "reference" && a.engine != "batched" && a.engine != "both")
    throw InputError("--engine " + a.engine + ": expected reference, batched or both");
  validate_gemm(topo, a.p);
  const bool want_ref = a.engine != "batched", want_batched = a.engine != "reference";
  if (!a.trace.empty() && !want_ref) throw InputError("--trace: needs the reference engine (--engine reference or both)");
  const GemmConfig cfg = gemm_config(topo, a.p);
  BackendKind backend = BackendKind::omp;
  GemmResult model{};
  if (want_batched) {
    backend = resolve_backend(a.backend);
    model = eval_gemm(backend, {cfg})[0];
    if (model.status != kGemmOk) throw InputError(gemm_status_message(model.status, cfg));
  } else {
    model = gemm_model(cfg);  // for the roofline only
  }
  GemmReference ref;
  if (want_ref) ref = run_gemm_reference(topo, a.p, !a.trace.empty());

  const GemmFigures fr = want_ref ? figures_of(ref.report) : GemmFigures{};
  const GemmFigures fb = want_batched ? figures_of(model) : GemmFigures{};
  const GemmFigures& f = want_ref ? fr : fb;
  const std::string diff = want_ref && want_batched ? figures_diff(fr, fb) : "";
  if (!a.trace.empty()) write_file_atomic(a.trace, ref.trace);

  auto figures_json = [&](const GemmFigures& g) {
    const GemmDerived d = derive(topo, a.p, g);
    return nlohmann::json{{"latency_ps", g.latency_ps},         {"mac_cycles", g.mac_cycles},
                          {"macs", g.macs},                     {"mac_util", d.mac_util},
                          {"matrix_busy_ps", g.matrix_busy_ps}, {"dma_busy_ps", g.dma_busy_ps},
                          {"max_pe_matrix_busy_ps", g.max_pe_matrix_busy_ps}, {"max_pe_dma_busy_ps", g.max_pe_dma_busy_ps},
                          {"hbm_read_bytes", g.hbm_read_bytes}, {"hbm_write_bytes", g.hbm_write_bytes},
                          {"ops", g.ops},                       {"achieved_tflops", d.achieved_tflops}};
  };
  const GemmDerived d = derive(topo, a.p, f);
  if (a.json) {
    nlohmann::json j = figures_json(f);
    j["engine"] = a.engine;
    j["roofline_ps"] = model.roofline_ps;
    j["compute_roof_ps"] = model.compute_roof_ps;
    j["hbm_roof_ps"] = model.hbm_roof_ps;
    j["topology"] = {{"name", topo.name}, {"hash", hash_hex(topo.hash)}};
    j["problem"] = {{"m", a.p.m}, {"n", a.p.n}, {"k", a.p.k}, {"tile_m", a.p.tile_m}, {"tile_n", a.p.tile_n},
                    {"tile_k", a.p.tile_k}, {"pes", a.p.pes}, {"cubes", a.p.cubes}, {"buffers", a.p.buffers}};
    if (want_batched) j["backend"] = to_string(backend);
    if (want_ref) j["reference"] = figures_json(fr);
    if (want_batched) j["batched"] = figures_json(fb);
    if (want_ref && want_batched) {
      j["parity"] = diff.empty();
      if (!diff.empty()) j["parity_diff"] = diff;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("gemm %lldx%lldx%lld, tiles %lldx%lldx%lld, %lld PE(s) x %lld cube(s), %lld buffer set(s), topology %s\n",
                (long long)a.p.m, (long long)a.p.n, (long long)a.p.k, (long long)a.p.tile_m, (long long)a.p.tile_n,
                (long long)a.p.tile_k, (long long)a.p.pes, (long long)a.p.cubes, (long long)a.p.buffers,
                topo.name.c_str());
    std::printf("  engine           %s%s\n", a.engine.c_str(),
                want_batched ? (std::string(" (batched backend: ") + to_string(backend) + ")").c_str() : "");
    std::printf("  latency          %s (%lld ps)\n", us(f.latency_ps).c_str(), (long long)f.latency_ps);
    std::printf("  roofline         %s (compute %s, HBM %s)\n", us(model.roofline_ps).c_str(),
                us(model.compute_roof_ps).c_str(), us(model.hbm_roof_ps).c_str());
    std::printf("  matrix cycles    %lld\n", (long long)f.mac_cycles);
    std::printf("  MAC utilisation  %.2f%%\n", 100.0 * d.mac_util);
    std::printf("  achieved         %.3f TFLOP/s\n", d.achieved_tflops);
    std::printf("  HBM read/write   %lld / %lld bytes\n", (long long)f.hbm_read_bytes, (long long)f.hbm_write_bytes);
    if (want_ref && want_batched) std::printf("  parity           %s\n", diff.empty() ? "identical" : ("DIFFERENT: " + diff).c_str());
    if (!a.trace.empty()) std::printf("  trace            %s\n", a.trace.c_str());
  }
  if (!diff.empty()) throw InternalError("parity failure: " + diff, __FILE__, __LINE__);
}

}  // namespace

int cli_main(int argc, char** argv) {
  if (!bench_registry_errors().empty()) {
    std::fprintf(stderr, "error: internal: %s\n", bench_registry_errors().front().c_str());
    return 3;
  }
  CLI::App app{"kernbench-gpu: performance simulator for a multi-package AI accelerator", "kernbench-gpu"};
  app.set_version_flag("--version", std::string("kernbench-gpu ") + KB_VERSION);
  app.require_subcommand(1);

  auto* list = app.add_subcommand("list", "list the registered benches");

  auto* run = app.add_subcommand("run", "run a bench: writes JSON, CSV and figures");
  std::string bench_name, out_dir, backend = "auto";
  bool fast = false;
  TopoArgs run_topo;
  run->add_option("--bench", bench_name, "bench name (see `list`)")->required();
  run_topo.add(run, false);
  run->add_option("--out", out_dir, "output folder (default: benches/1H_milestone_output/<domain>)");
  run->add_option("--backend", backend, "batched-model backend: auto, cuda or omp")->capture_default_str();
  run->add_flag("--fast", fast, "re-render figures from committed results (same as MILESTONE_FAST=1)");

  auto* eval = app.add_subcommand("eval", "evaluate one configuration");
  eval->require_subcommand(1);
  auto* egemm = eval->add_subcommand("gemm", "one GEMM on the reference engine and/or the batched model");
  GemmArgs g;
  egemm->add_option("--m", g.p.m, "rows of A and C")->required();
  egemm->add_option("--n", g.p.n, "columns of B and C")->required();
  egemm->add_option("--k", g.p.k, "columns of A, rows of B")->required();
  g.p.tile_m = g.p.tile_n = g.p.tile_k = 0;  // 0: min(128, the matrix dimension)
  egemm->add_option("--tile-m", g.p.tile_m, "output tile rows (default: min(128, m))");
  egemm->add_option("--tile-n", g.p.tile_n, "output tile columns (default: min(128, n))");
  egemm->add_option("--tile-k", g.p.tile_k, "k-slice per step (default: min(128, k))");
  egemm->add_option("--pes", g.p.pes, "PEs per cube")->capture_default_str();
  egemm->add_option("--cubes", g.p.cubes, "cubes")->capture_default_str();
  egemm->add_option("--buffers", g.p.buffers, "SRAM buffer sets: 1 or 2")->capture_default_str();
  egemm->add_option("--dataflow", g.dataflow, "os, ws or is (same as --set pe.matrix.dataflow=...)");
  egemm->add_option("--array-rows", g.array_rows, "systolic array rows (same as --set pe.matrix.rows=...)");
  egemm->add_option("--array-cols", g.array_cols, "systolic array columns (same as --set pe.matrix.cols=...)");
  egemm->add_option("--engine", g.engine, "reference, batched or both")->capture_default_str();
  egemm->add_option("--backend", g.backend, "batched-model backend: auto, cuda or omp")->capture_default_str();
  egemm->add_option("--trace", g.trace, "write a Chrome trace (Perfetto) of the reference run to FILE");
  egemm->add_flag("--json", g.json, "print one JSON object");
  g.topo.add(egemm, false);

  auto* sweep = app.add_subcommand("sweep", "evaluate a space of configurations with the batched model");
  sweep->require_subcommand(1);
  auto* sgemm = sweep->add_subcommand(
      "gemm", "GEMM configs: best per group, top k, Pareto front and latency histogram, reduced on the device");
  SweepGemmArgs sg;
  add_sweep_gemm_options(sgemm, sg);
  TopoArgs sweep_topo;
  sweep_topo.add(sgemm, false);

  auto* topo = app.add_subcommand("topo", "check or summarise a topology file");
  topo->require_subcommand(1);
  auto* tcheck = topo->add_subcommand("check", "validate a topology file (exit 0 if valid, 2 if not)");
  TopoArgs check_args;
  check_args.add(tcheck, true);
  auto* tshow = topo->add_subcommand("show", "print counts, peak compute, bandwidths and capacities");
  TopoArgs show_args;
  bool show_json = false;
  show_args.add(tshow, true);
  tshow->add_flag("--json", show_json, "machine-readable output");

  auto* plot = app.add_subcommand("plot", "re-render a bench's figures from its JSON");
  std::string plot_bench, plot_in, plot_out;
  plot->add_option("--bench", plot_bench, "bench name")->required();
  plot->add_option("--in", plot_in, "folder holding the bench's JSON (default: its output folder)");
  plot->add_option("--out", plot_out, "folder for the figures (default: --in)");

  // CLI11 reports a mistyped subcommand as a missing one; name it instead.
  {
    const CLI::App* level = &app;
    for (int i = 1; i < argc && level->get_require_subcommand_min() > 0; ++i) {
      const std::string word = argv[i];
      if (word.empty() || word[0] == '-') break;
      const CLI::App* next = nullptr;
      std::string known;
      for (const CLI::App* sub : level->get_subcommands({})) {
        known += (known.empty() ? "" : ", ") + sub->get_name();
        if (sub->get_name() == word) next = sub;
      }
      if (!next) {
        std::fprintf(stderr, "error: unknown subcommand '%s' (known: %s)\n", word.c_str(), known.c_str());
        return 2;
      }
      level = next;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s (see kernbench-gpu --help)\n", e.what());
    return 2;
  }

  try {
    if (list->parsed()) {
      cmd_list();
    } else if (run->parsed()) {
      const BenchInfo& b = bench_or_error(bench_name);
      BenchContext ctx;
      ctx.topology_path = run_topo.path.empty() ? default_topology() : run_topo.path;
      ctx.topology = run_topo.load();
      ctx.out_dir = out_dir.empty() ? std::string(kDefaultOutRoot) + "/" + b.domain : out_dir;
      ctx.backend_request = backend;
      if (backend != "auto" && backend != "cuda" && backend != "omp")
        throw InputError("--backend " + backend + ": expected auto, cuda or omp");
      const char* env_fast = std::getenv("MILESTONE_FAST");
      ctx.fast = fast || (env_fast && std::string(env_fast) == "1");
      ctx.out = &std::cout;
      b.fn(ctx);
    } else if (egemm->parsed()) {
      cmd_eval_gemm(g);
    } else if (sgemm->parsed()) {
      cmd_sweep_gemm(sg, sweep_topo.load(), sweep_topo.sets);
    } else if (tcheck->parsed()) {
      const TopologySpec t = check_args.load();
      std::printf("%s: ok (%s, %lld PEs)\n", check_args.path.c_str(), t.name.c_str(), (long long)t.total_pes());
    } else if (tshow->parsed()) {
      const TopologySpec t = show_args.load();
      if (show_json) std::cout << topology_summary(t).dump(2) << "\n";
      else std::cout << topology_summary_text(t);
    } else if (plot->parsed()) {
      const BenchInfo& b = bench_or_error(plot_bench);
      if (b.name != "milestone-1h-gemm") throw InputError("--bench " + plot_bench + ": this bench has no figures to re-render");
      const std::string in = plot_in.empty() ? std::string(kDefaultOutRoot) + "/" + b.domain : plot_in;
      const std::string json = in + "/gemm_sweep.json";
      read_file(json);  // a missing file is a clear input error
      render_figures("plot_gemm.py", json, plot_out.empty() ? in : plot_out);
      std::printf("rendered figures of %s into %s\n", json.c_str(), (plot_out.empty() ? in : plot_out).c_str());
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const InternalError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: internal: %s\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace kb
