// A sweep's report (ADR 0016): the rows every output is made of, and one printer per format
// (CSV, JSON, terminal tables), all fed the same rows. `sweep` and `merge` both end here.
#include "sweep_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "device/common/area.h"
#include "document.h"
#include "host/common/error.h"
#include "host/common/json_stream.h"
#include "host/common/output.h"
#include "host/common/table.h"
#include "host/parity/figures.h"
#include "host/sweep/merge.h"
#include "study.h"

namespace kb {

namespace {

std::string us(ps_t ps) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(ps) / 1e6);
  return b;
}


// The request as data: what `merge` rebuilds the space from.
nlohmann::json request_json(const SweepOutcome& o) {
  nlohmann::json hw = nlohmann::json::array();
  for (const HwList& h : o.req.hw) hw.push_back({h.flag, h.path, h.list});
  nlohmann::json r = {{"family", o.f->name}, {"axes", o.req.axes}, {"hw", hw}, {"zips", o.req.zips}, {"group", o.req.group},
                      {"top", o.top}, {"recheck", o.recheck}, {"pareto", o.pareto_name}, {"histogram", o.red.histogram},
                      {"top_k", o.red.top_k}};
  if (!o.req.presets.empty()) r["presets"] = o.req.presets;  // fields no axis holds (--pp-layers)
  return r;
}

// Re-runs the fastest configs on the reference engine; a figure that differs is exit 3. A
// config whose reference run would build more than --max-ops ops is passed over (listed as
// skipped), and the next of the top list taken in its place.
nlohmann::json recheck(const SweepOutcome& o, const batched::SpaceDecoder& decode) {
  const Family& f = *o.f;
  nlohmann::json checked = nlohmann::json::array(), skipped = nlohmann::json::array();
  std::vector<unsigned char> cfg(f.config_size());
  Study study(f, BackendKind::omp);
  std::vector<std::int64_t> index;
  const std::size_t n = static_cast<std::size_t>(o.recheck);
  for (std::size_t k = 0; k < o.sum.top.size() && index.size() < n; ++k) {
    const std::int64_t i = o.sum.top[k].index;
    decode(i, cfg.data());
    const std::int64_t ops = f.reference_ops(cfg.data());
    if (ops > o.max_ops) {
      skipped.push_back({{"index", i}, {"reference_ops", ops}});
      continue;
    }
    study.add(cfg.data());
    index.push_back(i);
  }
  study.run(Rejected::internal_error);
  const ColumnDesc* lat = f.column("latency_ps");
  for (std::size_t k = 0; k < index.size(); ++k) {
    if (!study.diff(k).empty())
      throw InternalError("re-check: config " + std::to_string(index[k]) + " " +
                              nlohmann::json(config_values(f, study.config(k))).dump() +
                              ": the reference engine differs from the batched model: " + study.diff(k),
                          __FILE__, __LINE__);
    checked.push_back({{"index", index[k]}, {"latency_ps", lat->get(study.config(k), study.batched(k))},
                       {"reference_latency_ps", lat->get(study.config(k), study.reference(k))}, {"identical", true}});
  }
  return {{"asked", o.recheck}, {"max_ops", o.max_ops}, {"checked", checked}, {"skipped", skipped}, {"ok", true}};
}

// Every reported config of a sweep as a row of its family's table: its flat index, its case,
// every config column and every result column; a group by its key, and why a group without
// a valid config has none. Evaluates the batched model for each row it is asked for.
class SweepRows {
 public:
  SweepRows(const Family& f, const BuiltSpace& sp)
      : f_(f), sp_(sp), decode_(sp.space), cfg_(f_.config_size()), res_(f_.result_size()) {
    group_stride_ = sp_.space.size() / sp_.space.groups();
    has_case_ = !sp_.cases.empty();
    cols_ = {{"index", "", ColType::integer}};
    if (has_case_) cols_.push_back({"case", "", ColType::text});
    for (const SpaceAxis& c : sp_.columns) cols_.push_back(axis_column(c.name, c.axis, c.field));
    for (const Column& c : result_columns(f_)) cols_.push_back(c);
    // The terminal shows every config column and the result columns marked terminal.
    const std::size_t first_config = has_case_ ? 2 : 1;
    if (has_case_) shown_.push_back(1);
    for (std::size_t c = 0; c < sp_.columns.size(); ++c) shown_.push_back(first_config + c);
    // and a swept preset's column (--routing balanced,zipf:1.2: routing), where the result's
    // would not show it.
    for (std::size_t c = 0; c < f_.columns.size(); ++c) {
      bool swept = false;
      for (const SweptAxis& ax : sp_.axes)
        for (const SpaceAxis& m : ax.members) swept |= m.shown && m.name == f_.columns[c].name;
      if (f_.columns[c].terminal || swept) shown_.push_back(first_config + sp_.columns.size() + c);
    }
  }
  const batched::SpaceDecoder& decoder() const { return decode_; }
  const std::vector<Column>& columns() const { return cols_; }
  std::int64_t group_stride() const { return group_stride_; }

