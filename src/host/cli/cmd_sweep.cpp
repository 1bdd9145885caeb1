// `kernbench-gpu sweep NAME`: a space of a family's configs evaluated by the batched model
// and reduced to the best per group, the top k, a Pareto front and a latency histogram.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cmd_family.h"
#include "sweep_report.h"
#include "host/common/document.h"
#include "host/common/error.h"
#include "host/common/json_stream.h"
#include "host/common/output.h"
#include "host/common/table.h"
#include "host/parity/figures.h"
#include "host/sweep/merge.h"
#include "host/sweep/space.h"
#include "host/sweep/space_file.h"
#include "mpi.h"

namespace kb {

namespace fs = std::filesystem;

CLI::App* add_sweep_command(CLI::App* sweep, SweepArgs& a) {
  const Family& f = *a.family;
  auto* cmd = sweep->add_subcommand(
      f.name, f.description + ": best per group, top k, Pareto front and latency histogram, reduced on the device");
  const char* list = "; values: V, a list V1,V2, ranges LO:HI[:+STEP] or LO:HI:*FACTOR, or a mix";
  bool first = true;
  for (const AxisDesc& ax : f.axes) {
    std::string help = ax.help;
    if (!ax.names.empty()) help += " (" + one_of(ax.names) + ", or a list)";
    help += ax.fallback.empty() ? " [required, unless in a --zip]" : " [default: " + ax.fallback + "]";
    if (first) help += list;
    first = false;
    a.given[ax.name] = cmd->add_option(ax.flag, a.axes[ax.name], help);
  }
  for (const HwAxisDesc& h : f.hw_axes)
    a.given[h.name] =
        cmd->add_option(h.flag, a.hw_axes[h.name], h.help + ", a list (same as --hw " + h.path + "=...; default: the topology's)");
  cmd->add_option("--hw", a.hw,
                  "sweep a topology field: PATH=LIST, e.g. cube.hbm.bandwidth_gbps=410,819,1638 (repeatable; fields: "
                  "docs/topology.md)")
      ->take_all()
      ->allow_extra_args(false);
  cmd->add_option("--zip", a.zips,
                  "fields that take their values together, NAMES=TUPLES, e.g. m,n,k=32/10240/8192,2048/8192/8192 "
                  "(names: axes, hardware axes or topology paths; a tuple's values joined by '/'; repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  a.opt["--group"] = cmd->add_option("--group", a.group,
                  "axes whose values form a group with its own best config and Pareto front, or none [default: " +
                      f.default_group + "]");
  a.opt["--top"] = cmd->add_option("--top", a.top, "report the N fastest configs of the whole space (0..1024; ties: the order given) [default: 10]");
  std::string costs;
  for (const CostDesc& c : f.costs) costs += c.name + ", ";
  a.opt["--pareto"] = cmd->add_option("--pareto", a.pareto, "Pareto front of latency against: " + costs + "or none [default: " + f.default_cost + "]");
  a.opt["--no-histogram"] = cmd->add_flag("--no-histogram", a.no_histogram, "skip the latency histogram (8 bins per octave)");
  cmd->add_option("--backend", a.backend, "auto, cuda or omp")->capture_default_str();
  a.opt["--chunk"] = cmd->add_option("--chunk", a.chunk, "configs per device pass, 1..2^30; 0: 2^20 on OpenMP, 2^22 on CUDA");
  cmd->add_flag("--json", a.json, "print one JSON object instead of tables");
  cmd->add_option("--space", a.space,
                  "FILE.yaml: the space written down (axes, zips, group, objectives, reductions, topology; "
                  "docs/spaces.md); `sweep --space FILE` takes the family from the file");
  cmd->add_option("--shard", a.shard,
                  "I/N: evaluate shard I (from 0) of N, a contiguous slice of the space, and write its mergeable "
                  "summary with --out or --json (kernbench-gpu merge combines them); under mpirun each rank takes one");
  a.opt["--recheck"] = cmd->add_option("--recheck", a.recheck,
                  "re-run the N fastest configs on the reference engine after the sweep (0..1024, 0: none); a "
                  "difference is exit 3 [default: 10]");
  a.opt["--max-hours"] = cmd->add_option("--max-hours", a.max_hours,
                  "refuse a space whose estimated time (measured on a sample of it) is longer; 0: no limit [default: 24]");
  a.opt["--progress-every"] = cmd->add_option("--progress-every", a.progress_every,
                  "seconds between progress lines (done/total, configs/s, ETA) when stderr is not a terminal; 0: none "
                  "[default: 10]");
  a.opt["--max-ops"] = cmd->add_option("--max-ops", a.max_ops, std::string(kMaxOpsHelp) + "; the re-check passes over larger configs");
  cmd->add_option("--out", a.out, "also write the JSON to FILE");
  cmd->add_option("--csv", a.csv,
                  "also write the reported configs to FILE as CSV: a row per best, top and Pareto config, with the "
                  "columns of the JSON rows after report, group_index and cost");
  a.topo.add(cmd, false);
  return cmd;
}

namespace {

// An integer option by the strict rule (decimal digits, in lo..hi), or `fallback` when not given.
std::int64_t int_option(const SweepArgs& a, const char* flag, const std::string& text, std::int64_t lo, std::int64_t hi,
                        std::int64_t fallback) {
  if (a.opt.at(flag)->count() == 0) return fallback;
  std::int64_t v = 0;
  std::string why;
  if (!parse_int_in(text, lo, hi, &v, &why)) throw InputError(std::string(flag) + " " + (text.empty() ? std::string("''") : text) + ": " + why);
  return v;
}

// A number of hours or seconds: decimal digits with an optional fraction (no sign, exponent,
// nan or inf), or `fallback` when not given.
double decimal_option(const SweepArgs& a, const char* flag, const std::string& text, double fallback) {
  if (a.opt.at(flag)->count() == 0) return fallback;
  std::size_t i = 0, digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  }
  if (text.empty() || digits == 0 || i != text.size() || text.size() > 32)
    throw InputError(std::string(flag) + " " + (text.empty() ? std::string("''") : text) + ": expected a number >= 0 in decimal digits, e.g. 2 or 0.5");
  return std::strtod(text.c_str(), nullptr);
}


std::string us(ps_t ps) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(ps) / 1e6);
  return b;
}

}  // namespace


