// `kernbench-gpu eval NAME`: one config of a family on the reference engine and/or the
// batched model, with every figure of the family's results table.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cmd_family.h"
#include "host/study/document.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/common/table.h"
#include "host/sweep/axis_values.h"
#include "host/sweep/backend.h"
#include "host/sweep/space.h"
#include "host/study/study.h"
#include "host/topology/fields.h"
#include "host/topology/load.h"

namespace kb {

CLI::App* add_eval_command(CLI::App* eval, EvalArgs& a) {
  const Family& f = *a.family;
  auto* cmd = eval->add_subcommand(f.name, f.description + ", on the reference engine and/or the batched model");
  for (const std::string& alias : f.aliases) cmd->alias(alias);
  for (const AxisDesc& ax : f.axes) {
    std::string help = ax.help;
    if (!ax.names.empty()) help += " (" + one_of(ax.names) + ")";
    if (!ax.best.empty()) help += "; best: the one of least latency of " + ax.best;
    if (!ax.fallback.empty() && ax.fallback != "auto") help += " [default: " + ax.fallback + "]";
    auto* opt = cmd->add_option(ax.flag, a.axes[ax.name], help);
    if (ax.fallback.empty()) opt->required();
    if (f.bare.count(ax.name)) opt->expected(0, 1);
    a.given[ax.name] = opt;
  }
  for (const HwAxisDesc& h : f.hw_axes)
    a.given[h.name] = cmd->add_option(h.flag, a.hw_axes[h.name], h.help + " (same as --set " + h.path + "=...)");
  for (const PresetDesc& p : f.presets)
    a.preset_given[p.flag] = cmd->add_option(p.flag, a.presets[p.flag], p.help + "; a flag of its own overrides one value");
  cmd->add_option("--engine", a.engine, "reference, batched or both")->capture_default_str();
  cmd->add_option("--backend", a.backend, "batched-model backend: auto, cuda or omp")->capture_default_str();
  cmd->add_option("--trace", a.trace, "write a Chrome trace (Perfetto) of the reference run to FILE");
  a.max_ops.add(cmd, "");
  if (f.data_run) {
    cmd->add_flag("--data", a.data,
                  "also run the reference engine with values (random weights from --seed) and compare its output with a "
                  "float64 forward pass");
    cmd->add_option("--seed", a.seed, "the seed of --data's values")->capture_default_str();
  }
  cmd->add_flag("--json", a.json, "print one JSON object");
  a.topo.add(cmd, false);
  return cmd;
}

namespace {

struct BestPick {
  std::size_t candidates = 0, valid = 0;
};

// Sets the axes given as "best" in `cfg` to the values of least objective (the family's, e.g.
// latency_ps) on the batched model, over every combination of their values that the family's check accepts (the first
// in order on a tie). None valid: the input error of the last candidate of the highest
// status (statuses are numbered in the order a check meets them, and lists grow in
// resources: the one that got furthest with the most ranks).
BestPick pick_best(const Family& f, const std::string& backend, const std::vector<const AxisDesc*>& axes,
                   const std::vector<std::vector<std::int64_t>>& values, std::vector<unsigned char>& cfg) {
  BestPick pick;
  if (axes.empty()) return pick;
  Study study(f, resolve_backend(backend, f.id), {true, false});
  std::vector<std::size_t> at(axes.size(), 0);
  std::vector<unsigned char> c = cfg, last;
  std::int32_t last_status = 0;
  for (bool more = true; more;) {
    for (std::size_t i = 0; i < axes.size(); ++i) set_int(c.data(), axes[i]->offset, values[i][at[i]]);
    std::vector<unsigned char> one = c;
    batched::complete_config(f.id, one.data());
    ++pick.candidates;
    const std::int32_t st = f.check(one.data());
    if (st == 0) study.add(one.data());
    else if (st >= last_status) last = one, last_status = st;
    more = false;  // the next combination, the last axis fastest
    for (std::size_t i = axes.size(); i-- > 0;) {
      if (++at[i] < values[i].size()) {
        more = true;
        break;
      }
      at[i] = 0;
    }
  }
  pick.valid = study.size();
  if (pick.valid == 0) {
    std::string which;
    for (const AxisDesc* ax : axes) which += (which.empty() ? "" : " ") + ax->flag + " best";
    throw InputError(which + ": none of " + std::to_string(pick.candidates) + " candidates is valid; the last that got furthest: " +
                     f.status_message(last_status, last.data()));
  }
  study.run(Rejected::internal_error);
  const auto column =
      std::find_if(f.columns.begin(), f.columns.end(), [&](const ColumnDesc& c) { return c.name == f.objective; });
  KB_INTERNAL_CHECK(column != f.columns.end(), "family " + f.name + ": no " + f.objective + " column");
  std::size_t best = 0;
  std::int64_t best_latency = 0;
  for (std::size_t i = 0; i < study.size(); ++i) {
    const std::int64_t latency = column->get(study.config(i), study.batched(i)).get<std::int64_t>();
    if (i == 0 || latency < best_latency) best = i, best_latency = latency;
  }
  for (const AxisDesc* ax : axes) set_int(cfg.data(), ax->offset, get_int(study.config(best), ax->offset));
  return pick;
}

}  // namespace

namespace {

// The hardware axes' flags as --set overrides (each checked here, so that an error names the
// flag the user typed), and the engine and backend words.
void apply_eval_flags(const Family& f, EvalArgs& a) {
  for (const HwAxisDesc& h : f.hw_axes) {
    if (a.given[h.name]->count() == 0) continue;
    const HwField* field = find_hw_field(h.path);
    std::int64_t v = 0;
    std::string why;
    if (!field->parse(a.hw_axes[h.name], &v, &why))
      throw InputError(h.flag + " " + a.hw_axes[h.name] + ": " + why + (a.hw_axes[h.name].find(',') != std::string::npos
                                                                            ? " (eval takes one value; sweep takes lists)"
                                                                            : ""));
    a.topo.set_origin[a.topo.sets.size()] = h.flag + " " + a.hw_axes[h.name];
    a.topo.sets.push_back(h.path + "=" + a.hw_axes[h.name]);
  }
  if (a.engine != "reference" && a.engine != "batched" && a.engine != "both")
    throw InputError("--engine " + a.engine + ": expected reference, batched or both");
  if (a.backend != "auto" && a.backend != "cuda" && a.backend != "omp")  // even when no batched run uses it
    throw InputError("--backend " + a.backend + ": expected auto, cuda or omp");
  check_output_path("--trace", a.trace, "trace.json");
  check_outputs_distinct({{"--topology", a.topo.path}}, {{"--trace", a.trace}});
}

// One axis's value from its text: a name, auto, or one non-negative integer (the family's
// check says what is out of range).
std::int64_t eval_axis_value(const Family& f, const AxisDesc& ax, const std::string& text) {
  if (!ax.names.empty()) {
    const auto it = std::find(ax.names.begin(), ax.names.end(), text);
    if (it == ax.names.end()) throw InputError(ax.flag + " " + text + ": expected " + one_of(ax.names));
    return it - ax.names.begin();
  }
  if (ax.auto_value >= 0 && text == "auto") return ax.auto_value;
  const std::vector<std::int64_t> one = parse_axis_values(ax.flag, text);
  if (one.size() != 1) throw InputError(ax.flag + " " + text + ": expected one value (sweep " + f.name + " takes lists)");
  if (ax.auto_value >= 0 && one[0] == ax.auto_value && one[0] < ax.lo)
    throw InputError(ax.flag + " " + text + ": expected auto or a value from " + std::to_string(ax.lo));
  return one[0];
}

// The config's axes from their flags, the presets (the values they stand for, where the
// axis's own flag is absent) and the fallbacks; an axis whose value is "best" goes to
// `best_axes` with its candidates, to be picked.
void set_eval_axes(const Family& f, EvalArgs& a, std::vector<unsigned char>& cfg, std::vector<const AxisDesc*>* best_axes,
                   std::vector<std::vector<std::int64_t>>* best_values) {
  std::map<std::string, std::string> preset_values;
  for (const PresetDesc& p : f.presets)
    if (a.preset_given[p.flag]->count() != 0)
      for (const auto& [name, value] : p.expand(a.presets[p.flag])) preset_values[name] = value;
  for (const AxisDesc& ax : f.axes) {
    const bool own = a.given[ax.name]->count() != 0;
    if (!own && preset_values.count(ax.name) == 0 && ax.fallback != "best") continue;
    const auto bare = f.bare.find(ax.name);
    const std::string& text = !own ? (preset_values.count(ax.name) ? preset_values[ax.name] : ax.fallback)
                              : a.axes[ax.name].empty() && bare != f.bare.end() ? bare->second
                                                                                 : a.axes[ax.name];
    if (text == "best" && !ax.best.empty()) {
      best_axes->push_back(&ax);
      best_values->push_back(!ax.names.empty() ? parse_names(ax.flag, ax.best, ax.names)
                                               : parse_axis_values(ax.flag, ax.best, ax.lo, ax.hi, ax.auto_value));
      continue;
    }
    set_int(cfg.data(), ax.offset, eval_axis_value(f, ax, text));
  }
  for (const PresetDesc& p : f.presets)
    if (p.apply && a.preset_given[p.flag]->count() != 0) p.apply(a.presets[p.flag], cfg.data());
}

// What an eval found, for its report.
struct EvalReport {
  const Family& f;
  const EvalArgs& a;
  const TopologySpec& topo;
  const std::vector<unsigned char>& cfg;
  const std::vector<const AxisDesc*>& best_axes;
  const BestPick& pick;
  BackendKind backend;
  bool want_ref, want_batched;
  const std::string& diff;
  const Table& config;
  const Table& figures;
  const nlohmann::json& data;
  const std::string& data_line;
};

void write_eval_json(const EvalReport& e) {
  const Family& f = e.f;
  nlohmann::json j = document("kernbench-gpu/" + f.name + "-eval", "2.1.0", e.topo);
  j["family"] = f.name;
  j["engine"] = e.a.engine;
  if (e.want_batched) j["backend"] = to_string(e.backend);
  j["config"] = e.config.row_json(0);
  for (const auto* part : {&e.config, &e.figures}) {
    const nlohmann::json row = part->row_json(0);
    for (auto it = row.begin(); it != row.end(); ++it) j[it.key()] = it.value();
  }
  if (!e.best_axes.empty()) {
    nlohmann::json p;
    for (const AxisDesc* ax : e.best_axes) p[ax->name] = axis_value_json(*ax, get_int(e.cfg.data(), ax->offset));
    j["picked"] = {{"by", f.objective}, {"candidates", e.pick.candidates}, {"valid", e.pick.valid}, {"axes", p}};
  }
  const std::size_t ref_row = 1, batched_row = e.want_ref ? 2 : 1;
  if (e.want_ref) j["reference"] = e.figures.row_json(ref_row);
  if (e.want_batched) j["batched"] = e.figures.row_json(batched_row);
  if (e.want_ref && e.want_batched) {
    j["parity"] = e.diff.empty();
    if (!e.diff.empty()) j["parity_diff"] = e.diff;
  }
  if (e.a.data) j["data"] = e.data;
  cli_out() << j.dump(2) << "\n";
}

void print_eval(const EvalReport& e) {
  std::string line;
  const nlohmann::json c = e.config.row_json(0);
  for (const Column& col : e.config.columns()) line += (line.empty() ? "" : " ") + col.name + "=" + cell_text(c[col.name]);
  cli_printf("%s %s, topology %s\n", e.f.name.c_str(), line.c_str(), e.topo.name.c_str());
  if (!e.best_axes.empty()) {
    std::string picked;
    for (const AxisDesc* ax : e.best_axes)
      picked += " " + ax->name + "=" + cell_text(axis_value_json(*ax, get_int(e.cfg.data(), ax->offset)));
    cli_printf("  picked:%s (least %s of %zu valid of %zu candidates, on the batched model)\n", picked.c_str(),
               e.f.objective.c_str(), e.pick.valid, e.pick.candidates);
  }
  cli_printf("  engine: %s%s\n", e.a.engine.c_str(),
             e.want_batched ? (std::string(" (batched backend: ") + to_string(e.backend) + ")").c_str() : "");
  cli_printf("%s", e.figures.record(0).c_str());
  if (e.want_ref && e.want_batched) cli_printf("  parity: %s\n", e.diff.empty() ? "identical" : ("DIFFERENT: " + e.diff).c_str());
  if (!e.a.trace.empty()) cli_printf("  trace: %s\n", e.a.trace.c_str());
  if (e.a.data) cli_printf("  data: %s\n", e.data_line.c_str());
}

}  // namespace

void cmd_eval(EvalArgs a) {
  const Family& f = *a.family;
  apply_eval_flags(f, a);
  const TopologySpec topo = a.topo.load();
  std::vector<unsigned char> cfg = base_config(f, topo);
  std::vector<const AxisDesc*> best_axes;  // axes whose value is "best": picked below
  std::vector<std::vector<std::int64_t>> best_values;
  set_eval_axes(f, a, cfg, &best_axes, &best_values);
  const BestPick pick = pick_best(f, a.backend, best_axes, best_values, cfg);
  batched::complete_config(f.id, cfg.data());
  const std::int32_t st = f.check(cfg.data());
  if (st != 0) throw InputError(f.status_message(st, cfg.data()));

  const bool want_ref = a.engine != "batched", want_batched = a.engine != "reference";
  if (!a.trace.empty() && !want_ref) throw InputError("--trace: needs the reference engine (--engine reference or both)");
  std::uint64_t seed = 0;
  if (a.data) {
    const std::vector<std::int64_t> s = parse_axis_values("--seed", a.seed);
    if (s.size() != 1) throw InputError("--seed " + a.seed + ": expected one value");
    seed = static_cast<std::uint64_t>(s[0]);
    const std::string why = f.data_refusal(cfg.data());
    if (!why.empty()) throw InputError(why);
  }
  const std::int64_t max_ops = a.max_ops.value();
  if (want_ref || a.data) check_reference_size(f, cfg.data(), max_ops);  // --data runs the reference too
  Study study(f, want_batched ? resolve_backend(a.backend, f.id) : BackendKind::omp, {want_batched, want_ref});
  study.add(cfg.data());
  study.run(Rejected::input_error, a.trace.empty() ? nullptr : &a.trace);
  const std::string& diff = study.diff(0);
  std::string data_line;
  const nlohmann::json data = a.data ? f.data_run(cfg.data(), seed, &data_line) : nlohmann::json();

  // The config and each engine's figures as rows of the family's tables.
  Table config(config_columns(f));
  config.add(config_values(f, cfg.data()));
  Table figures(result_columns(f));
  auto figure_row = [&](const void* result) {
    std::vector<nlohmann::json> row;
    for (const ColumnDesc& c : f.columns) row.push_back(c.get(cfg.data(), result));
    return row;
  };
  figures.add(figure_row(study.result(0)));
  if (want_ref) figures.add(figure_row(study.reference(0)));
  if (want_batched) figures.add(figure_row(study.batched(0)));
  const EvalReport report{f, a, topo, cfg, best_axes, pick, study.backend(), want_ref, want_batched, diff, config, figures,
                          data, data_line};
  if (a.json) write_eval_json(report);
  else print_eval(report);
  if (!diff.empty()) throw InternalError("parity failure: " + diff, __FILE__, __LINE__);
}

}  // namespace kb
