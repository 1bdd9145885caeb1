// `merge` (the typed API's MergeRequest): the outputs of a sweep's shards, each checked field
// by field, combined into the output of one run.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <vector>

#include "merge_shards.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/sweep/merge.h"
#include "host/topology/fields.h"
#include "host/study/sweep_report.h"

namespace kb::api {

namespace fs = std::filesystem;

namespace {

// The first place two JSON values differ ("request.axes.m"), or "" when they are equal.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b, const std::string& at) {
  if (a.type() != b.type()) return at;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string here = at + (at.empty() ? "" : ".") + it.key();
      if (!b.contains(it.key())) return here;
      const std::string d = first_difference(it.value(), b[it.key()], here);
      if (!d.empty()) return d;
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key())) return at + (at.empty() ? "" : ".") + it.key();
    return "";
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return at;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string d = first_difference(a[i], b[i], at + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
    return "";
  }
  return a == b ? "" : at;
}

// The topology a result document records (every field's value, its name, source and hash).
TopologySpec topology_from_record(const nlohmann::json& rec, const std::string& where) {
  TopologySpec t;
  try {
    t.name = rec.at("name").get<std::string>();
    t.source = rec.at("source").get<std::string>();
    t.hash = std::stoull(rec.at("hash").get<std::string>(), nullptr, 16);
    t.overrides = rec.at("overrides").get<std::vector<std::string>>();
    t.schema_version = rec.at("schema_version").get<std::int64_t>();
    const nlohmann::json& fields = rec.at("fields");
    for (const HwField& f : hw_fields()) {
      const nlohmann::json& v = fields.at(f.path);
      std::int64_t x = 0;
      std::string why;
      if (!f.parse(v.is_string() ? v.get<std::string>() : v.dump(), &x, &why))
        throw InputError(where + ": topology.fields." + f.path + ": " + why);
      f.set(t.hw(), x);
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": topology: malformed (" + std::string(e.what()) + ")");
  } catch (const std::logic_error&) {
    throw InputError(where + ": topology.hash: not a hexadecimal hash");
  }
  return t;
}

struct Part {
  std::string file;
  nlohmann::json doc;
  std::int64_t index, count;
};

// The backend: {"name": ...} (schema 3), or its name alone (a shard of schema 2); an OpenMP
// shard has no deferred configs (it evaluates every config in one stage).
void check_backend(const std::string& file, const nlohmann::json& doc) {
  const nlohmann::json* backend = !doc.contains("backend")     ? nullptr
                                  : doc["backend"].is_string() ? &doc["backend"]
                                  : doc["backend"].is_object() && doc["backend"].contains("name") ? &doc["backend"]["name"]
                                                                                               : nullptr;
  if (!backend || !backend->is_string() || (*backend != "omp" && *backend != "cuda"))
    throw InputError(file + ": backend.name: expected \"omp\" or \"cuda\"");
  const auto shard = doc.find("shard");
  if (*backend == "omp" && shard != doc.end() && shard->is_object() && shard->contains("summary") &&
      (*shard)["summary"].is_object() && (*shard)["summary"].contains("deferred"))
    throw InputError(file + ": shard.summary.deferred: the OpenMP backend evaluates every config in one stage");
}

