#include "commands.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <filesystem>
#include <iostream>

#include <memory>

#include "cmd_family.h"
#include "cmd_serve.h"
#include "host/api/bench.h"
#include "host/api/describe.h"
#include "host/sweep/space_file.h"
#include "host/bench/registry.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/topology/fields.h"
#include "host/topology/load.h"

namespace kb {

std::string default_topology() { return data_dir() + "/topologies/default.yaml"; }

void MaxOpsArg::add(CLI::App* app, const std::string& more_help) {
  given = app->add_option("--max-ops", text,
                          "the most ops a reference run may build (its op graph takes about 128 bytes an op), "
                          "1..2^31-1; a larger run is refused before it starts [default: 16777216]" +
                              more_help);
}

std::optional<std::string> MaxOpsArg::value() const {
  if (!given || given->count() == 0) return std::nullopt;
  return text;
}

void TopoArgs::add(CLI::App* app, bool positional) {
  if (positional) given = app->add_option("file", path, "topology YAML file")->required();
  else given = app->add_option("--topology", path, "topology YAML file (default: topologies/default.yaml)");
  app->add_option("--set", sets, "override a field, PATH=VALUE (repeatable)")->take_all()->allow_extra_args(false);
}

api::TopologyRequest TopoArgs::request() const {
  api::TopologyRequest r;
  r.path = path;
  r.path_given = given && given->count() > 0;
  r.sets = sets;
  r.set_origin = set_origin;
  return r;
}

std::string TopoArgs::setter_of(const std::string& field) const { return request().setter_of(field); }

namespace {

void cmd_list_json() { cli_out() << api::list_document().dump(2) << "\n"; }

void cmd_list() {
  cli_printf("%-28s %s\n", "bench", "description [axes]");
  for (const auto& b : benches()) {
    std::string axes;
    for (const auto& a : b.axes) axes += (axes.empty() ? "" : ", ") + a;
    cli_printf("%-28s %s [%s]\n", b.name.c_str(), b.description.c_str(), axes.c_str());
  }
  cli_printf("\n%-28s %s\n", "family (eval/sweep NAME)", "description [axes; hardware axes]");
  for (const Family* f : families()) {
    std::string axes;
    for (const auto& a : f->axes) axes += (axes.empty() ? "" : ", ") + a.name;
    axes += ";";
    for (const auto& h : f->hw_axes) axes += " " + h.name + ",";
    axes += " any topology field by --hw PATH";
    cli_printf("%-28s %s [%s]\n", f->name.c_str(), f->description.c_str(), axes.c_str());
  }
}

}  // namespace

namespace {

// CLI11 reports a mistyped subcommand as a missing one: name the word it does not know, and
// the subcommands it could be (InputError).
void check_subcommands(const CLI::App& app, const std::vector<std::string>& words) {
  const CLI::App* level = &app;
  for (std::size_t i = 1; i < words.size() && level->get_require_subcommand_min() > 0; ++i) {
    const std::string& word = words[i];
    if (word.empty() || word[0] == '-') break;
    const CLI::App* next = nullptr;
    std::string known;
    for (const CLI::App* sub : level->get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      if (sub->check_name(word)) next = sub;
    }
    if (!next) throw InputError("unknown subcommand '" + word + "' (known: " + known + ")");
    level = next;
  }
}

// An option given an empty value ('') is a mistake on every command: no option takes an
// empty text, and leaving it out is how its default is asked for (InputError).
void check_no_empty_values(const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    // Not given, a flag, or an option whose value may be left out (`--allreduce`).
    if (o->count() == 0 || o->get_expected_max() == 0 || o->get_expected_min() == 0) continue;
    for (const std::string& r : o->results())
      if (r.empty()) {
        std::string name = o->get_name();
        for (const std::string& l : o->get_lnames()) name = "--" + l;  // the long name
        throw api::empty_value(name);
      }
  }
  for (const CLI::App* sub : app.get_subcommands())  // those parsed
    check_no_empty_values(*sub);
}

// The command line's words, `sweep --space FILE ...` given the file's family when it names
// none (InputError when the file cannot say).
std::vector<std::string> words_of(std::vector<std::string> words) {
  const std::size_t argc = words.size();
  if (argc < 3 || words[1] != "sweep") return words;
  bool named = false;
  for (const Family* f : families()) named |= f->named(words[2]);
  std::string space;
  for (std::size_t i = 2; i < argc && !named; ++i) {
    if (words[i] == "--space" && i + 1 < argc) space = words[i + 1];
    else if (words[i].rfind("--space=", 0) == 0) space = words[i].substr(8);
  }
  if (!named && !space.empty()) words.insert(words.begin() + 2, space_file_family(space));
  return words;
}

}  // namespace

