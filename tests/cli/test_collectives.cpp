// The collective family (also named allreduce) through the command line: eval's figures
// and engines for every op, data mode, sweep, the milestone bench (numbers as committed,
// parity, the direct launch, figures, --fast and plot), and invalid requests as one line
// with exit 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "cli_run.h"
#include "device/models/collective/collective.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;


TEST(Collectives, EvalJsonHasEveryField) {
  const std::string trace = fresh_dir("kb_ar_trace.json");
  const json j = run_json("eval allreduce --bytes 65536 --level cube --algo ring --ranks 4 --buffer hbm --chunks 2"
                          " --engine both --json --trace '" + trace + "'");
  for (const char* f : {"latency_ps", "analytical_ps", "algbw_gbps", "busbw_gbps", "link_bytes_pe", "link_bytes_cube",
                        "link_bytes_sip", "copies_pe", "copies_cube", "copies_sip", "hbm_read_bytes", "hbm_write_bytes"})
    EXPECT_TRUE(j.contains(f)) << f;
  EXPECT_EQ(j["parity"], true);
  EXPECT_EQ(j["reference"]["latency_ps"], j["batched"]["latency_ps"]);
  EXPECT_GT(j["link_bytes_cube"].get<std::int64_t>(), 0);
  EXPECT_EQ(j["link_bytes_sip"], 0);
  EXPECT_GT(j["hbm_read_bytes"].get<std::int64_t>(), j["hbm_write_bytes"].get<std::int64_t>());  // reductions read two operands
  const double algbw = 65536.0 / j["latency_ps"].get<double>() * 1000.0;
  EXPECT_NEAR(j["algbw_gbps"].get<double>(), algbw, 1e-9 * algbw);
  EXPECT_NEAR(j["busbw_gbps"].get<double>(), algbw * 2 * 3 / 4, 1e-9 * algbw);
  std::ifstream in(trace);
  EXPECT_GT(json::parse(in)["traceEvents"].size(), 100u);
}

TEST(Collectives, EvalEveryLevelAndAlgorithmBothEngines) {
  for (const char* level : {"pe", "cube"})
    for (const char* algo : kb::kCollAlgoNames)
      for (const char* op : kb::kCollOpNames) {
        SCOPED_TRACE(std::string(level) + " " + algo + " " + op);
        const std::string cmd = std::string("eval collective --bytes 4096 --level ") + level + " --algo " + algo +
                                " --ranks 8 --buffer sram --op " + op;
        std::int64_t a = 0, o = 0;
        while (std::string(kb::kCollAlgoNames[a]) != algo) ++a;
        while (std::string(kb::kCollOpNames[o]) != op) ++o;
        if (!kb::coll_algo_runs(a, o)) {
          expect_input_error(run(cmd), std::string("algo: ") + op + " runs ");
          continue;
        }
        const json j = run_json(cmd + " --json");
        EXPECT_EQ(j["parity"], true);
        EXPECT_EQ(j["family"], "collective");
      }
  const json s = run_json("eval allreduce --bytes 4096 --level sip --algo hd --ranks 8 --buffer hbm --topology '" + kTopo +
                          "/ring8.yaml' --json");
  EXPECT_EQ(s["parity"], true);
  EXPECT_GT(s["link_bytes_sip"].get<std::int64_t>(), 0);
}

// The figure script draws each level and algorithm the library has, under the same names.
TEST(Collectives, ThePlotKnowsEveryLevelAndAlgorithm) {
  if (!have_matplotlib()) GTEST_SKIP() << "no python3 with matplotlib: the figure scripts cannot run";
  const Result r = run_shell("for p in python3 /usr/bin/python3; do $p -c 'import matplotlib' 2>/dev/null && exec $p -c "
                             "\"import sys; sys.path.insert(0, '" + kRoot + "/tools/plot'); import plot_ccl; "
                             "print(','.join(plot_ccl.LEVELS) + ';' + ','.join(plot_ccl.ALGOS))\"; done");
  std::string want;
  for (const char* l : kb::kCollLevelNames) want += std::string(want.empty() ? "" : ",") + l;
  want += ";";
  for (std::size_t i = 0; i < std::size(kb::kCollAlgoNames); ++i) want += std::string(i ? "," : "") + kb::kCollAlgoNames[i];
  EXPECT_EQ(r.out, want + "\n") << r.err;
}

