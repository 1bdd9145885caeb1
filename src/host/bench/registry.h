// Bench registration: a bench is a function plus one KB_BENCH declaration naming it,
// describing it, declaring its outputs (the JSON document its figures are drawn from, with
// its schema, and the plot script that draws them) and the axes it sweeps. The study layer
// (src/host/study/) writes what it declares. The registry is written during static
// initialisation and read-only afterwards.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "../sweep/backend.h"
#include "../topology/spec.h"

namespace kb {

struct BenchInfo;

struct BenchContext {
  const BenchInfo* bench = nullptr;  // what is running
  TopologySpec topology;
  std::string topology_path;
  std::string out_dir;      // where results go (already includes the bench's domain)
  std::string backend_request;  // auto | cuda | omp
  std::ostream* out = nullptr;   // where the bench's lines go
};

using BenchFn = void (*)(BenchContext&);

struct BenchInfo {
  std::string name;
  std::string description;
  std::vector<std::string> axes;
  std::string domain;  // output subfolder of benches/1H_milestone_output/
  BenchFn fn = nullptr;
  std::string json;  // the results file its figures are drawn from, e.g. "gemm_sweep.json"; `run --fast`
                     // re-renders the committed copy in docs/diagrams/<domain>/
  std::string plot;  // its script in tools/plot/, e.g. "plot_gemm.py"; "" when it has no figures
  std::string topology;  // its topology when --topology is not given: a file of topologies/ ("": default.yaml)
  std::string schema;          // the document's schema, e.g. "kernbench-gpu/gemm-sweep"
  std::string schema_version;  // e.g. "1.3.0"
  // Its table's CSV: the JSON's name with .csv ("gemm_sweep.csv").
  std::string csv() const { return json.substr(0, json.rfind('.')) + ".csv"; }
};

// Records a bench; problems (bad or duplicate name) are kept and reported by
// bench_registry_errors(), which main checks before doing anything else.
bool register_bench(BenchInfo info);
const std::vector<BenchInfo>& benches();
const BenchInfo* find_bench(const std::string& name);
const std::vector<std::string>& bench_registry_errors();
bool valid_bench_name(const std::string& name);

}  // namespace kb

#define KB_BENCH_CAT2(a, b) a##b
#define KB_BENCH_CAT(a, b) KB_BENCH_CAT2(a, b)
// KB_BENCH(expression): registers the BenchInfo the expression gives, e.g. a lambda that
// fills its fields by name (benches/milestone_1h_gemm.cpp).
#define KB_BENCH(...) \
  static const bool KB_BENCH_CAT(kb_bench_registered_, __LINE__) = ::kb::register_bench(__VA_ARGS__)