namespace {

// The request as data: what `merge` rebuilds the space from.
nlohmann::json request_json(const SweepOutcome& o) {
  nlohmann::json hw = nlohmann::json::array();
  for (const HwList& h : o.req.hw) hw.push_back({h.flag, h.path, h.list});
  return {{"family", o.f->name}, {"axes", o.req.axes}, {"hw", hw}, {"zips", o.req.zips}, {"group", o.req.group},
          {"top", o.top}, {"recheck", o.recheck}, {"pareto", o.pareto_name}, {"histogram", o.red.histogram},
          {"top_k", o.red.top_k}};
}

// Re-runs the fastest configs on the reference engine; a figure that differs is exit 3. A
// config whose reference run would build more than --max-ops ops is passed over (listed as
// skipped), and the next of the top list taken in its place.
nlohmann::json recheck(const SweepOutcome& o, const batched::SpaceDecoder& decode) {
  const Family& f = *o.f;
  nlohmann::json checked = nlohmann::json::array(), skipped = nlohmann::json::array();
  std::vector<unsigned char> cfg(f.config_size()), res(f.result_size()), ref(f.result_size());
  const std::size_t n = static_cast<std::size_t>(o.recheck);
  for (std::size_t k = 0; k < o.sum.top.size() && checked.size() < n; ++k) {
    const std::int64_t i = o.sum.top[k].index;
    decode(i, cfg.data());
    const std::int64_t ops = f.reference_ops(cfg.data());
    if (ops > o.max_ops) {
      skipped.push_back({{"index", i}, {"reference_ops", ops}});
      continue;
    }
    batched::evaluate_host(f.id, cfg.data(), res.data());
    f.reference(cfg.data(), ref.data(), nullptr);
    const std::string diff = figures_diff(f, cfg.data(), ref.data(), res.data());
    if (!diff.empty())
      throw InternalError("re-check: config " + std::to_string(i) + " " + nlohmann::json(config_values(f, cfg.data())).dump() +
                              ": the reference engine differs from the batched model: " + diff,
                          __FILE__, __LINE__);
    const ColumnDesc* lat = f.column("latency_ps");
    checked.push_back({{"index", i}, {"latency_ps", lat->get(cfg.data(), res.data())},
                       {"reference_latency_ps", lat->get(cfg.data(), ref.data())}, {"identical", true}});
  }
  return {{"asked", o.recheck}, {"max_ops", o.max_ops}, {"checked", checked}, {"skipped", skipped}, {"ok", true}};
}

}  // namespace

int parse_pareto(const Family& f, const std::string& s) {
  if (s == "none") return 0;
  std::string names;
  for (std::size_t i = 0; i < f.costs.size(); ++i) {
    if (f.costs[i].name == s) return static_cast<int>(i) + 1;
    names += f.costs[i].name + ", ";
  }
  throw InputError("--pareto " + s + ": expected " + names.substr(0, names.size() - 2) + " or none");
}

