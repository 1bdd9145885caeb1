#include "eval.h"

#include <algorithm>

#include "host/common/error.h"
#include "host/common/output.h"
#include "host/study/document.h"
#include "host/study/study.h"
#include "host/sweep/axis_values.h"
#include "host/sweep/space.h"
#include "host/topology/fields.h"
#include "host/topology/load.h"

namespace kb::api {

std::string TopologyRequest::setter_of(const std::string& field) const {
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const std::string& s = sets[i];
    if (s.compare(0, s.find('='), field) == 0 && s.find('=') == field.size()) {
      const auto o = set_origin.find(i);
      return o != set_origin.end() ? o->second : "--set " + s;
    }
  }
  return "";
}

TopologySpec TopologyRequest::load() const {
  if (path_given && path.empty()) throw InputError("--topology: empty path (leave the flag out for the default)");
  // One value per field: a second one is a contradiction, not an override.
  for (std::size_t j = 0; j < sets.size(); ++j) {
    const std::string field = sets[j].substr(0, sets[j].find('='));
    for (std::size_t i = 0; i < j; ++i)
      if (sets[i].substr(0, sets[i].find('=')) == field) {
        const auto oi = set_origin.find(i), oj = set_origin.find(j);
        throw InputError((oi != set_origin.end() ? oi->second : "--set " + sets[i]) + " and " +
                         (oj != set_origin.end() ? oj->second : "--set " + sets[j]) + " both set " + field + ": give it once");
      }
  }
  return load_topology(path.empty() ? data_dir() + "/topologies/default.yaml" : path, sets);
}

std::int64_t parse_max_ops(const std::string& text) {
  std::int64_t v = 0;
  std::string why;
  if (!parse_int_in(text, 1, INT32_MAX, &v, &why)) throw InputError("--max-ops " + (text.empty() ? std::string("''") : text) + ": " + why);
  return v;
}