  std::vector<nlohmann::json> row(std::int64_t i) {
    load(i);
    std::vector<nlohmann::json> r = {i};
    if (has_case_) r.push_back(sp_.case_of(i));
    for (const SpaceAxis& c : sp_.columns) r.push_back(c.value_json(get_int(cfg_.data(), c.offset)));
    for (const ColumnDesc& c : f_.columns) r.push_back(c.get(cfg_.data(), res_.data()));
    return r;
  }
  nlohmann::json row_json(std::int64_t i) {
    Table t(cols_);
    t.add(row(i));
    return t.row_json(0);
  }
  nlohmann::json group_key(std::int64_t g) {
    decode_(g * group_stride_, cfg_.data());
    nlohmann::json key = nlohmann::json::object();
    for (std::size_t i = 0; i < static_cast<std::size_t>(sp_.space.group_axes); ++i) {
      if (static_cast<int>(i) == sp_.case_axis) key["case"] = sp_.case_of(g * group_stride_);
      for (const SpaceAxis& m : sp_.axes[i].members) key[m.name] = m.json_of(cfg_.data());
    }
    return key;
  }
  std::string first_reason(std::int64_t g) {
    load(g * group_stride_);
    std::int32_t st;
    std::memcpy(&st, res_.data(), sizeof st);
    return f_.status_message(st, cfg_.data());
  }
  // The rows of `indices` as a terminal table of the shown columns, after a lead column.
  std::string terminal(const std::vector<std::int64_t>& indices, const std::vector<nlohmann::json>& lead,
                       const std::string& lead_name) {
    std::vector<Column> tc;
    if (!lead_name.empty()) tc.push_back({lead_name, ""});
    for (std::size_t c : shown_) tc.push_back(cols_[c]);
    Table t(tc);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const std::vector<nlohmann::json> full = row(indices[k]);
      std::vector<nlohmann::json> r;
      if (!lead_name.empty()) r.push_back(lead[k]);
      for (std::size_t c : shown_) r.push_back(full[c]);
      t.add(r);
    }
    return t.text();
  }

 private:
  void load(std::int64_t i) {
    decode_(i, cfg_.data());
    batched::evaluate_host(f_.id, cfg_.data(), res_.data());
  }
  const Family& f_;
  const BuiltSpace& sp_;
  const batched::SpaceDecoder decode_;
  std::vector<unsigned char> cfg_, res_;
  std::int64_t group_stride_ = 1;
  bool has_case_ = false;
  std::vector<Column> cols_;
  std::vector<std::size_t> shown_;
};

// What every printer reports: the top list as asked for (the summary may hold more, for the
// re-check) and the re-check's record.
struct Reported {
  std::vector<batched::Ranked> top;
  nlohmann::json rechecked;
};

// CSV: the reported configs, one table: why each is reported, then its row.
void print_csv(const SweepOutcome& o, SweepRows& rows, const Reported& rep, const std::string& path) {
  const batched::SweepSummary& sum = o.sum;
  const std::int64_t group_stride = rows.group_stride();
  const std::vector<batched::Ranked>& top_shown = rep.top;
  std::vector<Column> csv_cols = {{"report", "", ColType::text}, {"group_index", "", ColType::integer},
                                  {"cost", "", ColType::integer}};
  csv_cols.insert(csv_cols.end(), rows.columns().begin(), rows.columns().end());
  Table csv(csv_cols);
  auto add = [&](const char* report, std::int64_t group, nlohmann::json cost, std::int64_t index) {
    std::vector<nlohmann::json> r = {report, group, std::move(cost)};
    for (auto& v : rows.row(index)) r.push_back(std::move(v));
    csv.add(std::move(r));
  };
  for (std::size_t g = 0; g < sum.best.size(); ++g)
    if (sum.best[g].index >= 0) add("best", static_cast<std::int64_t>(g), nullptr, sum.best[g].index);
  for (const auto& t : top_shown) add("top", t.index / group_stride, nullptr, t.index);
  for (const auto& p : sum.pareto) add("pareto", p.group, p.cost, p.index);
  write_file_atomic(path, csv.csv());
}

