// `kernbench-gpu sweep NAME`: a space of a family's configs evaluated by the batched model
// and reduced to the best per group, the top k, a Pareto front and a latency histogram.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cmd_family.h"
#include "host/common/document.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/common/table.h"
#include "host/sweep/space.h"

namespace kb {

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
  cmd->add_option("--group", a.group,
                  "axes whose values form a group with its own best config and Pareto front, or none [default: " +
                      f.default_group + "]");
  cmd->add_option("--top", a.top, "report the N fastest configs of the whole space (0..1024; ties: the order given)")
      ->capture_default_str();
  std::string costs;
  for (const CostDesc& c : f.costs) costs += c.name + ", ";
  cmd->add_option("--pareto", a.pareto, "Pareto front of latency against: " + costs + "or none [default: " + f.default_cost + "]");
  cmd->add_flag("--no-histogram", a.no_histogram, "skip the latency histogram (8 bins per octave)");
  cmd->add_option("--backend", a.backend, "auto, cuda or omp")->capture_default_str();
  cmd->add_option("--chunk", a.chunk, "configs per device pass, 1..2^30; 0: 2^20 on OpenMP, 2^22 on CUDA");
  cmd->add_flag("--json", a.json, "print one JSON object instead of tables");
  cmd->add_option("--out", a.out, "also write the JSON to FILE");
  cmd->add_option("--csv", a.csv,
                  "also write the reported configs to FILE as CSV: a row per best, top and Pareto config, with the "
                  "columns of the JSON rows after report, group_index and cost");
  a.topo.add(cmd, false);
  return cmd;
}

namespace {

int parse_pareto(const Family& f, const std::string& s) {
  if (s == "none") return 0;
  std::string names;
  for (std::size_t i = 0; i < f.costs.size(); ++i) {
    if (f.costs[i].name == s) return static_cast<int>(i) + 1;
    names += f.costs[i].name + ", ";
  }
  throw InputError("--pareto " + s + ": expected " + names.substr(0, names.size() - 2) + " or none");
}

std::string us(ps_t ps) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(ps) / 1e6);
  return b;
}

}  // namespace