namespace {

struct BestPick {
  std::size_t candidates = 0, valid = 0;
};

// Sets the axes given as "best" in `cfg` to the values of least objective (the family's, e.g.
// latency_ps) on the batched model, over every combination of their values that the family's
// check accepts (the first in order on a tie). None valid: the input error of the last
// candidate of the highest status (statuses are numbered in the order a check meets them,
// and lists grow in resources: the one that got furthest with the most ranks).
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
    throw InvalidConfig(which + ": none of " + std::to_string(pick.candidates) + " candidates is valid; the last that got furthest: " +
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

// Each given value's text is not empty (a bare flag's may be), every name is the family's,
// and the engine and backend are words it knows. The command line's parser meets most of
// these first; a request built in a program (Python) meets them here, in the same words.
void check_request(const Family& f, const EvalRequest& r) {
  check_named(f, r.axes, r.hw_axes, r.presets, true);
  for (const auto& [flag, text] : {std::pair<std::string, std::string>{"--engine", r.engine}, {"--backend", r.backend},
                                   {"--seed", r.seed}})
    if (text.empty()) throw empty_value(flag);
  if (r.data && !f.data_run) throw InputError("--data: " + f.name + " has no data mode");
}

// The hardware axes as overrides of the topology (each checked here, so that an error names
// the flag the user typed), and the engine, backend and trace.
void apply_flags(const Family& f, EvalRequest& r) {
  for (const HwAxisDesc& h : f.hw_axes) {
    const auto given = r.hw_axes.find(h.name);
    if (given == r.hw_axes.end()) continue;
    const std::string& text = given->second;
    const HwField* field = find_hw_field(h.path);
    std::int64_t v = 0;
    std::string why;
    if (!field->parse(text, &v, &why))
      throw InputError(h.flag + " " + text + ": " + why +
                       (text.find(',') != std::string::npos ? " (eval takes one value; sweep takes lists)" : ""));
    r.topology.set_origin[r.topology.sets.size()] = h.flag + " " + text;
    r.topology.sets.push_back(h.path + "=" + text);
  }
  if (r.engine != "reference" && r.engine != "batched" && r.engine != "both")
    throw InputError("--engine " + r.engine + ": expected reference, batched or both");
  if (r.backend != "auto" && r.backend != "cuda" && r.backend != "omp")  // even when no batched run uses it
    throw InputError("--backend " + r.backend + ": expected auto, cuda or omp");
  check_output_path("--trace", r.trace, "trace.json");
  check_outputs_distinct({{"--topology", r.topology.path}}, {{"--trace", r.trace}});
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

// The config's axes from their values, the presets (the values they stand for, where the
// axis's own value is absent) and the fallbacks; an axis whose value is "best" goes to
// `best_axes` with its candidates, to be picked.
void set_eval_axes(const Family& f, const EvalRequest& r, std::vector<unsigned char>& cfg,
                   std::vector<const AxisDesc*>* best_axes, std::vector<std::vector<std::int64_t>>* best_values) {
  std::map<std::string, std::string> preset_values;
  for (const PresetDesc& p : f.presets) {
    const auto given = r.presets.find(p.flag);
    if (given != r.presets.end())
      for (const auto& [name, value] : p.expand(given->second)) preset_values[name] = value;
  }
  for (const AxisDesc& ax : f.axes) {
    const auto own = r.axes.find(ax.name);
    const auto preset = preset_values.find(ax.name);
    if (own == r.axes.end() && preset == preset_values.end() && ax.fallback != "best") {
      if (ax.fallback.empty()) throw InputError(ax.flag + " is required (see kernbench-gpu --help)");
      continue;
    }
    const auto bare = f.bare.find(ax.name);
    const std::string& text = own == r.axes.end() ? (preset != preset_values.end() ? preset->second : ax.fallback)
                              : own->second.empty() && bare != f.bare.end() ? bare->second
                                                                            : own->second;
    if (text == "best" && !ax.best.empty()) {
      best_axes->push_back(&ax);
      best_values->push_back(!ax.names.empty() ? parse_names(ax.flag, ax.best, ax.names)
                                               : parse_axis_values(ax.flag, ax.best, ax.lo, ax.hi, ax.auto_value));
      continue;
    }
    set_int(cfg.data(), ax.offset, eval_axis_value(f, ax, text));
  }
  for (const PresetDesc& p : f.presets) {
    const auto given = r.presets.find(p.flag);
    if (p.apply && given != r.presets.end()) p.apply(given->second, cfg.data());
  }
}

}  // namespace

InputError empty_value(const std::string& flag) {
  return InputError(flag + " '': an empty value; leave the option out for its default");
}

void check_named(const Family& f, const std::map<std::string, std::string>& axes,
                 const std::map<std::string, std::string>& hw_axes, const std::map<std::string, std::string>& presets,
                 bool bare_empty) {
  for (const auto& [name, text] : axes) {
    const AxisDesc* ax = f.axis(name);
    if (!ax) throw InputError(name + ": not an axis of " + f.name);
    if (text.empty() && !(bare_empty && f.bare.count(name) > 0)) throw empty_value(ax->flag);
  }
  for (const auto& [name, text] : hw_axes) {
    const auto h = std::find_if(f.hw_axes.begin(), f.hw_axes.end(), [&](const HwAxisDesc& d) { return d.name == name; });
    if (h == f.hw_axes.end()) throw InputError(name + ": not a hardware axis of " + f.name);
    if (text.empty()) throw empty_value(h->flag);
  }
  for (const auto& [flag, text] : presets) {
    if (std::none_of(f.presets.begin(), f.presets.end(), [&](const PresetDesc& p) { return p.flag == flag; }))
      throw InputError(flag + ": not a preset of " + f.name);
    if (text.empty()) throw empty_value(flag);
  }
}

EvalConfig eval_config(EvalRequest r) {
  KB_INTERNAL_CHECK(r.family != nullptr, "eval: a request without a family");
  const Family& f = *r.family;
  check_request(f, r);
  apply_flags(f, r);
  EvalConfig out;
  out.topology = r.topology.load();
  std::vector<unsigned char>& cfg = out.config;
  cfg = base_config(f, out.topology);
  std::vector<std::vector<std::int64_t>> best_values;
  set_eval_axes(f, r, cfg, &out.best_axes, &best_values);
  if (f.prepare) {
    std::vector<std::string> swept;
    for (const AxisDesc* a : out.best_axes) swept.push_back(a->name);
    f.prepare(r.presets, swept, cfg.data());
  }
  const BestPick pick = pick_best(f, r.backend, out.best_axes, best_values, cfg);
  out.candidates = pick.candidates, out.valid = pick.valid;
  batched::complete_config(f.id, cfg.data());
  const std::int32_t st = f.check(cfg.data());
  if (st != 0) throw InvalidConfig(f.status_message(st, cfg.data()));
  return out;
}

EvalResult run_eval(EvalRequest r) {
  KB_INTERNAL_CHECK(r.family != nullptr, "eval: a request without a family");
  const Family& f = *r.family;
  const std::int64_t max_ops = r.max_ops ? parse_max_ops(*r.max_ops) : kDefaultMaxOps;
  EvalConfig made = eval_config(r);
  apply_flags(f, r);  // the request's own copy: its engine, backend and trace checked
  EvalResult out;
  out.family = &f;
  out.engine = r.engine, out.trace = r.trace, out.data = r.data;
  out.topology = std::move(made.topology);
  out.config = std::move(made.config);
  out.best_axes = std::move(made.best_axes);
  out.candidates = made.candidates, out.valid = made.valid;
  std::vector<unsigned char>& cfg = out.config;

  out.reference = r.engine != "batched", out.batched = r.engine != "reference";
  if (!r.trace.empty() && !out.reference) throw InputError("--trace: needs the reference engine (--engine reference or both)");
  std::uint64_t seed = 0;
  if (r.data) {
    const std::vector<std::int64_t> s = parse_axis_values("--seed", r.seed);
    if (s.size() != 1) throw InputError("--seed " + r.seed + ": expected one value");
    seed = static_cast<std::uint64_t>(s[0]);
    const std::string why = f.data_refusal(cfg.data());
    if (!why.empty()) throw InputError(why);
  }
  if (out.reference || r.data) check_reference_size(f, cfg.data(), max_ops);  // --data runs the reference too
  Study study(f, out.batched ? resolve_backend(r.backend, f.id) : BackendKind::omp, {out.batched, out.reference});
  study.add(cfg.data());
  study.run(Rejected::input_error, r.trace.empty() ? nullptr : &r.trace);
  out.backend = study.backend();
  out.diff = study.diff(0);
  if (r.data) out.data_json = f.data_run(cfg.data(), seed, &out.data_line);
  if (f.kernels) out.kernels = f.kernels(cfg.data());

  // The config and each engine's figures as rows of the family's tables.
  out.config_table = Table(config_columns(f));
  out.config_table.add(config_values(f, cfg.data()));
  out.figures = Table(result_columns(f));
  auto figure_row = [&](const void* result) {
    std::vector<nlohmann::json> row;
    for (const ColumnDesc& c : f.columns) row.push_back(c.get(cfg.data(), result));
    return row;
  };
  out.figures.add(figure_row(study.result(0)));
  if (out.reference) out.figures.add(figure_row(study.reference(0)));
  if (out.batched) out.figures.add(figure_row(study.batched(0)));
  return out;
}

nlohmann::json eval_json(const EvalResult& e) {
  const Family& f = *e.family;
  nlohmann::json j = document("kernbench-gpu/" + f.name + "-eval", "2.1.0", e.topology);
  j["family"] = f.name;
  j["engine"] = e.engine;
  if (e.batched) j["backend"] = to_string(e.backend);
  j["config"] = e.config_table.row_json(0);
  for (const auto* part : {&e.config_table, &e.figures}) {
    const nlohmann::json row = part->row_json(0);
    for (auto it = row.begin(); it != row.end(); ++it) j[it.key()] = it.value();
  }
  if (!e.best_axes.empty()) {
    nlohmann::json p;
    for (const AxisDesc* ax : e.best_axes) p[ax->name] = axis_value_json(*ax, get_int(e.config.data(), ax->offset));
    j["picked"] = {{"by", f.objective}, {"candidates", e.candidates}, {"valid", e.valid}, {"axes", p}};
  }
  const std::size_t ref_row = 1, batched_row = e.reference ? 2 : 1;
  if (e.reference) j["reference"] = e.figures.row_json(ref_row);
  if (e.batched) j["batched"] = e.figures.row_json(batched_row);
  if (e.reference && e.batched) {
    j["parity"] = e.diff.empty();
    if (!e.diff.empty()) j["parity_diff"] = e.diff;
  }
  if (e.data) j["data"] = e.data_json;
  if (!e.kernels.is_null()) j["kernels"] = e.kernels;
  return j;
}

void JsonEvalReporter::report(const EvalResult& r) { out_ << eval_json(r).dump(2) << "\n"; }

void TerminalEvalReporter::report(const EvalResult& e) {
  std::string line;
  const nlohmann::json c = e.config_table.row_json(0);
  for (const Column& col : e.config_table.columns())  // in column order; a column the table leaves out, left out
    if (c.contains(col.name)) line += (line.empty() ? "" : " ") + col.name + "=" + cell_text(c.at(col.name));
  stream_printf(out_, "%s %s, topology %s\n", e.family->name.c_str(), line.c_str(), e.topology.name.c_str());
  if (!e.best_axes.empty()) {
    std::string picked;
    for (const AxisDesc* ax : e.best_axes)
      picked += " " + ax->name + "=" + cell_text(axis_value_json(*ax, get_int(e.config.data(), ax->offset)));
    stream_printf(out_, "  picked:%s (least %s of %zu valid of %zu candidates, on the batched model)\n", picked.c_str(),
               e.family->objective.c_str(), e.valid, e.candidates);
  }
  stream_printf(out_, "  engine: %s%s\n", e.engine.c_str(),
             e.batched ? (std::string(" (batched backend: ") + to_string(e.backend) + ")").c_str() : "");
  stream_printf(out_, "%s", e.figures.record(0).c_str());
  if (e.reference && e.batched) stream_printf(out_, "  parity: %s\n", e.diff.empty() ? "identical" : ("DIFFERENT: " + e.diff).c_str());
  for (const nlohmann::json& k : e.kernels) {  // each listed kernel: its name, then its other fields
    std::string line;
    for (auto it = k.begin(); it != k.end(); ++it)
      if (it.key() != "name") line += " " + it.key() + "=" + cell_text(it.value());
    stream_printf(out_, "  kernel %s:%s\n", k.value("name", "?").c_str(), line.c_str());
  }
  if (!e.trace.empty()) stream_printf(out_, "  trace: %s\n", e.trace.c_str());
  if (e.data) stream_printf(out_, "  data: %s\n", e.data_line.c_str());
}

void eval(const EvalRequest& request, EvalReporter& reporter) {
  const EvalResult r = run_eval(request);
  reporter.report(r);
  if (!r.diff.empty()) throw InternalError("parity failure: " + r.diff, __FILE__, __LINE__);
}

}  // namespace kb::api