std::string cli_error_line(std::exception_ptr error, int* code) {
  try {
    std::rethrow_exception(error);
  } catch (const InputError& e) {
    *code = 2;
    return "error: " + escape_text(e.what());
  } catch (const EnvironmentError& e) {
    *code = 4;
    return "error: environment: " + escape_text(e.what());
  } catch (const InternalError& e) {
    *code = 3;
    return "error: " + escape_text(e.what());
  } catch (const std::bad_alloc&) {
    *code = 3;
    return "error: out of memory: the request needs more memory than this machine gives it";
  } catch (const std::exception& e) {
    *code = 3;
    return "error: internal: " + escape_text(e.what());
  }
}

namespace {

// Runs `work`, each kind of error becoming its one line (cli_error_line) and exit code: 2 bad
// input, 3 an internal error or no memory, 4 the environment. Library code throws; only here
// are exit codes chosen.
int exit_code_of(const std::function<void()>& work) {
  try {
    work();
  } catch (...) {
    int code = 3;
    const std::string line = cli_error_line(std::current_exception(), &code);
    std::fprintf(stderr, "%s\n", line.c_str());
    return code;
  }
  return 0;
}

// `plot`: a sweep's figures from its JSON, or a bench's re-rendered from its folder.
void cmd_plot(const std::string& plot_bench, const std::string& plot_sweep, const std::string& plot_in,
              const std::string& plot_out) {
  if (!plot_sweep.empty()) {
    if (!plot_in.empty()) throw InputError("--in: --sweep names the file itself");
    read_file(plot_sweep);  // a missing file is a clear input error
    const std::string out = plot_out.empty() ? std::filesystem::path(plot_sweep).parent_path().string() : plot_out;
    render_figures("plot_sweep.py", plot_sweep, out.empty() ? "." : out);
    cli_printf("rendered the figures of %s into %s\n", plot_sweep.c_str(), out.empty() ? "." : out.c_str());
    return;
  }
  if (plot_bench.empty()) throw InputError("plot: give --bench NAME or --sweep FILE");
  const BenchInfo& b = api::bench_or_error(plot_bench);
  if (b.plot.empty()) throw InputError("--bench " + plot_bench + ": this bench has no figures to re-render");
  const std::string in = api::bench_out_dir(b, plot_in);
  if (std::filesystem::is_regular_file(in))
    throw InputError("--in " + in + ": is a file; give the folder that holds " + b.json);
  const std::string json = in + "/" + b.json;
  read_file(json);  // a missing file is a clear input error
  render_figures(b.plot, json, plot_out.empty() ? in : plot_out);
  cli_printf("rendered figures of %s into %s\n", json.c_str(), (plot_out.empty() ? in : plot_out).c_str());
}

}  // namespace

int cli_main(int argc, char** argv) {
  int rc = 0;
  const int failed = exit_code_of([&] { rc = cli_run(std::vector<std::string>(argv, argv + argc)); });
  return failed != 0 ? failed : rc;
}

namespace {

// `topo check|show|diagram`: a topology file checked, summarised or drawn.
struct TopoCommands {
  CLI::App *check = nullptr, *show = nullptr, *diagram = nullptr;
  TopoArgs check_args, show_args, diagram_args;
  bool show_json = false;
  std::string diagram_out;

  void add(CLI::App& app) {
    auto* topo = app.add_subcommand("topo", "check or summarise a topology file");
    topo->require_subcommand(1);
    check = topo->add_subcommand("check", "validate a topology file (exit 0 if valid, 2 if not)");
    check_args.add(check, true);
    show = topo->add_subcommand("show", "print counts, peak compute, bandwidths and capacities");
    show_args.add(show, true);
    show->add_flag("--json", show_json, "machine-readable output");
    diagram = topo->add_subcommand("diagram", "draw a topology: SIPs, cube grids, PE grids and labelled links");
    diagram_args.add(diagram, true);
    diagram->add_option("-o,--out", diagram_out, "OUT.dot (Graphviz source), OUT.svg or OUT.png (rendered with dot)")->required();
  }
  // Runs the one parsed; false when none was.
  bool run() const {
    if (check->parsed()) {
      const TopologySpec t = check_args.load();
      cli_printf("%s: ok (%s, %lld PEs)\n", check_args.path.c_str(), t.name.c_str(), (long long)t.total_pes());
    } else if (diagram->parsed()) {
      api::topology_diagram(diagram_args.request(), diagram_out);
      cli_printf("wrote %s\n", diagram_out.c_str());
    } else if (show->parsed()) {
      if (show_json) cli_out() << api::topology_document(show_args.request()).dump(2) << "\n";
      else cli_out() << api::topology_text(show_args.request());
    } else {
      return false;
    }
    return true;
  }
};

}  // namespace