// A shard's output, read and checked as a document of its own.
Part read_part(const std::string& file) {
  nlohmann::json doc;
  // A shard's rows (one per group, up to 2^20) are not needed here: they are dropped as
  // they are read, so a shard of any size merges in the memory of its summary. Nesting
  // deeper than any shard's is refused as it is read (a shard nests 5 levels).
  constexpr int kMaxDepth = 16;
  const nlohmann::json::parser_callback_t keep = [&file](int depth, nlohmann::json::parse_event_t event,
                                                         nlohmann::json& parsed) {
    if (depth > kMaxDepth && (event == nlohmann::json::parse_event_t::object_start ||
                              event == nlohmann::json::parse_event_t::array_start))
      throw InputError(file + ": nested more than " + std::to_string(kMaxDepth) + " levels deep: not a shard");
    return !(depth == 1 && event == nlohmann::json::parse_event_t::key &&
             (parsed == "best_per_group" || parsed == "top" || parsed == "pareto" || parsed == "histogram"));
  };
  try {
    check_input_file(file);
    std::ifstream in(file, std::ios::binary);
    if (!in) throw InputError(file + ":1:1: (file): cannot open file");
    doc = nlohmann::json::parse(in, keep);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file + ": not JSON (" + std::string(e.what()) + ")");
  }
  const auto* schema = doc.is_object() && doc.contains("schema") ? &doc["schema"] : nullptr;
  if (!schema || !schema->is_string() || schema->get<std::string>().size() < 12 ||
      schema->get<std::string>().compare(schema->get<std::string>().size() - 12, 12, "-space-sweep") != 0 ||
      !doc.contains("shard") || !doc["shard"].is_object())
    throw InputError(file + ": not the output of a sweep's shard (sweep ... --shard I/N --out FILE)");
  for (const char* key : {"space", "topology", "shard"})
    if (!doc.contains(key) || !doc[key].is_object()) throw InputError(file + ": " + key + ": expected an object");
  check_backend(file, doc);
  if (doc.contains("timing") && (!doc["timing"].is_object() || !doc["timing"].value("seconds", nlohmann::json(0.0)).is_number() ||
                                 !(doc["timing"].value("seconds", 0.0) >= 0.0) || !std::isfinite(doc["timing"].value("seconds", 0.0))))
    throw InputError(file + ": timing.seconds: expected a finite number of seconds >= 0");
  const nlohmann::json& sh = doc["shard"];
  std::int64_t count = 0, index = 0;
  for (const auto& [key, lo, hi, dst] : {std::tuple<const char*, std::int64_t, std::int64_t, std::int64_t*>{"count", 1, INT64_C(1) << 20, &count},
                                         {"index", 0, (INT64_C(1) << 20) - 1, &index}}) {
    const auto it = sh.find(key);
    if (it == sh.end() || !it->is_number_integer() || it->is_number_unsigned() != (it->get<std::int64_t>() >= 0) ||
        it->get<std::int64_t>() < lo || it->get<std::int64_t>() > hi)
      throw InputError(file + ": shard." + key + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    *dst = it->get<std::int64_t>();
  }
  return {file, std::move(doc), index, count};
}

// The shards in index order, once checked to be of one sweep: the same request, topology,
// program version and space, every shard once.
std::vector<const Part*> shards_in_order(const std::vector<Part>& parts) {
  const Part& p0 = parts.front();
  auto identity = [](const Part& p) {
    return nlohmann::json{{"schema", p.doc["schema"]},
                          {"generator", p.doc.value("generator", nlohmann::json())},
                          {"topology", p.doc.value("topology", nlohmann::json())},
                          {"space", p.doc.value("space", nlohmann::json())},
                          {"request", p.doc["shard"].value("request", nlohmann::json())},
                          {"count", p.count}};
  };
  const nlohmann::json id0 = identity(p0);
  for (const Part& p : parts) {
    const std::string d = first_difference(id0, identity(p), "");
    if (!d.empty())
      throw InputError(p.file + ": a shard of another sweep than " + p0.file + ": they differ in " + d);
  }
  std::vector<const Part*> by_index(static_cast<std::size_t>(p0.count), nullptr);
  for (const Part& p : parts) {
    if (p.index < 0 || p.index >= p0.count) throw InputError(p.file + ": shard " + std::to_string(p.index) + " of " + std::to_string(p0.count) + "?");
    const Part*& slot = by_index[static_cast<std::size_t>(p.index)];
    if (slot) throw InputError(p.file + " and " + slot->file + " are both shard " + std::to_string(p.index) + "/" + std::to_string(p0.count));
    slot = &p;
  }
  std::string missing;
  for (std::size_t i = 0; i < by_index.size(); ++i)
    if (!by_index[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  if (!missing.empty())
    throw InputError("shard(s) " + missing + " of " + std::to_string(p0.count) + " missing: merge needs every shard once");
  return by_index;
}

// The sweep's outcome as its request and topology (those the shards record) define it,
// its space built again; the summary still empty.
SweepOutcome outcome_of_request(const Part& p0) {
  const nlohmann::json& rq = p0.doc["shard"]["request"];
  SweepOutcome o;
  try {
    o.f = &family(rq.at("family").get<std::string>());
    o.topo = topology_from_record(p0.doc.at("topology"), p0.file);
    o.req.axes = rq.at("axes").get<std::map<std::string, std::string>>();
    for (const auto& h : rq.at("hw")) o.req.hw.push_back({h.at(0).get<std::string>(), h.at(1).get<std::string>(), h.at(2).get<std::string>()});
    o.req.zips = rq.at("zips").get<std::vector<std::string>>();
    o.req.group = rq.at("group").get<std::string>();
    if (rq.contains("presets")) {
      o.req.presets = rq.at("presets").get<std::map<std::string, std::string>>();
      for (const auto& [flag, value] : o.req.presets) {
        const auto it = std::find_if(o.f->presets.begin(), o.f->presets.end(),
                                     [&](const PresetDesc& d) { return d.flag == flag && d.sets_fields(); });
        if (it == o.f->presets.end())
          throw InputError(p0.file + ": shard.request.presets: " + flag + " sets nothing in family " + o.f->name);
      }
    }
    for (const auto& [key, dst] : {std::pair<const char*, int*>{"top", &o.top}, {"recheck", &o.recheck}, {"top_k", &o.red.top_k}}) {
      const nlohmann::json& v = rq.at(key);
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > batched::kMaxTopK)
        throw InputError(p0.file + ": shard.request." + key + ": expected an integer from 0 to " + std::to_string(batched::kMaxTopK));
      *dst = v.get<int>();
    }
    if (o.red.top_k != std::max(o.top, o.recheck))
      throw InputError(p0.file + ": shard.request.top_k: not the larger of top and recheck");
    o.pareto_name = rq.at("pareto").get<std::string>();
    o.red.histogram = rq.at("histogram").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(p0.file + ": shard.request: malformed (" + std::string(e.what()) + ")");
  }
  o.sp = build_space(*o.f, o.topo, o.req);
  if (o.sp.space.size() != p0.doc["space"].value("size", INT64_C(-1)))
    throw InputError(p0.file + ": the space its request builds has " + std::to_string(o.sp.space.size()) +
                     " configs, not the " + p0.doc["space"].value("size", nlohmann::json()).dump() + " it records");
  o.red.pareto = parse_pareto(*o.f, o.pareto_name);
  const nlohmann::json& b = p0.doc["backend"];
  o.backend = (b.is_string() ? b : b["name"]) == "cuda" ? BackendKind::cuda : BackendKind::omp;
  return o;
}

}  // namespace