// The space as the document records it: each axis with its values (zipped ones with their
// members' names), every config column no axis sweeps, and the grouping.
nlohmann::json space_json(const BuiltSpace& sp) {
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
  if (!sp.cases.empty() && sp.case_axis < 0) fixed["case"] = sp.cases[0];
  nlohmann::json group = nlohmann::json::array();
  for (int i = 0; i < sp.space.group_axes; ++i) group.push_back(sp.axes[static_cast<std::size_t>(i)].name);
  return {{"size", sp.space.size()}, {"axes", axes}, {"fixed", fixed}, {"group", group}, {"groups", sp.space.groups()}};
}

// JSON: the document, its per-group and per-point arrays made as they are written (one
// model evaluation per reported config), to `out` and/or standard output.
void print_json(const SweepOutcome& o, SweepRows& rows, const Reported& rep, const SweepReportTo& to) {
  const Family& f = *o.f;
  const BuiltSpace& sp = o.sp;
  const batched::SweepSummary& sum = o.sum;
  const std::int64_t size = sp.space.size();
  nlohmann::json j = document("kernbench-gpu/" + f.name + "-space-sweep", "3.0.0", o.topo);
  LazyArrays lazy;  // the arrays too large to hold, made as they are written
  j["family"] = f.name;
  // The backend, and how many configs it evaluated again in the full state after the small
  // one deferred them (deferred; a device's large-state path, two_stage.h) and, of those, on
  // the host (on_host).
  j["backend"] = {{"name", to_string(o.backend)}, {"deferred", sum.deferred}, {"on_host", sum.on_host}};
  // topology.fields holds the base values; these fields take each value of their axis.
  nlohmann::json swept = nlohmann::json::array();
  for (std::size_t i = 0; i < sp.axes.size(); ++i)
    for (const SpaceAxis& m : sp.axes[i].members)
      if (m.field && sp.space.axes[i].length() > 1) swept.push_back(m.field->path);
  j["topology"]["swept"] = swept;
  j["space"] = space_json(sp);
  j["evaluated"] = sum.evaluated;
  j["valid"] = sum.valid;
  nlohmann::json invalid = nlohmann::json::object();  // invalid configs by reason
  for (std::size_t st = 1; st < sum.by_status.size(); ++st)
    if (sum.by_status[st] > 0) invalid[f.status_name(static_cast<std::int32_t>(st))] = sum.by_status[st];
  j["invalid"] = invalid;
  j["latency_checksum"] = sum.latency_checksum;
  j["timing"] = {{"seconds", o.seconds},
                 {"configs_per_s", o.seconds > 0 ? static_cast<double>(sum.evaluated) / o.seconds : 0.0}};
  if (o.shard_n > 0) {
    j["shard"] = {{"index", o.shard_i}, {"count", o.shard_n}, {"block", shard_block(size, o.shard_n)},
                  {"configs", shard_configs(size, o.shard_i, o.shard_n)},
                  {"request", request_json(o)}, {"summary", summary_json(sum, false)}};
    j["shard"]["summary"]["best"] = nullptr;
    j["shard"]["digest"] = shard_digest(j["shard"]["request"], o.shard_i, o.shard_n, sum);
    lazy["/shard/summary/best"] = {static_cast<std::int64_t>(sum.best.size()), [&](std::int64_t g) {
                                     return summary_best_json(sum.best[static_cast<std::size_t>(g)]);
                                   }};
  } else if (o.recheck > 0) {
    j["recheck"] = rep.rechecked;
  }
  if (!o.merged.is_null()) j["merged"] = o.merged;
  // Per group and per Pareto point (up to 2^20 groups) the rows are made as they are
  // written, so the document is never whole in memory.
  j["best_per_group"] = nullptr;
  lazy["/best_per_group"] = {static_cast<std::int64_t>(sum.best.size()), [&](std::int64_t g) {
                               const auto& b = sum.best[static_cast<std::size_t>(g)];
                               nlohmann::json entry{{"group", rows.group_key(g)},
                                                    {"best", b.index < 0 ? nlohmann::json() : rows.row_json(b.index)}};
                               if (b.index < 0) entry["reason"] = "no valid config; the first: " + rows.first_reason(g);
                               return entry;
                             }};
  nlohmann::json top = nlohmann::json::array();
  for (const auto& t : rep.top) top.push_back(rows.row_json(t.index));
  j["top"] = top;
  if (o.red.pareto != 0) {
    std::vector<std::size_t> front_at;  // where each group's front starts in sum.pareto
    for (std::size_t k = 0; k < sum.pareto.size(); ++k)
      if (k == 0 || sum.pareto[k].group != sum.pareto[k - 1].group) front_at.push_back(k);
    front_at.push_back(sum.pareto.size());
    j["pareto"] = {{"cost", o.pareto_name},
                   {"meaning", cost_of(f, o.red.pareto).meaning},
                   {"fronts", nullptr}};
    lazy["/pareto/fronts"] = {static_cast<std::int64_t>(front_at.size()) - 1, [&, front_at](std::int64_t i) {
                                const std::size_t from = front_at[static_cast<std::size_t>(i)];
                                const std::int64_t group = sum.pareto[from].group;
                                nlohmann::json points = nlohmann::json::array();
                                for (std::size_t k = from; k < front_at[static_cast<std::size_t>(i) + 1]; ++k) {
                                  nlohmann::json c = rows.row_json(sum.pareto[k].index);
                                  c["cost"] = sum.pareto[k].cost;
                                  points.push_back(c);
                                }
                                return nlohmann::json{{"group_index", group}, {"group", rows.group_key(group)},
                                                      {"points", points}};
                              }};
  }
  if (o.red.histogram) {
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
  const std::string& out = to.out;
  if (!out.empty()) write_file_atomic(out, write);
  if (to.json && to.text) {
    std::ostream& text = *to.text;
    if (out.empty()) {
      write(text);
    } else {  // the file just written, rather than every row evaluated again
      std::ifstream in(out, std::ios::binary);
      text << in.rdbuf();
    }
    text.flush();
    if (!text) throw EnvironmentError("standard output: write failed (" + std::string(std::strerror(errno)) + ")");
  }
  if (to.document) to.document(whole_json(std::move(j), lazy));
}

// The terminal: counts, then the best per group, the top list, the fronts and the histogram
// as tables.
// The terminal's Pareto fronts (of the first 10 groups) and latency histogram (by octave).
void print_fronts_and_histogram(const SweepOutcome& o, SweepRows& rows, std::ostream& os) {
  const Family& f = *o.f;
  const batched::SweepSummary& sum = o.sum;
  const batched::Reductions& red = o.red;
  if (red.pareto != 0 && !sum.pareto.empty()) {
    stream_printf(os, "\nPareto front per group, latency against %s:\n",
                cost_of(f, red.pareto).meaning.c_str());
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
      stream_printf(os, "  group %s\n%s", rows.group_key(g).dump().c_str(), rows.terminal(idx, cost, "cost").c_str());
    }
    if (fronts > 10) stream_printf(os, "  ... fronts of further groups in --json\n");
  }
  if (red.histogram && sum.valid > 0) {
    stream_printf(os, "\nlatency of the valid configs, one line per octave of picoseconds (--json: 8 bins per octave):\n");
    const int per = batched::kHistBinsPerOctave;
    std::int64_t peak = 0;
    std::vector<std::int64_t> oct(batched::kHistBins / per, 0);
    for (int b = 0; b < batched::kHistBins; ++b) oct[static_cast<std::size_t>(b / per)] += sum.histogram[static_cast<std::size_t>(b)];
    for (std::int64_t c : oct) peak = std::max(peak, c);
    for (std::size_t o = 0; o < oct.size(); ++o) {
      if (oct[o] == 0) continue;
      const int bar = static_cast<int>(40 * oct[o] / peak);
      stream_printf(os, "  [%12s, %12s) us %12lld  %s\n", us(batched::hist_bin_lo(static_cast<int>(o) * per)).c_str(),
                  us(batched::hist_bin_lo(static_cast<int>(o + 1) * per)).c_str(), (long long)oct[o],
                  std::string(static_cast<std::size_t>(std::max(bar, 1)), '#').c_str());
    }
  }
}

