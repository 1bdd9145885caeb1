// What `sweep` and `merge` share: a sweep's outcome (one run, a shard, or the merge of
// shards) and the report written from it (tables, JSON, CSV).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <iosfwd>
#include <string>

#include "host/families/family.h"
#include "host/sweep/backend.h"
#include "host/sweep/space.h"

namespace kb {

// Everything a sweep's output is made from: its space, how it ran and its summary (one
// run, a shard, or the merge of shards).
struct SweepOutcome {
  const Family* f = nullptr;
  TopologySpec topo;
  SpaceRequest req;
  BuiltSpace sp;
  batched::Reductions red;  // as run: top_k is the longer of --top and --recheck
  int top = 10, recheck = 10;
  std::int64_t max_ops = kDefaultMaxOps;  // the re-check skips configs whose reference run is larger
  std::string pareto_name;
  BackendKind backend = BackendKind::omp;
  batched::SweepSummary sum;
  double seconds = 0;
  std::int64_t shard_i = -1, shard_n = 0;  // a shard's output
  nlohmann::json merged;                   // merge and MPI: the shards it is made of
};

// Where a sweep's outcome goes.
struct SweepReportTo {
  std::ostream* text = nullptr;  // the tables, or with `json` the JSON text (null: neither)
  bool json = false;
  std::string out, csv;  // the files of --out (the JSON) and --csv ("": none)
  // When set, gets the JSON document whole: what parsing its text would give.
  std::function<void(nlohmann::json)> document;
};
// The tables (or the JSON) of a sweep's outcome, and its files, where `to` says.
void report_sweep(const SweepOutcome& o, const SweepReportTo& to);
// What writing a sweep's per-group rows costs: the rows (per group its best, and with
// `pareto` its front, counted as one point; per format: the JSON of --json or --out, the
// CSV of --csv), their bytes, and about how long making and
// writing them takes, from a sample of them made and serialised now (`json_copied`: the
// JSON file is also copied to standard output). Zero for fewer than 1024 groups.
struct WriteCost {
  std::int64_t rows = 0, bytes = 0;
  std::int64_t json_bytes = 0, csv_bytes = 0;  // of one copy of each (bytes: both)
  double seconds = 0;
};
WriteCost write_cost(const Family& f, const BuiltSpace& sp, bool pareto, bool json, bool csv, bool json_copied);

// The cost kind named by --pareto (0: none); InputError for an unknown name.
int parse_pareto(const Family& f, const std::string& s);

}  // namespace kb
