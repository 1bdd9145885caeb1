// Bench registration: a bench is a function plus one KB_BENCH line naming it, describing
// it, declaring its outputs (the JSON its figures are drawn from, and the plot script that
// draws them) and the axes it sweeps. The registry is written during static
// initialisation and read-only afterwards.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "../sweep/backend.h"
#include "../topology/spec.h"

namespace kb {

struct BenchContext {
  TopologySpec topology;
  std::string topology_path;
  std::string out_dir;      // where results go (already includes the bench's domain)
  std::string backend_request;  // auto | cuda | omp
  std::ostream* out = nullptr;
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
#define KB_BENCH(name, description, domain, json, plot, fn, ...)              \
  static const bool KB_BENCH_CAT(kb_bench_registered_, __LINE__) =            \
      ::kb::register_bench({name, description, {__VA_ARGS__}, domain, fn, json, plot})