void report_sweep(const SweepOutcome& o, bool json_out, const std::string& out, const std::string& csv_out) {
  const Family& f = *o.f;
  const BuiltSpace& sp = o.sp;
  const batched::SweepSummary& sum = o.sum;
  const batched::Reductions& red = o.red;
  const TopologySpec& topo = o.topo;
  const BackendKind backend = o.backend;
  const double seconds = o.seconds;
  const std::string& pareto_name = o.pareto_name;
  const std::string group_text = o.req.group.empty() ? f.default_group : o.req.group;
  const bool shard = o.shard_n > 0;
  struct Args {
    bool json;
    std::string out, csv;
  } a{json_out, out, csv_out};
  // The top list as asked for (the summary may hold more, for the re-check).
  std::vector<batched::Ranked> top_shown(sum.top.begin(), sum.top.begin() + std::min<std::ptrdiff_t>(
                                                                              static_cast<std::ptrdiff_t>(sum.top.size()), o.top));
  const std::int64_t evaluated_size = shard ? sum.evaluated : sp.space.size();
  const std::int64_t size = sp.space.size();
  (void)evaluated_size;
  const std::int64_t group_stride = size / sp.space.groups();
  const batched::SpaceDecoder decode(sp.space);
  const nlohmann::json rechecked = shard || o.recheck == 0 ? nlohmann::json() : recheck(o, decode);
  std::vector<unsigned char> cfg(f.config_size()), res(f.result_size());
  auto load = [&](std::int64_t i) {
    decode(i, cfg.data());
    batched::evaluate_host(f.id, cfg.data(), res.data());
  };

  auto group_key = [&](std::int64_t g) {
    decode(g * group_stride, cfg.data());
    nlohmann::json key = nlohmann::json::object();
    for (std::size_t i = 0; i < static_cast<std::size_t>(sp.space.group_axes); ++i) {
      if (static_cast<int>(i) == sp.case_axis) key["case"] = sp.case_of(g * group_stride);
      for (const SpaceAxis& m : sp.axes[i].members) key[m.name] = m.value_json(get_int(cfg.data(), m.offset));
    }
    return key;
  };
  auto first_reason = [&](std::int64_t g) {
    load(g * group_stride);
    std::int32_t st;
    std::memcpy(&st, res.data(), sizeof st);
    return f.status_message(st, cfg.data());
  };
  // One row per reported config: its index, every config column, every result column.
  const bool has_case = !sp.cases.empty();
  std::vector<Column> cols = {{"index", "", ColType::integer}};
  if (has_case) cols.push_back({"case", "", ColType::text});
  for (const SpaceAxis& c : sp.columns) cols.push_back(axis_column(c.name, c.axis, c.field));
  for (const Column& c : result_columns(f)) cols.push_back(c);
  auto row = [&](std::int64_t i) {
    load(i);
    std::vector<nlohmann::json> r = {i};
    if (has_case) r.push_back(sp.case_of(i));
    for (const SpaceAxis& c : sp.columns) r.push_back(c.value_json(get_int(cfg.data(), c.offset)));
    for (const ColumnDesc& c : f.columns) r.push_back(c.get(cfg.data(), res.data()));
    return r;
  };
  auto row_json = [&](std::int64_t i) {
    Table t(cols);
    t.add(row(i));
    return t.row_json(0);
  };
  // The terminal shows every config column and the result columns marked terminal.
  std::vector<std::size_t> shown_cols;
  const std::size_t first_config = has_case ? 2 : 1;
  if (has_case) shown_cols.push_back(1);
  for (std::size_t c = 0; c < sp.columns.size(); ++c) shown_cols.push_back(first_config + c);
  for (std::size_t c = 0; c < f.columns.size(); ++c)
    if (f.columns[c].terminal) shown_cols.push_back(first_config + sp.columns.size() + c);
  auto terminal = [&](const std::vector<std::int64_t>& indices, const std::vector<nlohmann::json>& lead,
                      const std::string& lead_name) {
    std::vector<Column> tc;
    if (!lead_name.empty()) tc.push_back({lead_name, ""});
    for (std::size_t c : shown_cols) tc.push_back(cols[c]);
    Table t(tc);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const std::vector<nlohmann::json> full = row(indices[k]);
      std::vector<nlohmann::json> r;
      if (!lead_name.empty()) r.push_back(lead[k]);
      for (std::size_t c : shown_cols) r.push_back(full[c]);
      t.add(r);
    }
    return t.text();
  };

  if (!a.csv.empty()) {  // the reported configs, one table: why each is reported, then its row
    std::vector<Column> csv_cols = {{"report", "", ColType::text}, {"group_index", "", ColType::integer},
                                    {"cost", "", ColType::integer}};
    csv_cols.insert(csv_cols.end(), cols.begin(), cols.end());
    Table csv(csv_cols);
    auto add = [&](const char* report, std::int64_t group, nlohmann::json cost, std::int64_t index) {
      std::vector<nlohmann::json> r = {report, group, std::move(cost)};
      for (auto& v : row(index)) r.push_back(std::move(v));
      csv.add(std::move(r));
    };
    for (std::size_t g = 0; g < sum.best.size(); ++g)
      if (sum.best[g].index >= 0) add("best", static_cast<std::int64_t>(g), nullptr, sum.best[g].index);
    for (const auto& t : top_shown) add("top", t.index / group_stride, nullptr, t.index);
    for (const auto& p : sum.pareto) add("pareto", p.group, p.cost, p.index);
    write_file_atomic(a.csv, csv.csv());
  }
  // The JSON (one model evaluation per reported config) only when it is asked for.
  if (a.json || !a.out.empty()) {
    nlohmann::json j = document("kernbench-gpu/" + f.name + "-space-sweep", "2.0.0", topo);
    LazyArrays lazy;  // the arrays too large to hold, made as they are written
    j["family"] = f.name;
    j["backend"] = to_string(backend);
    // topology.fields holds the base values; these fields take each value of their axis.
    nlohmann::json swept = nlohmann::json::array();
    for (std::size_t i = 0; i < sp.axes.size(); ++i)
      for (const SpaceAxis& m : sp.axes[i].members)
        if (m.field && sp.space.axes[i].length() > 1) swept.push_back(m.field->path);
    j["topology"]["swept"] = swept;
    nlohmann::json axes = nlohmann::json::array();
    for (std::size_t i = 0; i < sp.axes.size(); ++i) {
      nlohmann::json values = nlohmann::json::array();
      for (std::int64_t t = 0; t < sp.space.axes[i].length(); ++t)
        values.push_back(sp.axes[i].tuple_json(sp.space.axes[i].values, static_cast<std::size_t>(t)));
      nlohmann::json axis = {{"name", sp.axes[i].name}, {"values", values}};
      if (sp.axes[i].zipped()) {
        axis["names"] = nlohmann::json::array();
        for (const SpaceAxis& m : sp.axes[i].members) axis["names"].push_back(m.name);
      }
      if (static_cast<int>(i) == sp.case_axis) axis["cases"] = sp.cases;
      axes.push_back(axis);
    }
    nlohmann::json fixed = nlohmann::json::object();  // every config column no axis sweeps
    for (const SpaceAxis& c : sp.columns) {
      bool swept = false;
      for (const SweptAxis& ax : sp.axes)
        for (const SpaceAxis& m : ax.members) swept |= m.offset == c.offset;
      if (!swept) fixed[c.name] = c.value_json(get_int(sp.space.base.data(), c.offset));
    }
    if (has_case && sp.case_axis < 0) fixed["case"] = sp.cases[0];
    nlohmann::json group = nlohmann::json::array();
    for (int i = 0; i < sp.space.group_axes; ++i) group.push_back(sp.axes[static_cast<std::size_t>(i)].name);
    j["space"] = {{"size", size}, {"axes", axes}, {"fixed", fixed}, {"group", group}, {"groups", sp.space.groups()}};
    j["evaluated"] = sum.evaluated;
    j["valid"] = sum.valid;
    nlohmann::json invalid = nlohmann::json::object();  // invalid configs by reason
    for (std::size_t st = 1; st < sum.by_status.size(); ++st)
      if (sum.by_status[st] > 0) invalid[f.status_name(static_cast<std::int32_t>(st))] = sum.by_status[st];
    j["invalid"] = invalid;
    j["latency_checksum"] = sum.latency_checksum;
    j["timing"] = {{"seconds", seconds},
                   {"configs_per_s", seconds > 0 ? static_cast<double>(sum.evaluated) / seconds : 0.0}};
    if (shard) {
      j["shard"] = {{"index", o.shard_i}, {"count", o.shard_n}, {"block", shard_block(size, o.shard_n)},
                    {"configs", shard_configs(size, o.shard_i, o.shard_n)},
                    {"request", request_json(o)}, {"summary", summary_json(sum, false)}};
      j["shard"]["summary"]["best"] = nullptr;
      lazy["/shard/summary/best"] = {static_cast<std::int64_t>(sum.best.size()), [&](std::int64_t g) {
                                       return summary_best_json(sum.best[static_cast<std::size_t>(g)]);
                                     }};
    } else if (o.recheck > 0) {
      j["recheck"] = rechecked;
    }
    if (!o.merged.is_null()) j["merged"] = o.merged;
    // Per group and per Pareto point (up to 2^20 groups) the rows are made as they are
    // written, so the document is never whole in memory.
    j["best_per_group"] = nullptr;
    lazy["/best_per_group"] = {static_cast<std::int64_t>(sum.best.size()), [&](std::int64_t g) {
                                 const auto& b = sum.best[static_cast<std::size_t>(g)];
                                 nlohmann::json entry{{"group", group_key(g)},
                                                      {"best", b.index < 0 ? nlohmann::json() : row_json(b.index)}};
                                 if (b.index < 0) entry["reason"] = "no valid config; the first: " + first_reason(g);
                                 return entry;
                               }};
    nlohmann::json top = nlohmann::json::array();
    for (const auto& t : top_shown) top.push_back(row_json(t.index));
    j["top"] = top;
    if (red.pareto != 0) {
      std::vector<std::size_t> front_at;  // where each group's front starts in sum.pareto
      for (std::size_t k = 0; k < sum.pareto.size(); ++k)
        if (k == 0 || sum.pareto[k].group != sum.pareto[k - 1].group) front_at.push_back(k);
      front_at.push_back(sum.pareto.size());
      j["pareto"] = {{"cost", pareto_name},
                     {"meaning", f.costs[static_cast<std::size_t>(red.pareto - 1)].meaning},
                     {"fronts", nullptr}};
      lazy["/pareto/fronts"] = {static_cast<std::int64_t>(front_at.size()) - 1, [&, front_at](std::int64_t i) {
                                  const std::size_t from = front_at[static_cast<std::size_t>(i)];
                                  const std::int64_t group = sum.pareto[from].group;
                                  nlohmann::json points = nlohmann::json::array();
                                  for (std::size_t k = from; k < front_at[static_cast<std::size_t>(i) + 1]; ++k) {
                                    nlohmann::json c = row_json(sum.pareto[k].index);
                                    c["cost"] = sum.pareto[k].cost;
                                    points.push_back(c);
                                  }
                                  return nlohmann::json{{"group_index", group}, {"group", group_key(group)},
                                                        {"points", points}};
                                }};
    }
    if (red.histogram) {
      nlohmann::json bins = nlohmann::json::array();
      for (int b = 0; b < batched::kHistBins; ++b)
        if (sum.histogram[static_cast<std::size_t>(b)] > 0)
          bins.push_back({{"lo_ps", batched::hist_bin_lo(b)}, {"hi_ps", batched::hist_bin_lo(b + 1)},
                          {"count", sum.histogram[static_cast<std::size_t>(b)]}});
      j["histogram"] = {{"bins_per_octave", batched::kHistBinsPerOctave}, {"bins", bins}};
    }
    auto write = [&](std::ostream& os) {
      write_json(os, j, lazy);
      os << "\n";
    };
    if (!a.out.empty()) write_file_atomic(a.out, write);
    if (a.json) {
      if (a.out.empty()) {
        write(std::cout);
      } else {  // the file just written, rather than every row evaluated again
        std::ifstream in(a.out, std::ios::binary);
        std::cout << in.rdbuf();
      }
      std::cout.flush();
      return;
    }
  }

  const std::int64_t ev = sum.evaluated;
  std::printf("  valid %lld (%.1f%%), %.3f s, %.3g configs/s\n", (long long)sum.valid,
              ev > 0 ? 100.0 * static_cast<double>(sum.valid) / static_cast<double>(ev) : 0.0, seconds,
              seconds > 0 ? static_cast<double>(ev) / seconds : 0.0);
  if (shard)
    std::printf("  shard %lld/%lld: %lld of %lld configs (merge the shards with `kernbench-gpu merge`)\n",
                (long long)o.shard_i, (long long)o.shard_n, (long long)sum.evaluated, (long long)size);
  if (!shard && o.recheck > 0) {
    std::printf("  re-checked the %zu fastest configs on the reference engine: identical\n", rechecked["checked"].size());
    if (!rechecked["skipped"].empty())
      std::printf("  passed over %zu faster config(s) whose reference run would build more than --max-ops %lld ops\n",
                  rechecked["skipped"].size(), static_cast<long long>(o.max_ops));
  }
  if (sum.valid == 0) std::printf("  no valid config in the space\n");
  if (sum.valid < ev) {
    std::string why;
    for (std::size_t st = 1; st < sum.by_status.size(); ++st)
      if (sum.by_status[st] > 0)
        why += (why.empty() ? "" : ", ") + f.status_name(static_cast<std::int32_t>(st)) + " " + std::to_string(sum.by_status[st]);
    std::printf("  invalid %lld: %s\n", (long long)(ev - sum.valid), why.c_str());
  }
  bool mixed = false;  // does a problem axis vary inside a group?
  std::string problem;
  for (std::size_t i = static_cast<std::size_t>(sp.space.group_axes); i < sp.axes.size(); ++i)
    for (const SpaceAxis& m : sp.axes[i].members)
      if (m.axis && m.axis->problem) {
        mixed = true;
        problem += (problem.empty() ? "" : ", ") + m.name;
      }
  if (mixed) std::printf("  note: %s vary inside a group, so its best and its front compare different problems\n", problem.c_str());
  std::printf("  columns: times in microseconds (NAME_us)\n");
  const std::size_t shown = std::min<std::size_t>(sum.best.size(), 50);
  std::printf("\nbest per group (%s):\n", group_text.c_str());
  std::vector<std::int64_t> best_rows;
  for (std::size_t g = 0; g < shown; ++g)
    if (sum.best[g].index >= 0) best_rows.push_back(sum.best[g].index);
  if (!best_rows.empty()) std::printf("%s", terminal(best_rows, {}, "").c_str());
  for (std::size_t g = 0; g < shown; ++g)  // after the table: the groups it leaves out, and why
    if (sum.best[g].index < 0)
      std::printf("  group %s: no valid config (the first: %s)\n", group_key(static_cast<std::int64_t>(g)).dump().c_str(),
                  first_reason(static_cast<std::int64_t>(g)).c_str());
  if (shown < sum.best.size()) std::printf("  ... and %zu more groups (see --json)\n", sum.best.size() - shown);
  if (!top_shown.empty()) {
    std::printf("\ntop %zu of the %s:\n", top_shown.size(), shard ? "shard" : "whole space");
    std::vector<std::int64_t> idx;
    for (const auto& t : top_shown) idx.push_back(t.index);
    std::printf("%s", terminal(idx, {}, "").c_str());
  }
  if (red.pareto != 0 && !sum.pareto.empty()) {
    std::printf("\nPareto front per group, latency against %s:\n",
                f.costs[static_cast<std::size_t>(red.pareto - 1)].meaning.c_str());
    std::int64_t fronts = 0;
    for (std::size_t p = 0; p < sum.pareto.size();) {
      const std::int64_t g = sum.pareto[p].group;
      if (++fronts > 10) break;
      std::vector<std::int64_t> idx;
      std::vector<nlohmann::json> cost;
      for (; p < sum.pareto.size() && sum.pareto[p].group == g; ++p) {
        idx.push_back(sum.pareto[p].index);
        cost.push_back(sum.pareto[p].cost);
      }
      std::printf("  group %s\n%s", group_key(g).dump().c_str(), terminal(idx, cost, "cost").c_str());
    }
    if (fronts > 10) std::printf("  ... fronts of further groups in --json\n");
  }
  if (red.histogram && sum.valid > 0) {
    std::printf("\nlatency of the valid configs, one line per octave of picoseconds (--json: 8 bins per octave):\n");
    const int per = batched::kHistBinsPerOctave;
    std::int64_t peak = 0;
    std::vector<std::int64_t> oct(batched::kHistBins / per, 0);
    for (int b = 0; b < batched::kHistBins; ++b) oct[static_cast<std::size_t>(b / per)] += sum.histogram[static_cast<std::size_t>(b)];
    for (std::int64_t c : oct) peak = std::max(peak, c);
    for (std::size_t o = 0; o < oct.size(); ++o) {
      if (oct[o] == 0) continue;
      const int bar = static_cast<int>(40 * oct[o] / peak);
      std::printf("  [%12s, %12s) us %12lld  %s\n", us(batched::hist_bin_lo(static_cast<int>(o) * per)).c_str(),
                  us(batched::hist_bin_lo(static_cast<int>(o + 1) * per)).c_str(), (long long)oct[o],
                  std::string(static_cast<std::size_t>(std::max(bar, 1)), '#').c_str());
    }
  }
  if (!a.out.empty()) std::printf("\nwrote %s\n", a.out.c_str());
  if (!a.csv.empty()) std::printf("wrote %s\n", a.csv.c_str());
}

