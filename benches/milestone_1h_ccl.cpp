// milestone-1h-ccl: allreduce over PEs of a cube, cubes of a SIP, SIPs of a ring, and every PE
// of 2 or 8 cubes level by level (hier); every algorithm, 2 to 8 ranks per level, SRAM and HBM
// buffers, 1 KiB to 1 GiB; then allgather, reducescatter and alltoall over 8 ranks of each
// single level by every algorithm that runs them; each point on both engines
// (parity), against the alpha-beta-gamma model, with the direct-launch ring's timeline
// checked against the library's, the best algorithm per level and size, and the topologies
// drawn.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>

#include "host/bench/registry.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/common/parallel.h"
#include "host/common/table.h"
#include "host/families/collective/allreduce_figures.h"
#include "host/families/family.h"
#include "host/families/collective/allreduce_program.h"
#include "host/study/bench_writer.h"
#include "host/study/study.h"
#include "host/topology/diagram.h"
#include "host/topology/fields.h"
#include "host/topology/load.h"
#include "milestone_1h_ccl.h"

namespace kb {

std::vector<std::int64_t> ccl_milestone_sizes() {
  std::vector<std::int64_t> s;
  for (std::int64_t b = INT64_C(1) << 10; b <= INT64_C(1) << 30; b *= 4) s.push_back(b);
  return s;
}

std::vector<AllreduceConfig> ccl_milestone_configs(const TopologySpec& topo, const TopologySpec& ring,
                                                   std::vector<AllreduceConfig>* invalid) {
  std::vector<AllreduceConfig> out;
  auto add = [&](AllreduceConfig c) {
    if (allreduce_check(c) == kArOk) out.push_back(c);
    else if (invalid) invalid->push_back(c);
  };
  const auto allreduce = static_cast<std::int64_t>(CollOp::allreduce);
  for (std::int64_t level = 0; level < kCollLevels; ++level)
    for (std::int64_t algo = 0; algo < kCollAlgos; ++algo)
      for (std::int64_t ranks : level == static_cast<std::int64_t>(CollLevel::hier) ? std::vector<std::int64_t>{16, 64}
                                                                                    : std::vector<std::int64_t>{2, 4, 8})
        for (std::int64_t buffer = 0; buffer < kCollBuffers; ++buffer)
          for (std::int64_t bytes : ccl_milestone_sizes()) {
            AllreduceConfig c{};
            c.hw = (level == static_cast<std::int64_t>(CollLevel::sip) ? ring : topo).hw();
            c.bytes = bytes, c.level = level, c.algo = algo, c.ranks = ranks, c.buffer = buffer;
            c.op = allreduce;
            c.chunks = 1;
            if (ranks > coll_level_size(c.hw, level) || !coll_algo_runs(algo, allreduce)) continue;
            add(c);
          }
  // The single-level ops of their own, after the allreduce's points: 8 ranks of each level,
  // every algorithm that runs the op, both buffers, every size.
  for (const CollOp op : {CollOp::allgather, CollOp::reducescatter, CollOp::alltoall})
    for (std::int64_t level = 0; level < static_cast<std::int64_t>(CollLevel::hier); ++level)
      for (std::int64_t algo = 0; algo < kCollAlgos; ++algo)
        for (std::int64_t buffer = 0; buffer < kCollBuffers; ++buffer)
          for (std::int64_t bytes : ccl_milestone_sizes()) {
            AllreduceConfig c{};
            c.hw = (level == static_cast<std::int64_t>(CollLevel::sip) ? ring : topo).hw();
            c.bytes = bytes, c.level = level, c.algo = algo, c.ranks = 8, c.buffer = buffer;
            c.op = static_cast<std::int64_t>(op);
            c.chunks = 1;
            if (c.ranks > coll_level_size(c.hw, level) || !coll_algo_runs(algo, c.op)) continue;
            add(c);
          }
  return out;
}

namespace {

std::string size_name(std::int64_t b) {
  if (b >= INT64_C(1) << 30) return std::to_string(b >> 30) + " GiB";
  if (b >= INT64_C(1) << 20) return std::to_string(b >> 20) + " MiB";
  return std::to_string(b >> 10) + " KiB";
}

void run_ccl_milestone(BenchContext& ctx) {
  std::ostream& out = *ctx.out;
  const auto t_start = std::chrono::steady_clock::now();
  const Family& fam = family("collective");
  const TopologySpec& topo = ctx.topology;
  const TopologySpec ring = load_topology(data_dir() + "/topologies/ring8.yaml");
  std::vector<AllreduceConfig> invalid;
  const std::vector<AllreduceConfig> configs = ccl_milestone_configs(topo, ring, &invalid);
  Study study(fam, resolve_backend(ctx.backend_request));
  for (const AllreduceConfig& c : configs) study.add_config(c);
  study.run(Rejected::internal_error);
  study.require_parity();
  // The direct-launch ring against the library's, op for op.
  std::vector<AllreduceConfig> rings;
  for (const AllreduceConfig& c : configs)
    if (c.algo == static_cast<std::int64_t>(CollAlgo::ring) && c.buffer == static_cast<std::int64_t>(CollBuffer::sram) &&
        c.level != static_cast<std::int64_t>(CollLevel::hier) && c.op == static_cast<std::int64_t>(CollOp::allreduce))
      rings.push_back(c);
  std::vector<char> same(rings.size(), 0);
  parallel_for(rings.size(), [&](std::size_t i) {
    same[i] = run_ring_direct(rings[i], false).timeline == run_collective(rings[i], false).timeline;
  });
  const std::size_t direct_checked = rings.size();
  const std::size_t direct_same = static_cast<std::size_t>(std::count(same.begin(), same.end(), 1));
  const Table table = study.table({}, true);
  auto latency = [&](std::size_t i) { return study.batched_as<AllreduceResult>(i).latency_ps; };

  // The best (algorithm, buffer) per level and size at the most ranks, as size ranges.
  nlohmann::json best = nlohmann::json::array();
  Table best_table({{"level", "", ColType::text}, {"ranks", "", ColType::integer}, {"sizes", "", ColType::text},
                    {"algo", "", ColType::text}, {"buffer", "", ColType::text}});
  for (std::int64_t level = 0; level < kCollLevels; ++level) {
    std::map<std::int64_t, std::size_t> winner;  // bytes -> config index
    std::int64_t most = 0;
    const auto allreduce = static_cast<std::int64_t>(CollOp::allreduce);
    for (const AllreduceConfig& c : configs)
      if (c.level == level && c.op == allreduce) most = std::max(most, c.ranks);
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const AllreduceConfig& c = configs[i];
      if (c.level != level || c.ranks != most || c.op != allreduce) continue;
      auto it = winner.find(c.bytes);
      if (it == winner.end() || latency(i) < latency(it->second)) winner[c.bytes] = i;
    }
    const std::string lname = to_string(static_cast<CollLevel>(level));
    for (auto it = winner.begin(); it != winner.end();) {
      const AllreduceConfig& w = configs[it->second];
      auto end = it;
      std::int64_t last = it->first;
      while (end != winner.end() && configs[end->second].algo == w.algo && configs[end->second].buffer == w.buffer)
        last = end->first, ++end;
      const std::string algo = to_string(static_cast<CollAlgo>(w.algo)), buffer = w.buffer ? "hbm" : "sram";
      const std::string sizes = it->first == last ? size_name(last) : size_name(it->first) + " - " + size_name(last);
      best.push_back({{"level", lname}, {"ranks", most}, {"from_bytes", it->first}, {"to_bytes", last}, {"algo", algo},
                      {"buffer", buffer}});
      best_table.add({lname, most, sizes, algo, buffer});
      it = end;
    }
  }
  out << "best algorithm per level and size range (allreduce, the most ranks):\n" << best_table.text("  ");