void cmd_sweep(const SweepArgs& a) {
  const Family& f = *a.family;
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
  const BuiltSpace sp = build_space(f, topo, req);
  check_output_path("--out", a.out, "sweep.json");
  check_output_path("--csv", a.csv, "sweep.csv");
  batched::Reductions red;
  red.top_k = a.top;
  const std::string pareto_name = a.pareto.empty() ? f.default_cost : a.pareto;
  red.pareto = parse_pareto(f, pareto_name);
  red.histogram = !a.no_histogram;
  if (a.chunk < 0 || a.chunk > (INT64_C(1) << 30))
    throw InputError("--chunk " + std::to_string(a.chunk) + ": must be in 1..2^30 (or 0 for the default)");
  const BackendKind backend = resolve_backend(a.backend);
  const std::int64_t chunk = a.chunk > 0 ? a.chunk : backend == BackendKind::cuda ? INT64_C(1) << 22 : INT64_C(1) << 20;
  validate_sweep(sp.space, chunk, red);  // before anything is printed

  std::string topo_text = topo.name;
  for (const auto& set : topo.overrides) topo_text += " --set " + set;
  const std::string group_text = a.group.empty() ? f.default_group : a.group;
  if (!a.json) {  // the size first: a space too large to wait for can be stopped at once
    std::printf("sweep %s: %lld configs over %zu axes, %lld group(s), backend %s, topology %s\n", f.name.c_str(),
                (long long)sp.space.size(), sp.space.axes.size(), (long long)sp.space.groups(), to_string(backend),
                topo_text.c_str());
    std::fflush(stdout);
  }
  const auto t0 = std::chrono::steady_clock::now();
  // On a terminal, a progress line on stderr at most once a second.
  auto last = t0;
  bool shown_progress = false;
  if (!a.json && ::isatty(STDERR_FILENO)) {
    red.progress = [&, total = sp.space.size()](std::int64_t done) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::seconds(1) || done >= total) return;
      last = now;
      shown_progress = true;
      const double spent = std::chrono::duration<double>(now - t0).count();
      std::fprintf(stderr, "\r  %5.1f%% of %lld configs, about %.0f s left   ",
                   100.0 * static_cast<double>(done) / static_cast<double>(total), (long long)total,
                   spent * static_cast<double>(total - done) / static_cast<double>(done));
    };
  }
  const batched::SweepSummary sum = sweep(backend, sp.space, chunk, 0, red);
  if (shown_progress) std::fprintf(stderr, "\r%60s\r", "");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::int64_t size = sp.space.size();
  const std::int64_t group_stride = size / sp.space.groups();
  const batched::SpaceDecoder decode(sp.space);
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
    for (const auto& t : sum.top) add("top", t.index / group_stride, nullptr, t.index);
    for (const auto& p : sum.pareto) add("pareto", p.group, p.cost, p.index);
    write_file_atomic(a.csv, csv.csv());
  }
  // The JSON (one model evaluation per reported config) only when it is asked for.
  if (a.json || !a.out.empty()) {
    nlohmann::json j = document("kernbench-gpu/" + f.name + "-space-sweep", "2.0.0", topo);
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
    j["timing"] = {{"seconds", seconds}, {"configs_per_s", seconds > 0 ? static_cast<double>(size) / seconds : 0.0}};
    nlohmann::json best = nlohmann::json::array();
    for (std::size_t g = 0; g < sum.best.size(); ++g) {
      const auto& b = sum.best[g];
      nlohmann::json entry{{"group", group_key(static_cast<std::int64_t>(g))},
                           {"best", b.index < 0 ? nlohmann::json() : row_json(b.index)}};
      if (b.index < 0) entry["reason"] = "no valid config; the first: " + first_reason(static_cast<std::int64_t>(g));
      best.push_back(entry);
    }
    j["best_per_group"] = best;
    nlohmann::json top = nlohmann::json::array();
    for (const auto& t : sum.top) top.push_back(row_json(t.index));
    j["top"] = top;
    if (red.pareto != 0) {
      nlohmann::json fronts = nlohmann::json::array();
      for (const auto& p : sum.pareto) {
        if (fronts.empty() || fronts.back()["group_index"] != p.group)
          fronts.push_back({{"group_index", p.group}, {"group", group_key(p.group)}, {"points", nlohmann::json::array()}});
        nlohmann::json c = row_json(p.index);
        c["cost"] = p.cost;
        fronts.back()["points"].push_back(c);
      }
      j["pareto"] = {{"cost", pareto_name},
                     {"meaning", f.costs[static_cast<std::size_t>(red.pareto - 1)].meaning},
                     {"fronts", fronts}};
    }
    if (red.histogram) {
      nlohmann::json bins = nlohmann::json::array();
      for (int b = 0; b < batched::kHistBins; ++b)
        if (sum.histogram[static_cast<std::size_t>(b)] > 0)
          bins.push_back({{"lo_ps", batched::hist_bin_lo(b)}, {"hi_ps", batched::hist_bin_lo(b + 1)},
                          {"count", sum.histogram[static_cast<std::size_t>(b)]}});
      j["histogram"] = {{"bins_per_octave", batched::kHistBinsPerOctave}, {"bins", bins}};
    }
    if (!a.out.empty()) write_file_atomic(a.out, j.dump(2) + "\n");
    if (a.json) {
      std::cout << j.dump(2) << "\n";
      return;
    }
  }

  std::printf("  valid %lld (%.1f%%), %.3f s, %.3g configs/s\n", (long long)sum.valid,
              size > 0 ? 100.0 * static_cast<double>(sum.valid) / static_cast<double>(size) : 0.0, seconds,
              seconds > 0 ? static_cast<double>(size) / seconds : 0.0);
  if (sum.valid == 0) std::printf("  no valid config in the space\n");
  if (sum.valid < size) {
    std::string why;
    for (std::size_t st = 1; st < sum.by_status.size(); ++st)
      if (sum.by_status[st] > 0)
        why += (why.empty() ? "" : ", ") + f.status_name(static_cast<std::int32_t>(st)) + " " + std::to_string(sum.by_status[st]);
    std::printf("  invalid %lld: %s\n", (long long)(size - sum.valid), why.c_str());
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
  if (!sum.top.empty()) {
    std::printf("\ntop %zu of the whole space:\n", sum.top.size());
    std::vector<std::int64_t> idx;
    for (const auto& t : sum.top) idx.push_back(t.index);
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

}  // namespace kb
