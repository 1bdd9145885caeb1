// merge's checks of a shard's summary, on the space of the seed shards (tests/fuzz/corpus/
// shard/: the summaries of shards 0 and 1 of 2 of the sweep below, written by the program).
// Mutations of real summaries reach every check: each must end in an InputError or in a
// summary that shard could have written. The second is verified here: every config it names
// is in the shard, in its group, and has the latency it reports.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz.h"
#include "host/common/error.h"
#include "host/families/family.h"
#include "host/sweep/merge.h"
#include "host/sweep/space.h"
#include "host/topology/load.h"

namespace {
// sweep gemm --m 8,32,2048 --n 1024 --k 512 --tile-m 8,32 --tile-n 64,128 --pes 1,2 --pareto pes --top 6
struct Setup {
  const kb::Family& f = kb::family("gemm");
  kb::BuiltSpace sp;
  kb::batched::Reductions red;
  Setup() {
    const kb::TopologySpec topo = kb::load_topology(std::string(KB_FUZZ_TOPOLOGIES) + "/default.yaml");
    kb::SpaceRequest req;
    req.axes = {{"m", "8,32,2048"}, {"n", "1024"}, {"k", "512"}, {"tile_m", "8,32"}, {"tile_n", "64,128"}, {"pes", "1,2"}};
    sp = kb::build_space(f, topo, req);
    red.top_k = 10;  // the larger of --top 6 and the default --recheck 10
    red.histogram = true;
    for (std::size_t i = 0; i < f.costs.size(); ++i)
      if (f.costs[i].name == "pes") red.pareto = static_cast<int>(i) + 1;
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Setup s;
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return 0;  // merge refuses these before the summary
  const std::int64_t shard = j.value("shard_index", nlohmann::json(0)).is_number_integer() ? j.value("shard_index", 0) : 0;
  if (shard < 0 || shard > 1) return 0;
  try {
    const kb::batched::SweepSummary sum =
        kb::summary_from_json(j, s.sp.space.groups(), static_cast<int>(s.f.statuses.size()), "fuzz");
    kb::check_shard_summary(sum, s.f.id, s.sp.space, s.red, shard, 2, "fuzz");
    // Accepted: it must be a summary shard `shard` could have written.
    if (sum.evaluated != kb::shard_configs(s.sp.space.size(), shard, 2)) __builtin_trap();
    std::int64_t total = 0;
    for (std::int64_t n : sum.by_status) total += n;
    if (total != sum.evaluated || sum.by_status[0] != sum.valid) __builtin_trap();
    if (static_cast<std::int64_t>(sum.top.size()) != std::min<std::int64_t>(s.red.top_k, sum.valid)) __builtin_trap();
  } catch (const kb::InputError& e) {
    if (std::getenv("KB_FUZZ_SHOW")) std::fprintf(stderr, "refused: %s\n", e.what());  // KB_FUZZ_SHOW=1: why
  }
  return 0;
}