TEST(Collectives, EvalInvalidRequests) {
  const std::string base = "eval allreduce --bytes 4096 --buffer sram ";
  expect_input_error(run(base + "--level cube --algo hd --ranks 6"), "hd needs a power-of-two number of ranks; 6 is not");
  expect_input_error(run(base + "--level cube --algo mesh2d --ranks 6"), "mesh2d needs the ranks to fill whole rows of 4");
  expect_input_error(run(base + "--level cube --algo ring --ranks 9"), "ranks: 9 is outside 2..8 for level cube");
  expect_input_error(run(base + "--level sip --algo ring --ranks 2"), "outside 2..1 for level sip");
  expect_input_error(run("eval allreduce --bytes 4194304 --buffer sram --level pe --algo ring --ranks 8"),
                     "bytes of SRAM per PE, which has 2097152");
  expect_input_error(run(base + "--level cube --algo ring --ranks 8 --chunks 64"), "the batched model holds 1024 ops");
  expect_input_error(run(base + "--level cube --algo magic --ranks 8"), "--algo");
  expect_input_error(run(base + "--level cube --algo ring"), "--ranks is required");
  expect_input_error(run("eval allreduce --bytes 4097 --buffer sram --level cube --algo ring --ranks 8"), "bytes: 4097 must be even");
  expect_input_error(run(base + "--level pe --algo ring --ranks 8 --channels 2"),
                     "channels: 2 channels do not fit level pe (channels run at the cube and sip levels)");
  expect_input_error(run(base + "--level cube --algo ring --ranks 8 --channels 9"), "up to the 8 PEs of a cube");
  expect_input_error(run(base + "--level cube --algo ring --ranks 8 --channels 17"), "channels: 17");
  expect_input_error(run("eval allreduce --bytes 96 --buffer sram --level cube --algo ring --ranks 8 --channels 8"),
                     "at least 64 f16 values (ranks x channels)");
}

// Channels: copies of the collective side by side over their own PEs, sharing the links; both
// engines agree, data mode holds, auto reports the count it chose, and a sweep takes them.
TEST(Collectives, EvalChannels) {
  const std::string ring8 = " --topology " + std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml";
  const json one = run_json("eval collective --bytes 4194304 --level sip --algo ring --ranks 8 --buffer hbm --json" + ring8);
  const json four = run_json("eval collective --bytes 4194304 --level sip --algo ring --ranks 8 --buffer hbm --channels 4"
                             " --json" + ring8);
  const json data = run_json("eval collective --bytes 1048576 --level sip --algo ring --ranks 8 --buffer hbm --channels 4"
                             " --data --json" + ring8);
  EXPECT_EQ(data["parity"], true);
  EXPECT_EQ(data["data"]["ok"], true);
  EXPECT_EQ(four["parity"], true);
  EXPECT_LT(four["latency_ps"].get<std::int64_t>(), one["latency_ps"].get<std::int64_t>());
  const json a = run_json("eval collective --bytes 4194304 --level sip --algo ring --ranks 8 --buffer hbm --channels auto"
                          " --engine batched --json" + ring8);
  EXPECT_GT(a["config"]["channels"].get<std::int64_t>(), 1) << a.dump();
  EXPECT_LE(a["latency_ps"].get<std::int64_t>(), four["latency_ps"].get<std::int64_t>());
  const json s = run_json("sweep collective --bytes 4194304 --level sip,cube --algo ring --ranks 8 --buffer hbm"
                          " --channels 1,2,auto --backend omp --json" + ring8);
  EXPECT_EQ(s["space"]["size"], 6);
  EXPECT_EQ(s["valid"], 6) << s.dump();
  // A whole model's tensor-parallel allreduces on channels: both engines agree, and auto is
  // no slower than one channel.
  const std::string llm = "eval llm --model llama-3.1-8b --batch 8 --context 1024 --tp 8 --tp-level sip --pp 1"
                          " --tp-algo ring --attention-case 1 --layers 1 --json" + ring8;
  const json l1 = run_json(llm + " --engine batched");
  const json la = run_json(llm + " --tp-channels auto");
  EXPECT_EQ(la["parity"], true);
  EXPECT_LT(la["allreduce_ps"].get<std::int64_t>(), l1["allreduce_ps"].get<std::int64_t>());
  expect_input_error(run("eval llm --tp 4 --tp-level pe --pp 1 --tp-channels 2 --engine batched"),
                     "tp-channels: 2 channels do not fit tp-level pe");
}

