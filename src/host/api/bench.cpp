#include "bench.h"

#include <cctype>
#include <cstdlib>

#include "host/common/error.h"
#include "host/common/output.h"

namespace kb::api {

const BenchInfo& bench_or_error(const std::string& name) {
  if (const BenchInfo* b = find_bench(name)) return *b;
  std::string known;
  for (const auto& b : benches()) known += (known.empty() ? "" : ", ") + b.name;
  throw InputError("--bench " + name + ": unknown bench (known: " + known + ")");
}

std::string bench_out_dir(const BenchInfo& b, const std::string& out) {
  return out.empty() ? "benches/1H_milestone_output/" + b.domain : out;
}

std::string run_bench(const BenchRequest& r) {
  const BenchInfo& b = bench_or_error(r.bench);
  const std::string& backend = r.backend;
  const bool fast = r.fast;
  BenchContext ctx;
  ctx.bench = &b;
  TopologyRequest topo = r.topology;  // the bench's own topology where none is given
  if (topo.path.empty() && !b.topology.empty()) topo.path = data_dir() + "/topologies/" + b.topology;
  ctx.topology_path = topo.path.empty() ? data_dir() + "/topologies/default.yaml" : topo.path;
  ctx.topology = topo.load();
  ctx.out_dir = bench_out_dir(b, r.out);
  ctx.backend_request = backend;
  if (backend != "auto" && backend != "cuda" && backend != "omp")
    throw InputError("--backend " + backend + ": expected auto, cuda or omp");
  // A folder the results could not be written to is found now, not after the bench ran.
  check_output_path("--out", ctx.out_dir + "/" + b.json, b.json);
  // MILESTONE_FAST: the usual true and false words; anything else is a mistake.
  bool env_is_fast = false;
  if (const char* env_fast = std::getenv("MILESTONE_FAST"); env_fast && *env_fast) {
    std::string v(env_fast);
    for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (v == "1" || v == "true" || v == "yes" || v == "on") env_is_fast = true;
    else if (!(v == "0" || v == "false" || v == "no" || v == "off"))
      throw InputError("MILESTONE_FAST=" + escape_text(env_fast) + ": expected 1, true, yes or on (or 0, false, no, off)");
  }
  // The figure script starts now, importing matplotlib while the bench runs; not inside a
  // program that embeds the tool, which outlives the command. It ends with the command.
  struct EndPrefetch {
    ~EndPrefetch() { end_plot_prefetch(); }
  } end_prefetch;
  if (!b.plot.empty()) prefetch_plot_python(embedded() ? "" : b.plot);
  if (fast || env_is_fast) {
    // Re-render the committed results (docs/diagrams/DOMAIN/), without simulating.
    const char* how = fast ? "--fast" : "MILESTONE_FAST";
    if (b.plot.empty()) throw InputError(std::string(how) + ": bench " + b.name + " has no figures to re-render");
    if (!r.topology.path.empty() || !r.topology.sets.empty())
      throw InputError(std::string(how) + ": the committed results are for the bench's own topology (" +
                       (b.topology.empty() ? std::string("default.yaml") : b.topology) + "); --topology and --set need a full run");
    const std::string committed = data_dir() + "/docs/diagrams/" + b.domain + "/" + b.json;
    const std::string json = ctx.out_dir + "/" + b.json;
    const std::string committed_csv = data_dir() + "/docs/diagrams/" + b.domain + "/" + b.csv();
    // Everything is checked before anything is written: the figure script reads (and
    // validates) the committed file itself, so an error names it, not a copy.
    const std::string json_text = read_file(committed), csv_text = read_file(committed_csv);
    render_figures(b.plot, committed, ctx.out_dir);
    write_file_atomic(json, json_text);
    write_file_atomic(ctx.out_dir + "/" + b.csv(), csv_text);
    if (r.log)
      stream_printf(*r.log, "%s: re-rendered figures from %s into %s\n", b.name.c_str(), committed.c_str(),
                    ctx.out_dir.c_str());
  } else {
    std::ostream nowhere(nullptr);  // no buffer: what is written to it is dropped
    ctx.out = r.log ? r.log : &nowhere;
    b.fn(ctx);
  }
  return ctx.out_dir;
}

}  // namespace kb::api