void merge(const MergeRequest& a, SweepReporter& reporter) {
  const std::int64_t max_ops = a.max_ops ? parse_max_ops(*a.max_ops) : kDefaultMaxOps;
  if (a.files.empty()) throw InputError("merge: give the shards' files");
  check_output_path("--out", a.out, "sweep.json");
  check_output_path("--csv", a.csv, "sweep.csv");
  {
    std::vector<FlagPath> inputs;
    for (const std::string& file : a.files) inputs.push_back({"shard", file});
    check_outputs_distinct(inputs, {{"--out", a.out}, {"--csv", a.csv}});
  }
  std::vector<Part> parts;
  for (const std::string& file : a.files) parts.push_back(read_part(file));
  const std::vector<const Part*> by_index = shards_in_order(parts);
  SweepOutcome o = outcome_of_request(parts.front());
  nlohmann::json shards = nlohmann::json::array();
  // Every shard is read and checked before any is used.
  std::vector<batched::SweepSummary> sums;
  for (const Part* p : by_index) {
    sums.push_back(summary_from_json(p->doc["shard"].value("summary", nlohmann::json()), o.sp.space.groups(),
                                     static_cast<int>(o.f->statuses.size()), p->file));
    // What can be derived again from the request is checked first (its error names the
    // field); the digest then covers the rest, the latency checksum above all.
    check_shard_summary(sums.back(), o.f->id, o.sp.space, o.red, p->index, p->count, p->file);
    const nlohmann::json& sh = p->doc["shard"];
    const nlohmann::json digest = sh.value("digest", nlohmann::json());
    if (!digest.is_string())
      throw InputError(p->file + ": shard.digest: missing; write the shard again with this version (sweep ... --shard I/N)");
    if (digest.get<std::string>() != shard_digest(sh["request"], p->index, p->count, sums.back()))
      throw InputError(p->file + ": shard.digest: not the digest of the shard's request and summary: the file was changed "
                                 "after the sweep wrote it; run the shard again");
    if (p->doc.contains("latency_checksum") && p->doc["latency_checksum"] != sh["summary"]["latency_checksum"])
      throw InputError(p->file + ": latency_checksum: not the shard summary's");
  }
  for (std::size_t k = 0; k < by_index.size(); ++k) {
    const Part* p = by_index[k];
    const batched::SweepSummary& s = sums[k];
    merge_summary(o.sum, s, o.red.top_k);
    o.seconds = std::max(o.seconds, p->doc.value("timing", nlohmann::json::object()).value("seconds", 0.0));
    shards.push_back({{"file", p->file}, {"index", p->index}, {"evaluated", s.evaluated}});
  }
  o.merged = {{"shards", shards}};
  o.max_ops = max_ops;
  SweepReportTo to;
  to.json = a.json, to.out = a.out, to.csv = a.csv;
  reporter.finished(o, to);
}

}  // namespace kb::api
