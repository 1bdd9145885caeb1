#include "serve_sweep.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "host/common/error.h"
#include "host/common/output.h"
#include "host/common/parallel.h"
#include "host/common/table.h"

namespace kb::api {

namespace {

constexpr std::int64_t kMaxServeConfigs = INT64_C(1) << 20;

// A flag's comma-separated alternatives, each once, in order.
std::vector<std::string> alternatives(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (;;) {
    const std::size_t e = text.find(',', b);
    const std::string one = text.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (one.empty()) throw InputError(flag + " " + (text.empty() ? "''" : text) + ": an empty alternative in the list");
    if (std::find(out.begin(), out.end(), one) == out.end()) out.push_back(one);
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

// One swept field: its column, its alternatives, and how a request takes one.
struct Dim {
  std::string column, flag;
  std::vector<std::string> values;
  std::function<void(ServeRequest&, const std::string&)> set;
  std::function<std::string(const ServeRequest&)> get;
};

// Every combination of the dims' alternatives on copies of `base`, the first dim outermost.
std::vector<ServeRequest> cross(const ServeRequest& base, const std::vector<Dim>& dims, std::int64_t limit) {
  std::vector<ServeRequest> out{base};
  for (const Dim& d : dims) {
    if (static_cast<std::int64_t>(out.size()) > limit / static_cast<std::int64_t>(d.values.size()))
      throw InputError(d.flag + ": the sweep has more than 2^20 serving configs; fewer alternatives");
    std::vector<ServeRequest> next;
    for (const ServeRequest& q : out)
      for (const std::string& v : d.values) {
        next.push_back(q);
        d.set(next.back(), v);
      }
    out = std::move(next);
  }
  return out;
}

// The mapping's dims: presets, the llm family's axes and hardware axes given, each a list.
std::vector<Dim> mapping_dims(const ServeRequest& q) {
  std::vector<Dim> dims;
  const Family& f = *q.llm.family;
  for (const auto& [flag, text] : q.llm.presets)
    dims.push_back({flag.substr(2), flag, alternatives(flag, text),
                    [flag = flag](ServeRequest& r, const std::string& v) { r.llm.presets[flag] = v; },
                    [flag = flag](const ServeRequest& r) { return r.llm.presets.at(flag); }});
  for (const auto& [name, text] : q.llm.axes) {
    const AxisDesc* ax = f.axis(name);
    const std::string flag = ax ? ax->flag : name;
    dims.push_back({name, flag, alternatives(flag, text), [name = name](ServeRequest& r, const std::string& v) { r.llm.axes[name] = v; },
                    [name = name](const ServeRequest& r) { return r.llm.axes.at(name); }});
  }
  for (const auto& [name, text] : q.llm.hw_axes)
    dims.push_back({name, "--" + name, alternatives(name, text),
                    [name = name](ServeRequest& r, const std::string& v) { r.llm.hw_axes[name] = v; },
                    [name = name](const ServeRequest& r) { return r.llm.hw_axes.at(name); }});
  return dims;
}

// The serving dims, in the order the configs cross them (arrivals innermost).
std::vector<Dim> serving_dims(const ServeRequest& q) {
  std::vector<Dim> dims;
  auto add = [&](const char* column, const char* flag, const std::string& text, std::string ServeRequest::*field) {
    dims.push_back({column, flag, alternatives(flag, text), [field](ServeRequest& r, const std::string& v) { r.*field = v; },
                    [field](const ServeRequest& r) { return r.*field; }});
  };
  add("disagg", "--disagg", q.disagg.empty() ? "none" : q.disagg, &ServeRequest::disagg);
  add("max_num_seqs", "--max-num-seqs", q.max_num_seqs, &ServeRequest::max_num_seqs);
  add("max_batched_tokens", "--max-batched-tokens", q.max_batched_tokens, &ServeRequest::max_batched_tokens);
  add("chunked_prefill", "--chunked-prefill", q.chunked_prefill, &ServeRequest::chunked_prefill);
  add("kv_block", "--kv-block", q.kv_block, &ServeRequest::kv_block);
  add("arrivals", "--arrivals", q.arrivals, &ServeRequest::arrivals);
  Dim& d = dims.front();  // "none": aggregated
  d.set = [](ServeRequest& r, const std::string& v) { r.disagg = v == "none" ? "" : v; };
  d.get = [](const ServeRequest& r) { return r.disagg.empty() ? std::string("none") : r.disagg; };
  return dims;
}

double percentile_of(const nlohmann::json& stats, const std::string& p) { return stats.at("p" + p).get<double>(); }

// A served config's row: its figures at the SLO's percentile.
struct Row {
  std::string status = "ok";
  nlohmann::json doc;  // the run's summary (null when it could not serve)
  bool meets = false, front = false;
  double per_sip = 0, per_user = 0;
};

// The configs that meet the SLO and that no other such config beats on both throughputs.
void mark_front(std::vector<Row>& rows) {
  for (Row& a : rows) {
    if (!a.meets) continue;
    a.front = true;
    for (const Row& b : rows)
      if (b.meets && b.per_sip >= a.per_sip && b.per_user >= a.per_user && (b.per_sip > a.per_sip || b.per_user > a.per_user)) {
        a.front = false;
        break;
      }
  }
}

Table rows_table(const std::vector<Dim>& mdims, const std::vector<Dim>& sdims) {
  std::vector<Column> cols{{"config", "", ColType::integer}};
  for (const Dim& d : mdims) cols.push_back({d.column, "", ColType::text});
  for (const Dim& d : sdims) cols.push_back({d.column, "", ColType::text});
  for (const char* c : {"status"}) cols.push_back({c, "", ColType::text});
  cols.push_back({"sips", "", ColType::integer});
  for (const char* c : {"ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms"})
    cols.push_back({c, "ms", ColType::real});
  cols.push_back({"tokens_per_s_per_sip", "1/s", ColType::real});
  cols.push_back({"tokens_per_s_per_user", "1/s", ColType::real});
  cols.push_back({"requests_per_s", "1/s", ColType::real});
  cols.push_back({"goodput_per_s", "1/s", ColType::real});
  cols.push_back({"met_slo_fraction", "", ColType::real});
  cols.push_back({"meets_slo", "", ColType::boolean});
  cols.push_back({"on_front", "", ColType::boolean});
  cols.push_back({"preemptions", "", ColType::integer});
  cols.push_back({"peak_kv_use", "", ColType::real});
  cols.push_back({"j_per_output_token", "J", ColType::real});
  return Table(cols);
}

// The sweep's configs: the mappings crossed, and the serving variants each mapping serves.
struct Plan {
  std::vector<Dim> mdims, sdims;
  std::vector<ServeRequest> mappings, servings;
  std::vector<std::string> cannot;  // per mapping: why the model cannot run it ("": it can)
  std::size_t size() const { return mappings.size() * servings.size(); }
};

// The plan, every alternative checked before any work: each serving variant's flags, each
// mapping made.
Plan plan_of(const ServeSweepRequest& r) {
  const ServeRequest& q = r.serve;
  KB_INTERNAL_CHECK(q.llm.family != nullptr, "sweep serve: a request without the llm family");
  const std::string& pct = r.slo_percentile;
  if (pct != "50" && pct != "90" && pct != "99")
    throw InputError("--slo-percentile " + (pct.empty() ? std::string("''") : pct) + ": expected 50, 90 or 99");
  check_output_path("--out", r.out, "serve_sweep.json");
  check_output_path("--csv", r.csv, "serve_sweep.csv");
  check_outputs_distinct({{"--topology", q.llm.topology.path}}, {{"--out", r.out}, {"--csv", r.csv}});
  Plan p;
  p.mdims = mapping_dims(q), p.sdims = serving_dims(q);
  p.mappings = cross(q, p.mdims, kMaxServeConfigs);
  p.servings = cross(q, p.sdims, kMaxServeConfigs);
  if (static_cast<std::int64_t>(p.mappings.size()) > kMaxServeConfigs / static_cast<std::int64_t>(p.servings.size()))
    throw InputError("sweep serve: more than 2^20 serving configs; fewer alternatives");
  for (const ServeRequest& s : p.servings) check_serve_inputs(s);
  // Each mapping as eval llm makes it: a bad flag is an error; a mapping the model cannot run
  // (it does not fit, no "best" candidate is valid) makes its configs rows that say why.
  for (const ServeRequest& m : p.mappings) {
    p.cannot.emplace_back();
    try {
      ServeMapping check(m);
    } catch (const InvalidConfig& e) {
      p.cannot.back() = e.what();
    }
  }
  return p;
}

// Each mapping's configs in interleaved chunks, one chunk a task with its own step model (its
// memo shared by the chunk's runs); the mapping's first config re-checked.
std::vector<Row> run_plan(const Plan& p, const ServeSweepRequest& r) {
  const std::size_t chunks = r.threads > 0 ? r.threads : std::max(1u, std::thread::hardware_concurrency());
  const std::size_t per = p.servings.size();
  std::vector<Row> rows(p.size());
  parallel_for(
      p.mappings.size() * chunks,
      [&](std::size_t task) {
        const std::size_t m = task / chunks, c = task % chunks;
        if (c >= per) return;
        if (!p.cannot[m].empty()) {
          for (std::size_t s = c; s < per; s += chunks) rows[m * per + s].status = p.cannot[m];
          return;
        }
        ServeMapping mapping(p.mappings[m]);
        for (std::size_t s = c; s < per; s += chunks) {
          ServeRequest one = p.servings[s];
          one.llm = p.mappings[m].llm;
          one.out.clear(), one.figures = false;
          one.recheck = s == 0 ? r.serve.recheck : "0";
          Row& row = rows[m * per + s];
          try {
            row.doc = mapping.serve(one);
          } catch (const InputError& e) {  // this config cannot serve: a row that says why
            row.status = e.what();
            continue;
          }
          const nlohmann::json& rep = row.doc["report"];
          row.per_sip = rep["output_tokens_per_s_per_sip"], row.per_user = rep["output_tokens_per_s_per_user"];
          row.meets = percentile_of(rep["ttft_ms"], r.slo_percentile) <= row.doc["slo"]["ttft_ms"].get<double>() &&
                      percentile_of(rep["tpot_ms"], r.slo_percentile) <= row.doc["slo"]["tpot_ms"].get<double>();
        }
      },
      static_cast<unsigned>(chunks));
  mark_front(rows);
  return rows;
}

// Config i's row of the table.
std::vector<nlohmann::json> cells_of(const Plan& p, const Row& row, std::size_t i, std::size_t columns) {
  const ServeRequest &mq = p.mappings[i / p.servings.size()], &sq = p.servings[i % p.servings.size()];
  std::vector<nlohmann::json> cells{static_cast<std::int64_t>(i)};
  for (const Dim& d : p.mdims)  // an axis left to "best" shows what the mapping took
    cells.push_back(!row.doc.is_null() && row.doc["llm"].contains(d.column) ? cell_text(row.doc["llm"][d.column]) : d.get(mq));
  for (const Dim& d : p.sdims) cells.push_back(d.get(sq));
  cells.push_back(row.status);
  if (row.doc.is_null()) {
    cells.resize(columns, nullptr);
    return cells;
  }
  const nlohmann::json& rep = row.doc["report"];
  cells.push_back(rep["sips"]);
  for (const char* k : {"ttft_ms", "tpot_ms"})
    for (const char* q : {"p50", "p90", "p99"}) cells.push_back(rep[k][q]);
  const double n = row.doc["workload"]["requests"].get<double>();
  for (const nlohmann::json& v : {rep["output_tokens_per_s_per_sip"], rep["output_tokens_per_s_per_user"], rep["requests_per_s"],
                                  rep["goodput_per_s"], nlohmann::json(rep["met_slo"].get<double>() / n)})
    cells.push_back(v);
  cells.push_back(row.meets), cells.push_back(row.front), cells.push_back(rep["preemptions"]), cells.push_back(rep["peak_kv_use"]);
  cells.push_back(row.doc["energy"]["j_per_output_token"]);
  return cells;
}

}  // namespace

nlohmann::json sweep_serve(const ServeSweepRequest& r) {
  const ServeRequest& q = r.serve;
  const Plan p = plan_of(r);
  const std::vector<Row> rows = run_plan(p, r);
  Table table = rows_table(p.mdims, p.sdims);
  nlohmann::json front = nlohmann::json::array(), checks = nlohmann::json::array(), topology;
  std::int64_t valid = 0, meeting = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    table.add(cells_of(p, row, i, table.columns().size()));
    if (row.doc.is_null()) continue;
    ++valid, meeting += row.meets;
    if (row.front) front.push_back(static_cast<std::int64_t>(i));
    if (i % p.servings.size() == 0) {
      nlohmann::json rc = row.doc["recheck"];
      rc.erase("checked");
      rc["config"] = static_cast<std::int64_t>(i);
      checks.push_back(rc);
    }
    if (topology.is_null()) topology = row.doc["topology"];
  }
  // The front by tokens/s per user (then per SIP, then config): the curve as it is read.
  std::sort(front.begin(), front.end(), [&](const nlohmann::json& a, const nlohmann::json& b) {
    const Row &x = rows[a.get<std::size_t>()], &y = rows[b.get<std::size_t>()];
    if (x.per_user != y.per_user) return x.per_user < y.per_user;
    if (x.per_sip != y.per_sip) return x.per_sip > y.per_sip;
    return a.get<std::int64_t>() < b.get<std::int64_t>();
  });

  nlohmann::json doc = {{"schema", "kernbench-gpu/serve-sweep"}, {"schema_version", "1.0.0"}};
  doc["topology"] = topology;
  doc["workload"] = {{"isl", q.lengths.empty() ? q.isl : ""}, {"osl", q.lengths.empty() ? q.osl : ""}, {"lengths", q.lengths},
                     {"requests", q.requests.empty() ? nlohmann::json(nullptr) : nlohmann::json(q.requests)}, {"seed", q.seed}};
  doc["slo"] = {{"ttft_ms", std::stod(q.slo_ttft)}, {"tpot_ms", std::stod(q.slo_tpot)}, {"percentile", std::stoi(r.slo_percentile)}};
  doc["counts"] = {{"configs", rows.size()}, {"mappings", p.mappings.size()}, {"valid", valid}, {"meet_slo", meeting},
                   {"front", front.size()}};
  doc["front"] = front;
  doc["columns"] = nlohmann::json::array();  // the configs' fields, in order
  for (const Column& c : table.columns()) doc["columns"].push_back(c.name);
  doc["configs"] = table.json();
  doc["recheck"] = checks;
  if (!r.csv.empty()) write_file_atomic(r.csv, table.csv());
  if (!r.out.empty()) {
    write_file_atomic(r.out, doc.dump(2) + "\n");
    if (r.figures && valid > 0) {  // a sweep of which no config served has nothing to draw
      const std::string folder = std::filesystem::path(r.out).parent_path().string();
      render_figures("plot_serve_sweep.py", r.out, folder.empty() ? "." : folder);
    }
  }
  return doc;
}

}  // namespace kb::api