void print_terminal(const SweepOutcome& o, SweepRows& rows, const Reported& rep, std::ostream& os) {
  const Family& f = *o.f;
  const BuiltSpace& sp = o.sp;
  const batched::SweepSummary& sum = o.sum;
  const bool shard = o.shard_n > 0;
  const std::int64_t size = sp.space.size();
  const double seconds = o.seconds;
  const std::string group_text = o.req.group.empty() ? f.default_group : o.req.group;
  const std::vector<batched::Ranked>& top_shown = rep.top;
  const nlohmann::json& rechecked = rep.rechecked;
  const std::int64_t ev = sum.evaluated;
  stream_printf(os, "  valid %lld (%.1f%%), %.3f s, %.3g configs/s\n", (long long)sum.valid,
              ev > 0 ? 100.0 * static_cast<double>(sum.valid) / static_cast<double>(ev) : 0.0, seconds,
              seconds > 0 ? static_cast<double>(ev) / seconds : 0.0);
  if (sum.deferred > 0)
    stream_printf(os, "  %lld config(s) deferred by the small state, evaluated again in the full state%s\n",
                  (long long)sum.deferred,
                  sum.on_host > 0 ? (", " + std::to_string(sum.on_host) + " of them on the host").c_str() : "");
  if (shard)
    stream_printf(os, "  shard %lld/%lld: %lld of %lld configs (merge the shards with `kernbench-gpu merge`)\n",
                (long long)o.shard_i, (long long)o.shard_n, (long long)sum.evaluated, (long long)size);
  if (!shard && o.recheck > 0) {
    stream_printf(os, "  re-checked the %zu fastest configs on the reference engine: identical\n", rechecked["checked"].size());
    if (!rechecked["skipped"].empty())
      stream_printf(os, "  passed over %zu faster config(s) whose reference run would build more than --max-ops %lld ops\n",
                  rechecked["skipped"].size(), static_cast<long long>(o.max_ops));
  }
  if (sum.valid == 0) stream_printf(os, "  no valid config in the space\n");
  if (sum.valid < ev) {
    std::string why;
    for (std::size_t st = 1; st < sum.by_status.size(); ++st)
      if (sum.by_status[st] > 0)
        why += (why.empty() ? "" : ", ") + f.status_name(static_cast<std::int32_t>(st)) + " " + std::to_string(sum.by_status[st]);
    stream_printf(os, "  invalid %lld: %s\n", (long long)(ev - sum.valid), why.c_str());
  }
  bool mixed = false;  // does a problem axis vary inside a group?
  std::string problem;
  for (std::size_t i = static_cast<std::size_t>(sp.space.group_axes); i < sp.axes.size(); ++i)
    for (const SpaceAxis& m : sp.axes[i].members)
      if (m.axis && m.axis->problem) {
        mixed = true;
        problem += (problem.empty() ? "" : ", ") + m.name;
      }
  if (mixed) stream_printf(os, "  note: %s vary inside a group, so its best and its front compare different problems\n", problem.c_str());
  stream_printf(os, "  columns: times in microseconds (NAME_us)\n");
  const std::size_t shown = std::min<std::size_t>(sum.best.size(), 50);
  stream_printf(os, "\nbest per group (%s):\n", group_text.c_str());
  std::vector<std::int64_t> best_rows;
  for (std::size_t g = 0; g < shown; ++g)
    if (sum.best[g].index >= 0) best_rows.push_back(sum.best[g].index);
  if (!best_rows.empty()) stream_printf(os, "%s", rows.terminal(best_rows, {}, "").c_str());
  for (std::size_t g = 0; g < shown; ++g)  // after the table: the groups it leaves out, and why
    if (sum.best[g].index < 0)
      stream_printf(os, "  group %s: no valid config (the first: %s)\n", rows.group_key(static_cast<std::int64_t>(g)).dump().c_str(),
                  rows.first_reason(static_cast<std::int64_t>(g)).c_str());
  if (shown < sum.best.size()) stream_printf(os, "  ... and %zu more groups (see --json)\n", sum.best.size() - shown);
  if (!top_shown.empty()) {
    stream_printf(os, "\ntop %zu of the %s:\n", top_shown.size(), shard ? "shard" : "whole space");
    std::vector<std::int64_t> idx;
    for (const auto& t : top_shown) idx.push_back(t.index);
    stream_printf(os, "%s", rows.terminal(idx, {}, "").c_str());
  }
  print_fronts_and_histogram(o, rows, os);
}

}  // namespace