void cmd_sweep(const SweepArgs& args) {
  const Family& f = *args.family;
  SweepArgs a = args;
  std::optional<SpaceFile> file;
  if (!a.space.empty()) {
    // A space file sets the axes, zips and group; its objectives and reductions replace the
    // defaults, and its topology is used unless --topology is given.
    file = load_space_file(a.space);
    if (file->family != f.name)
      throw InputError(a.space + ": family " + file->family + ": the file is a " + file->family + " space, not " + f.name);
    std::string flag;
    for (const AxisDesc& ax : f.axes)
      if (a.given.at(ax.name)->count() > 0) flag = ax.flag;
    for (const HwAxisDesc& h : f.hw_axes)
      if (a.given.at(h.name)->count() > 0) flag = h.flag;
    if (!a.hw.empty()) flag = "--hw";
    if (!a.zips.empty()) flag = "--zip";
    if (a.opt.at("--group")->count() > 0) flag = "--group";
    if (!flag.empty()) throw InputError("--space " + a.space + ": the file sets the space; " + flag + " cannot be given too");
    // The file's reductions apply where the command line is silent (docs/spaces.md).
    if (file->pareto && a.opt.at("--pareto")->count() == 0) a.pareto = *file->pareto;
    if (file->histogram && a.opt.at("--no-histogram")->count() == 0) a.no_histogram = !*file->histogram;
    if (a.topo.path.empty() && !file->topology.empty()) a.topo.path = file->topology;
  }
  for (const char* flag : {"--group", "--pareto"})
    if (a.opt.at(flag)->count() > 0 && (flag[2] == 'g' ? a.group : a.pareto).empty())
      throw InputError(std::string(flag) + " '': an empty value; leave the option out for its default");
  const int top = static_cast<int>(int_option(a, "--top", a.top, 0, batched::kMaxTopK, file && file->top ? *file->top : 10));
  const int recheck =
      static_cast<int>(int_option(a, "--recheck", a.recheck, 0, batched::kMaxTopK, file && file->recheck ? *file->recheck : 10));
  const std::int64_t chunk_given = int_option(a, "--chunk", a.chunk, 0, INT64_C(1) << 30, 0);
  const double max_hours = decimal_option(a, "--max-hours", a.max_hours, 24);
  const std::int64_t max_ops = max_ops_option(a.opt.at("--max-ops")->count() > 0, a.max_ops);
  const double progress_every = decimal_option(a, "--progress-every", a.progress_every, 10);
  const TopologySpec topo = a.topo.load();
  SweepRequest req;
  for (const AxisDesc& ax : f.axes)
    if (a.given.at(ax.name)->count() > 0) req.axes[ax.name] = a.axes.at(ax.name);
  for (const HwAxisDesc& h : f.hw_axes)
    if (a.given.at(h.name)->count() > 0) req.hw.push_back({h.flag, h.path, a.hw_axes.at(h.name)});
  for (const std::string& h : a.hw) {
    const auto eq = h.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--hw " + h + ": expected PATH=LIST, e.g. cube.hbm.bandwidth_gbps=410,819,1638");
    req.hw.push_back({"--hw", h.substr(0, eq), h.substr(eq + 1)});
  }
  req.zips = a.zips;
  req.group = a.group;
  if (file) req = file->req;
  for (const HwList& h : req.hw) {
    const std::string setter = a.topo.setter_of(h.path);
    if (!setter.empty())
      throw InputError(h.flag + (h.flag == "--hw" ? " " + h.path + "=" : " ") + h.list + " and " + setter + " both set " + h.path +
                       ": sweep it or set it, not both");
  }
  const BuiltSpace sp = file ? build_space_from_file(f, topo, *file) : build_space(f, topo, req);
  check_output_path("--out", a.out, "sweep.json");
  check_output_path("--csv", a.csv, "sweep.csv");
  check_outputs_distinct({{"--space", a.space}, {"--topology", a.topo.path}}, {{"--out", a.out}, {"--csv", a.csv}});
  batched::Reductions red;
  red.top_k = std::max(top, recheck);
  const std::string pareto_name = a.pareto.empty() ? f.default_cost : a.pareto;
  red.pareto = parse_pareto(f, pareto_name);
  red.histogram = !a.no_histogram;
  const BackendKind backend = resolve_backend(a.backend);
  const std::int64_t chunk = chunk_given > 0 ? chunk_given : backend == BackendKind::cuda ? INT64_C(1) << 22 : INT64_C(1) << 20;
  std::int64_t shard_i = -1, shard_n = 0;
  if (!a.shard.empty()) {
    parse_shard("--shard", a.shard, &shard_i, &shard_n);
    if (a.out.empty() && !a.json) throw InputError("--shard: a shard's summary is its JSON: give --out FILE or --json");
  }
  const int ranks = mpi_size();
  if (ranks > 1) {
    if (shard_n > 0) throw InputError("--shard: under MPI each rank takes its own shard; leave --shard out");
    shard_i = mpi_rank(), shard_n = ranks;
    if (backend == BackendKind::cuda) batched::cuda_use_device(mpi_local_rank());  // one GPU per rank of a node
  }
  validate_sweep(sp.space, chunk, red);  // before anything is printed
  const bool quiet = ranks > 1 && mpi_rank() != 0;  // under MPI rank 0 speaks for the job

  // The time it will take, from the rate on a sample of the space (16 blocks spread over it):
  // announced before the sweep starts, and a space whose estimate passes --max-hours refused.
  const std::int64_t total_configs = sp.space.size();
  const std::int64_t mine_configs = shard_n > 0 ? shard_configs(total_configs, shard_i, shard_n) : total_configs;
  double rate = 0, estimate_s = 0;
  std::int64_t sampled = 0;
  const std::int64_t block = backend == BackendKind::cuda ? INT64_C(1) << 18 : INT64_C(1) << 14;
  if (total_configs > 16 * block) {
    batched::Reductions probe;
    const auto s0 = std::chrono::steady_clock::now();
    for (std::int64_t k = 0; k < 16; ++k) {
      probe.begin = k * (total_configs / 16);
      probe.end = probe.begin + block;
      sampled += sweep(backend, sp.space, chunk, 0, probe).evaluated;
    }
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    rate = static_cast<double>(sampled) / std::max(spent, 1e-9);
    estimate_s = static_cast<double>(mine_configs) / rate;
  }
  auto duration_text = [](double s) {
    char b[64];
    if (s < 120) std::snprintf(b, sizeof b, "%.0f s", s);
    else if (s < 7200) std::snprintf(b, sizeof b, "%.0f min", s / 60);
    else std::snprintf(b, sizeof b, "%.1f h", s / 3600);
    return std::string(b);
  };
  if (max_hours > 0 && estimate_s > max_hours * 3600)
    throw InputError("the space has " + std::to_string(total_configs) + " configs; at " + std::to_string(static_cast<long long>(rate)) +
                     " configs/s (measured on " + std::to_string(sampled) + " of them) it would take about " +
                     duration_text(estimate_s) + ", past --max-hours " + [&] {
                       char b[32];
                       std::snprintf(b, sizeof b, "%g", max_hours);
                       return std::string(b);
                     }() +
                     ": shrink the space, split it (--shard, mpirun) or raise --max-hours");
  std::string topo_text = topo.name;
  for (const auto& set : topo.overrides) topo_text += " --set " + set;
  const std::string group_text = a.group.empty() ? f.default_group : a.group;
  if (!a.json && !quiet) {  // the size first: a space too large to wait for can be stopped at once
    std::printf("sweep %s: %lld configs over %zu axes, %lld group(s), backend %s, topology %s\n", f.name.c_str(),
                (long long)sp.space.size(), sp.space.axes.size(), (long long)sp.space.groups(), to_string(backend),
                topo_text.c_str());
    if (ranks > 1)
      std::printf("  over %d MPI ranks, each a shard of about %lld configs (blocks of %lld, interleaved)\n", ranks,
                  (long long)shard_configs(sp.space.size(), 0, ranks), (long long)shard_block(sp.space.size(), ranks));
    else if (shard_n > 0)
      std::printf("  shard %lld/%lld: %lld configs (blocks of %lld, interleaved)\n", (long long)shard_i, (long long)shard_n,
                  (long long)shard_configs(sp.space.size(), shard_i, shard_n), (long long)shard_block(sp.space.size(), shard_n));
    std::fflush(stdout);
  }
  if (sampled > 0 && !quiet) {
    char line[160];
    std::snprintf(line, sizeof line, "  estimate: about %s at %.3g configs/s (measured on %lld configs)\n",
                  duration_text(estimate_s).c_str(), rate, (long long)sampled);
    std::fputs(line, a.json ? stderr : stdout);  // the JSON alone on stdout
  }

  const auto t0 = std::chrono::steady_clock::now();
  // Progress on stderr: on a terminal a live line, at most once a second; otherwise (a log,
  // CI, MPI) one line every --progress-every seconds. Under MPI rank 0 reports for the job,
  // its shard standing for all of them (shards are equal to within one config).
  auto last = t0;
  bool shown_progress = false;
  const bool tty = ::isatty(STDERR_FILENO) && ranks == 1;
  const std::int64_t mine = shard_n > 0 ? shard_configs(sp.space.size(), shard_i, shard_n) : sp.space.size();
  std::int64_t before = 0;  // configs of this shard's earlier blocks
  const std::int64_t job = ranks > 1 ? sp.space.size() : mine;
  if (!quiet && (tty ? !a.json : progress_every > 0)) {
    red.progress = [&, mine, job](std::int64_t done_block) {
      const std::int64_t done_mine = before + done_block;
      const auto now = std::chrono::steady_clock::now();
      const auto every = tty ? std::chrono::duration<double>(1) : std::chrono::duration<double>(progress_every);
      if (now - last < every || done_mine >= mine) return;
      last = now;
      shown_progress = tty;
      const double spent = std::chrono::duration<double>(now - t0).count();
      const double frac = static_cast<double>(done_mine) / static_cast<double>(mine);
      const double done = frac * static_cast<double>(job), rate = done / spent, left = spent * (1 - frac) / frac;
      if (tty)
        std::fprintf(stderr, "\r  %5.1f%% of %lld configs, about %.0f s left   ", 100.0 * frac, (long long)job, left);
      else
        std::fprintf(stderr, "progress: %.0f/%lld configs (%.1f%%), %.3g configs/s, ETA %.0f s\n", done, (long long)job,
                     100.0 * frac, rate, left);
      std::fflush(stderr);
    };
  }
  batched::SweepSummary sum;
  if (shard_n == 0) {
    sum = sweep(backend, sp.space, chunk, 0, red);
  } else {  // this shard's blocks, one after another, folded as merge folds shards
    sum = empty_summary(sp.space.groups(), static_cast<int>(f.statuses.size()), red.histogram);
    const std::int64_t size = sp.space.size(), block = shard_block(size, shard_n);
    for (std::int64_t b = shard_i; b * block < size; b += shard_n) {
      red.begin = b * block, red.end = std::min(size, (b + 1) * block);
      merge_summary(sum, sweep(backend, sp.space, chunk, 0, red), red.top_k);
      before += red.end - red.begin;
    }
    red.begin = 0, red.end = -1;
  }
  if (shown_progress) std::fprintf(stderr, "\r%60s\r", "");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  SweepOutcome o;
  o.f = &f;
  o.topo = topo;
  o.req = req;
  o.sp = sp;
  o.red = red;
  o.red.progress = nullptr;
  o.top = top;
  o.recheck = recheck;
  o.max_ops = max_ops;
  o.pareto_name = pareto_name;
  o.backend = backend;
  o.sum = sum;
  o.seconds = seconds;
  if (ranks > 1) {
    // Every rank's summary to rank 0, which merges them and speaks for the job.
    const std::vector<std::string> all = mpi_gather(summary_json(sum).dump());
    const double slowest = mpi_max(seconds);
    if (quiet) return;
    batched::SweepSummary merged;
    nlohmann::json parts = nlohmann::json::array();
    for (std::size_t r = 0; r < all.size(); ++r) {
      const batched::SweepSummary s = summary_from_json(nlohmann::json::parse(all[r]), sp.space.groups(),
                                                        static_cast<int>(f.statuses.size()), "MPI rank " + std::to_string(r));
      merge_summary(merged, s, red.top_k);
      parts.push_back({{"rank", r}, {"evaluated", s.evaluated}});
    }
    o.sum = std::move(merged);
    o.seconds = slowest;
    o.merged = {{"mpi_ranks", ranks}, {"shards", parts}};
  } else {
    o.shard_i = shard_i, o.shard_n = shard_n;
  }
  report_sweep(o, a.json, a.out, a.csv);
}

}  // namespace kb