// The new ops: both engines, busbw as nccl-tests counts it, the analytical form, and data
// mode against float64; allreduce is still a name of the family.
TEST(Collectives, EvalTheOpsOfTheirOwn) {
  for (const char* op : {"allgather", "reducescatter", "alltoall"})
    for (const char* buffer : {"sram", "hbm"}) {
      SCOPED_TRACE(std::string(op) + " " + buffer);
      const std::string algo = std::string(op) == "alltoall" ? "pairwise" : "ring";
      const json j = run_json(std::string("eval collective --op ") + op + " --algo " + algo + " --bytes 65536 --level cube"
                              " --ranks 4 --buffer " + buffer + " --chunks 2 --data --seed 5 --json");
      EXPECT_EQ(j["parity"], true);
      EXPECT_EQ(j["data"]["ok"], true);
      EXPECT_EQ(j["data"]["wrong"], 0);
      EXPECT_GT(j["data"]["values"].get<std::int64_t>(), 0);
      const double algbw = 65536.0 / j["latency_ps"].get<double>() * 1000.0;
      EXPECT_NEAR(j["busbw_gbps"].get<double>(), algbw * 3 / 4, 1e-9 * algbw);
      EXPECT_GT(j["analytical_ps"].get<std::int64_t>(), 0);
      EXPECT_EQ(j["vector_ops"].get<std::int64_t>() > 0, std::string(op) == "reducescatter");
    }
  const json a = run_json("eval allreduce --op alltoall --algo pairwise --bytes 4096 --level pe --ranks 8 --buffer sram --json");
  EXPECT_EQ(a["family"], "collective");
  EXPECT_EQ(a["parity"], true);
  const json s = run_json("sweep allreduce --op allgather,reducescatter --algo ring,hd --bytes 4096,65536 --level pe,cube"
                          " --ranks 8 --buffer sram --backend omp --json");
  EXPECT_EQ(s["space"]["size"], 16);
  expect_input_error(run("eval collective --op alltoall --algo pairwise --bytes 4098 --level pe --ranks 8 --buffer sram"),
                     "must split into 1 chunk(s) of 8 equal pieces");
  // hier: over every PE of the launch at once (two cubes here), each transfer on its own route.
  const json h = run_json("eval collective --op alltoall --algo pairwise --bytes 4096 --level hier --ranks 16 --buffer sram --data --json");
  EXPECT_EQ(h["parity"], true);
  EXPECT_EQ(h["data"]["ok"], true);
  EXPECT_GT(h["link_bytes_cube"].get<std::int64_t>(), 0);
  expect_input_error(run("eval collective --op allgather --algo ring --bytes 4096 --level hier --ranks 12 --buffer sram"),
                     "ranks in all");
  expect_input_error(run("eval collective --op allreduce --algo pairwise --bytes 4096 --level pe --ranks 8 --buffer sram"),
                     "allreduce runs by ring, hd, tree, mesh2d or root, not pairwise");
}

TEST(Collectives, SweepFindsTheBestAlgorithm) {
  const json j = run_json("sweep allreduce --bytes 1024,1048576 --level cube --algo ring,hd,tree,mesh2d,root --ranks 8"
                          " --buffer sram,hbm --chunks 1,2 --backend omp --json");
  EXPECT_EQ(j["space"]["size"], 40);
  EXPECT_EQ(j["best_per_group"].size(), 2u);
  for (const auto& g : j["best_per_group"]) EXPECT_TRUE(g["best"].contains("algo"));
}

TEST(Collectives, MilestoneGivesTheCommittedNumbers) {
  const std::string out = fresh_dir("kb_ccl");
  const Result r = run("run --bench milestone-1h-ccl --backend omp --out '" + out + "'");
  const bool plots = have_matplotlib();
  if (plots) {
    ASSERT_EQ(r.code, 0) << r.err;
  }
  EXPECT_NE(r.out.find("parity: 1142/1142"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("points per op: allreduce 891 allgather 102 reducescatter 98 alltoall 51"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("direct launch: 54/54"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best algorithm per level and size range"), std::string::npos) << r.out;
  const json doc = load(out + "/allreduce_sweep.json");
  EXPECT_EQ(doc["schema"], "kernbench-gpu/allreduce-sweep");
  EXPECT_EQ(doc["parity"]["ok"], true);
  EXPECT_EQ(doc["direct_launch"]["ok"], true);
  const json want = load(kRoot + "/docs/diagrams/ccl/allreduce_sweep.json");
  ASSERT_EQ(doc["configs"].size(), want["configs"].size());
  for (std::size_t i = 0; i < want["configs"].size(); ++i)
    for (const auto& [key, value] : want["configs"][i].items())
      EXPECT_EQ(doc["configs"][i][key], value) << i << " " << key;
  EXPECT_EQ(doc["invalid"], want["invalid"]);
  EXPECT_EQ(doc["best"], want["best"]);
  EXPECT_TRUE(fs::exists(out + "/allreduce_sweep.csv"));
  if (!plots) GTEST_SKIP() << "figures not checked: no Python with matplotlib here (tools/setup.sh installs it)";
  for (const char* f : {"ccl_latency_vs_size.png", "ccl_busbw.png", "ccl_hbm_vs_sram.png", "ccl_engines.png",
                        "ccl_energy_per_byte.png", "ccl_energy_hbm_vs_sram.png", "ccl_ops_busbw.png", "ccl_topology_default.png",
                        "ccl_topology_ring8.png"})
    EXPECT_GT(fs::file_size(fs::path(out) / f), 1000u) << f;
  const std::string again = fresh_dir("kb_ccl_replot");
  const Result p = run("plot --bench milestone-1h-ccl --in '" + out + "' --out '" + again + "'");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(fs::exists(fs::path(again) / "ccl_engines.png"));
  const std::string fast = fresh_dir("kb_ccl_fast");
  const Result f = run("run --bench milestone-1h-ccl --fast --out '" + fast + "'");
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_TRUE(fs::exists(fs::path(fast) / "ccl_latency_vs_size.png"));
}

}  // namespace