  nlohmann::json doc = bench_document(ctx, study);
  doc["sip_level_topology"] = topology_record(ring);
  doc["sizes"] = ccl_milestone_sizes();
  doc["direct_launch"] = {{"checked", direct_checked}, {"identical", direct_same}, {"ok", direct_checked == direct_same}};
  doc["best"] = best;
  doc["analytical"] = "Thakur, Rabenseifner and Gropp 2005 (docs/model.md section 11)";
  doc["configs"] = table.json();
  nlohmann::json inv = nlohmann::json::array();
  for (const AllreduceConfig& c : invalid) {
    nlohmann::json j = nlohmann::json::object();
    const auto names = config_column_names(fam);
    const auto values = config_values(fam, &c);
    for (std::size_t k = 0; k < names.size(); ++k) j[names[k]] = values[k];
    j["status"] = fam.status_name(allreduce_check(c));
    inv.push_back(j);
  }
  doc["invalid"] = inv;
  if (direct_same != direct_checked)
    throw InternalError("the direct-launch ring's timeline differs from the library ring's", __FILE__, __LINE__);
  write_topology_diagram(topo, ctx.out_dir + "/ccl_topology_" + topo.name + ".png");
  write_topology_diagram(ring, ctx.out_dir + "/ccl_topology_ring8.png");
  out << study.parity_line("points") << "; " << invalid.size() << " points do not fit (listed under \"invalid\")\n";
  out << "direct launch: " << direct_same << "/" << direct_checked
      << " ring allreduce points with the library's timeline, op for op\n";
  {
    std::map<std::int64_t, std::size_t> per_op;
    for (const AllreduceConfig& c : configs) ++per_op[c.op];
    out << "points per op:";
    for (const auto& [op, n] : per_op) out << " " << kCollOpNames[op] << " " << n;
    out << "\n";
  }
  out << "time: batched " << study.batched_seconds() * 1e3 << " ms for " << configs.size() << " points; reference "
      << (configs.empty() ? 0.0 : study.reference_seconds() * 1e3 / static_cast<double>(configs.size())) << " ms per point\n";
  write_bench(ctx, doc, table);
  out << "wrote " << bench_json_path(ctx) << ", " << ctx.bench->csv() << ", 2 topology diagrams and 7 figures to " << ctx.out_dir
      << " in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count() << " s\n";
}

}  // namespace

KB_BENCH([] {
  BenchInfo b;
  b.name = "milestone-1h-ccl";
  b.description =
      "allreduce: every algorithm and level (pe, cube, sip, hier), 2-64 ranks, SRAM and HBM buffers, 1 KiB - 1 GiB; "
      "allgather, reducescatter and alltoall on 8 ranks of each level; both engines, against the alpha-beta-gamma model";
  b.axes = {"op", "level", "algo", "ranks", "buffer", "bytes"};
  b.domain = "ccl";
  b.fn = run_ccl_milestone;
  b.json = "allreduce_sweep.json";
  b.schema = "kernbench-gpu/allreduce-sweep";
  b.schema_version = "1.2.0";
  b.plot = "plot_ccl.py";
  return b;
}());

}  // namespace kb