int parse_pareto(const Family& f, const std::string& s) {
  if (s == "none") return 0;
  std::string names;
  for (std::size_t i = 0; i < f.costs.size(); ++i) {
    if (f.costs[i].name == s) return static_cast<int>(i) + 1;
    names += f.costs[i].name + ", ";
  }
  for (int kind : {kCostArea, kCostEnergy}) {
    if (kind == kCostEnergy && !f.energy) continue;
    const CostDesc& c = cost_of(f, kind);
    if (s == c.name) return kind;
    names += c.name + ", ";
  }
  throw InputError("--pareto " + s + ": expected " + names.substr(0, names.size() - 2) + " or none");
}

void report_sweep(const SweepOutcome& o, const SweepReportTo& to) {
  SweepRows rows(*o.f, o.sp);
  Reported rep;
  rep.top.assign(o.sum.top.begin(),
                 o.sum.top.begin() + std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(o.sum.top.size()), o.top));
  rep.rechecked = o.shard_n > 0 || o.recheck == 0 ? nlohmann::json() : recheck(o, rows.decoder());
  if (!to.csv.empty()) print_csv(o, rows, rep, to.csv);
  if ((to.json && to.text) || !to.out.empty() || to.document) print_json(o, rows, rep, to);
  if (to.json || !to.text) return;
  print_terminal(o, rows, rep, *to.text);
  if (!to.out.empty()) stream_printf(*to.text, "\nwrote %s\n", to.out.c_str());
  if (!to.csv.empty()) stream_printf(*to.text, "wrote %s\n", to.csv.c_str());
}