int cli_run(const std::vector<std::string>& argv_words) {
  if (!bench_registry_errors().empty()) throw std::runtime_error(bench_registry_errors().front());
  forget_space_files();  // a file edited since an earlier command of this process is read again
  CLI::App app{"kernbench-gpu: performance simulator for a multi-package AI accelerator", "kernbench-gpu"};
  app.set_version_flag("--version", std::string("kernbench-gpu ") + KB_VERSION);
  app.require_subcommand(1);

  auto* list = app.add_subcommand("list", "list the registered benches and workload families");
  bool list_json = false;
  list->add_flag("--json", list_json, "machine-readable: every family's axes (types, ranges, units) and columns");

  auto* run = app.add_subcommand("run", "run a bench: writes JSON, CSV and figures");
  std::string bench_name, out_dir, backend = "auto";
  bool fast = false;
  TopoArgs run_topo;
  run->add_option("--bench", bench_name, "bench name (see `list`)")->required();
  run_topo.add(run, false);
  run->add_option("--out", out_dir, "output folder (default: benches/1H_milestone_output/<domain>)");
  run->add_option("--backend", backend, "batched-model backend: auto, cuda or omp")->capture_default_str();
  run->add_flag("--fast", fast, "re-render figures from committed results (same as MILESTONE_FAST=1)");

  // eval NAME and sweep NAME for every workload family.
  auto* eval = app.add_subcommand("eval", "evaluate one configuration of a workload family");
  eval->require_subcommand(1);
  auto* sweep = app.add_subcommand("sweep", "evaluate a space of configurations with the batched model");
  sweep->require_subcommand(1);
  std::vector<std::unique_ptr<EvalArgs>> evals;
  std::vector<std::unique_ptr<SweepArgs>> sweeps;
  std::vector<CLI::App*> eval_cmds, sweep_cmds;
  for (const Family* f : families()) {
    evals.push_back(std::make_unique<EvalArgs>());
    evals.back()->family = f;
    eval_cmds.push_back(add_eval_command(eval, *evals.back()));
    sweeps.push_back(std::make_unique<SweepArgs>());
    sweeps.back()->family = f;
    sweep_cmds.push_back(add_sweep_command(sweep, *sweeps.back()));
  }
  SweepServeArgs sweep_serve_args;  // sweep serve: serving runs, not a family's configs
  add_sweep_serve_command(sweep, sweep_serve_args);
  MergeArgs merge_args;
  auto* merge = add_merge_command(app, merge_args);

  ModelArgs model_args;
  add_model_commands(app, model_args);

  ServeArgs serve_args;
  add_serve_command(app, serve_args);

  TopoCommands topo;
  topo.add(app);

  auto* plot = app.add_subcommand("plot", "re-render a bench's figures from its JSON, or draw a sweep's");
  std::string plot_bench, plot_in, plot_out, plot_sweep;
  auto* plot_bench_opt = plot->add_option("--bench", plot_bench, "bench name");
  auto* plot_sweep_opt = plot->add_option(
      "--sweep", plot_sweep,
      "a sweep's JSON (sweep --out/--json, merge): its Pareto fronts, latency histogram and best config per group");
  plot_bench_opt->excludes(plot_sweep_opt);
  plot->add_option("--in", plot_in, "folder holding the bench's JSON (default: its output folder)");
  plot->add_option("--out", plot_out, "folder for the figures (default: --in)");

  check_subcommands(app, argv_words);
  try {
    std::vector<std::string> words = words_of(argv_words);
    std::vector<char*> wargv;
    for (std::string& w : words) wargv.push_back(w.data());
    app.parse(static_cast<int>(wargv.size()), wargv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, cli_out(), cli_err());
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, cli_out(), cli_err());
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, cli_out(), cli_err());
  } catch (const CLI::ParseError& e) {
    throw InputError(std::string(e.what()) + " (see kernbench-gpu --help)");
  }
  check_no_empty_values(app);

  {
    if (list->parsed()) {
      if (list_json) cmd_list_json();
      else cmd_list();
    } else if (run->parsed()) {
      api::BenchRequest r;
      r.bench = bench_name, r.topology = run_topo.request(), r.out = out_dir, r.backend = backend, r.fast = fast;
      r.log = &cli_out();
      api::run_bench(r);
    } else if (eval->parsed()) {
      for (std::size_t i = 0; i < eval_cmds.size(); ++i)
        if (eval_cmds[i]->parsed()) cmd_eval(*evals[i]);
    } else if (sweep->parsed()) {
      for (std::size_t i = 0; i < sweep_cmds.size(); ++i)
        if (sweep_cmds[i]->parsed()) cmd_sweep(*sweeps[i]);
      if (sweep_serve_args.cmd->parsed()) cmd_sweep_serve(sweep_serve_args);
    } else if (merge->parsed()) {
      cmd_merge(merge_args);
    } else if (topo.run()) {
    } else if (plot->parsed()) {
      cmd_plot(plot_bench, plot_sweep, plot_in, plot_out);
    } else if (model_args.cmd->parsed()) {
      cmd_model(model_args);
    } else if (serve_args.cmd->parsed()) {
      cmd_serve(serve_args);
    }
  }
  return 0;
}

}  // namespace kb