WriteCost write_cost(const Family& f, const BuiltSpace& sp, bool pareto, bool json, bool csv, bool json_copied) {
  WriteCost w;
  const std::int64_t groups = sp.space.groups();
  if ((!json && !csv) || groups < 1024) return w;  // the rows of a few groups take no time worth telling
  SweepRows rows(f, sp);
  const std::int64_t samples = 64, stride = sp.space.size() / groups;
  auto group_of = [&](std::int64_t k) { return k * (groups / samples); };
  // Per group its best, and with --pareto its front: one point at least (its best is on it).
  const std::int64_t per_group = pareto ? 2 : 1;
  double row_seconds = 0, disk_bytes = 0;
  if (json) {
    // Sample groups' rows, made and written as the JSON writer makes and writes them (nested
    // in the document, streamed), into memory.
    nlohmann::json doc = {{"best_per_group", nullptr}};
    LazyArrays lazy;
    lazy["/best_per_group"] = {samples, [&](std::int64_t k) {
                                 return nlohmann::json{{"group", rows.group_key(group_of(k))},
                                                       {"best", rows.row_json(group_of(k) * stride)}};
                               }};
    std::ostringstream text;
    const auto t0 = std::chrono::steady_clock::now();
    write_json(text, doc, lazy);
    row_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / samples;
    const double bytes = static_cast<double>(text.str().size()) / samples * groups * per_group;
    w.bytes += static_cast<std::int64_t>(bytes);
    w.json_bytes = static_cast<std::int64_t>(bytes);
    disk_bytes += bytes * (json_copied ? 2 : 1);  // --json with --out copies the file to standard output
  }
  if (csv) {
    const auto t0 = std::chrono::steady_clock::now();
    Table t(rows.columns());
    for (std::int64_t k = 0; k < samples; ++k) t.add(rows.row(group_of(k) * stride));
    const double bytes = static_cast<double>(t.csv().size()) / samples * groups * per_group;
    row_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / samples;
    w.bytes += static_cast<std::int64_t>(bytes);
    w.csv_bytes = static_cast<std::int64_t>(bytes);
    disk_bytes += bytes;
  }
  w.rows = groups * per_group * ((json ? 1 : 0) + (csv ? 1 : 0));
  // Each row is made and printed once per format, and the bytes go to the disk at about 1 GB/s.
  w.seconds = row_seconds * static_cast<double>(groups * per_group) + disk_bytes / 1e9;
  return w;
}

}  // namespace kb
