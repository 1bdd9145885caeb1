// Sweeps past one machine: shards of a space merged equal one run over it (every count,
// best, top config, Pareto point, histogram bin and checksum), for every family; shards of
// different sweeps, or a missing or repeated shard, are one-line errors; 2 MPI ranks give
// the single process's output; the fastest configs are re-checked on the reference engine;
// progress lines when stderr is a file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "cli_run.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;

// Everything but the wall time and the record of how it was split.
void expect_same_output(json a, json b) {
  for (json* j : {&a, &b}) {
    j->erase("timing");
    j->erase("merged");
  }
  for (auto it = a.begin(); it != a.end(); ++it) EXPECT_EQ(it.value(), b[it.key()]) << it.key();
  EXPECT_EQ(a.size(), b.size());
}

#define KB_GEMM_SPACE                                                                                              \
  "sweep gemm --m 8,32,2048 --n 1024,10240 --k 8192 --tile-m 8,32,128 --tile-n 64,128,256 --tile-k 128,512 --pes 1:8:*2" \
  " --cubes 1,2,8 --pareto pes --backend omp --chunk 100"
const char* kGemm = KB_GEMM_SPACE " --top 20";

TEST(Shards, MergedShardsEqualOneRunForEveryFamily) {
  const std::string spaces[] = {
      kGemm,
      "sweep allreduce --bytes 1024,65536,1048576 --level pe,cube --algo ring,hd,tree,root --ranks 2,4,8 --buffer sram,hbm"
      " --top 7 --pareto link_bytes --backend omp --chunk 50",
      "sweep decode --case 1:4 --s-kv 4096,131072 --batch 1,4,16 --hbm-gbps 410,819 --top 5 --pareto pes --backend omp"
      " --chunk 7",
      // A field no axis holds (each stage's layers) travels with the shards' request.
      "sweep llm --topology '" + kTopo + "/ring8.yaml' --pp-layers 20,12 --tp 1,2 --tp-level sip --batch 1,4 --tp-algo ring,tree"
      " --attention-case 1,2 --layers 1 --top 5 --recheck 2 --backend omp --chunk 3"};
  int which = 0;
  for (const std::string& space : spaces) {
    SCOPED_TRACE(space);
    const json whole = run_json(space + " --json");
    ASSERT_FALSE(whole.is_null());
    for (int n : {1, 3, 4}) {
      std::string files;
      for (int i = 0; i < n; ++i) {
        const std::string f = fresh_dir("kb_shard_" + std::to_string(which) + "_" + std::to_string(i) + "of" + std::to_string(n) + ".json");
        const Result r = run(space + " --shard " + std::to_string(i) + "/" + std::to_string(n) + " --out '" + f + "'");
        ASSERT_EQ(r.code, 0) << r.err;
        EXPECT_NE(r.out.find("shard " + std::to_string(i) + "/" + std::to_string(n)), std::string::npos) << r.out;
        files = " '" + f + "'" + files;  // any order
      }
      const json merged = run_json("merge" + files + " --json");
      expect_same_output(whole, merged);
      EXPECT_EQ(merged["merged"]["shards"].size(), static_cast<std::size_t>(n));
    }
    ++which;
  }
}

TEST(Shards, MergeRefusesWhatIsNotOneSweep) {
  const std::string dir = fresh_dir("kb_shards_bad");
  fs::create_directories(dir);
  auto shard = [&](const std::string& extra, const std::string& name) {
    const std::string f = dir + "/" + name;
    EXPECT_EQ(run(std::string(kGemm) + extra + " --out '" + f + "'").code, 0);
    return " '" + f + "'";
  };
  const std::string a0 = shard(" --shard 0/3", "a0.json"), a1 = shard(" --shard 1/3", "a1.json"),
                    a2 = shard(" --shard 2/3", "a2.json");
  const std::string other = shard(" --shard 1/3 --buffers 1", "b1.json");
  const std::string topo = shard(" --shard 1/3 --set cube.hbm.bandwidth_gbps=1600", "c1.json");
  const std::string split = shard(" --shard 1/4", "d1.json");
  expect_input_error(run("merge" + a0 + other + a2), "a shard of another sweep than");
  expect_input_error(run("merge" + a0 + other + a2), "request.axes");
  expect_input_error(run("merge" + a0 + topo + a2), "topology");
  expect_input_error(run("merge" + a0 + split + a2), "count");
  // Two llm sweeps that differ only in a field no axis holds (--pp-layers) are two sweeps.
  const std::string llm = "sweep llm --topology '" + kTopo + "/ring8.yaml' --tp 1 --tp-level sip --batch 1,4 --tp-algo ring "
                          "--attention-case 1 --layers 1 --recheck 0";
  const std::string l0 = dir + "/l0.json", l1 = dir + "/l1.json";
  ASSERT_EQ(run(llm + " --pp-layers 20,12 --shard 0/2 --out '" + l0 + "'").code, 0);
  ASSERT_EQ(run(llm + " --pp-layers 16,16 --shard 1/2 --out '" + l1 + "'").code, 0);
  expect_input_error(run("merge '" + l0 + "' '" + l1 + "'"), "request.presets");
  expect_input_error(run("merge" + a0 + a2), "shard(s) 1 of 3 missing");
  expect_input_error(run("merge" + a0 + a1 + a1 + a2), "are both shard 1/3");
  const std::string whole = dir + "/whole.json";
  ASSERT_EQ(run(std::string(kGemm) + " --out '" + whole + "'").code, 0);
  expect_input_error(run("merge '" + whole + "'"), "not the output of a sweep's shard");
  expect_input_error(run("merge '" + dir + "/none.json'"), "none.json");
  expect_input_error(run(std::string(kGemm) + " --shard 3/3 --json"), "--shard 3/3: I:");
  expect_input_error(run(std::string(kGemm) + " --shard 1/3"), "give --out FILE or --json");
  const Result ok = run("merge" + a2 + a0 + a1);
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("best per group"), std::string::npos);
}

TEST(Shards, TwoMpiRanksGiveTheSingleProcessOutput) {
  const std::string mpiexec = KB_MPIEXEC;
  if (mpiexec.empty()) GTEST_SKIP() << "not run: this build has no MPI (tools/setup.sh installs Open MPI)";
  const json one = run_json(std::string(kGemm) + " --json");
  // Under the asan preset: Open MPI's plugins leak at exit, unloaded before LeakSanitizer
  // could name them; leaks of the program itself are checked by every other test.
  const std::string cmd = "ASAN_OPTIONS=detect_leaks=0 '" + mpiexec + "' --allow-run-as-root --oversubscribe -np 2 ";
  const std::string tag = ::testing::TempDir() + "/kb_mpi_" + std::to_string(::getpid());
  const int rc = std::system((cmd + "'" + KB_CLI_EXE + "' " + kGemm + " --json >'" + tag + ".out' 2>'" + tag + ".err'").c_str());
  ASSERT_EQ(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, 0);
  const json two = load(tag + ".out");  // one document: rank 0 speaks for the job
  expect_same_output(one, two);
  EXPECT_EQ(two["merged"]["mpi_ranks"], 2);
  EXPECT_EQ(two["merged"]["shards"].size(), 2u);
}

TEST(Shards, TheFastestConfigsAreRechecked) {
  const json j = run_json(std::string(kGemm) + " --recheck 4 --json");
  ASSERT_EQ(j["recheck"]["checked"].size(), 4u);
  for (const auto& c : j["recheck"]["checked"]) {
    EXPECT_EQ(c["latency_ps"], c["reference_latency_ps"]);
    EXPECT_EQ(c["identical"], true);
  }
  EXPECT_EQ(j["recheck"]["checked"][0]["index"], j["top"][0]["index"]);
  EXPECT_EQ(j["top"].size(), 20u);  // --top as asked, whatever the re-check needs
  const json none = run_json(KB_GEMM_SPACE " --recheck 0 --top 2 --json");
  EXPECT_FALSE(none.contains("recheck"));
  EXPECT_EQ(none["top"].size(), 2u);
  expect_input_error(run(std::string(kGemm) + " --recheck 2000"), "--recheck 2000");
}

TEST(Shards, ProgressLinesWhenStderrIsAFile) {
  const Result r = run("sweep gemm --m 8:4096:*2 --n 1024:16384:*2 --k 8192 --tile-m 8,32,128 --pes 1:8 --cubes 1:8"
                       " --backend omp --chunk 256 --progress-every 0.000001 --recheck 0");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("progress: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" configs/s, ETA "), std::string::npos) << r.err;
  const Result quiet = run("sweep gemm --m 8:4096:*2 --n 1024 --k 8192 --backend omp --chunk 4 --progress-every 0 --recheck 0");
  EXPECT_EQ(quiet.err, "");
}

TEST(Shards, ASpaceTooLongToWaitForIsRefusedFirst) {
  const std::string space = "sweep gemm --m 8:8192:*2 --n 1024:16384:*2 --k 1024:8192:*2 --tile-m 8,32,128 --tile-n 32:256:*2"
                            " --pes 1:8 --cubes 1:8 --buffers 1,2 --dataflow os,ws,is --backend omp --recheck 0 --top 0"
                            " --no-histogram";
  const Result r = run(space + " --max-hours 0.000001 --json");
  expect_input_error(r, "it would take about");
  EXPECT_NE(r.err.find("past --max-hours 1e-06"), std::string::npos) << r.err;
  const Result ok = run(space + " --chunk 1048576");
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("  estimate: about "), std::string::npos) << ok.out;
  expect_input_error(run(space + " --max-hours -1"), "--max-hours -1: expected a number >= 0");
}

// The estimate counts the rows the outputs will hold: a space of few configs but many groups
// takes its time in writing them, and is refused for that past --max-hours.
TEST(Shards, TheEstimateCountsTheRowsToWrite) {
  const std::string d = fresh_dir("kb_estimate_rows");
  fs::create_directories(d);
  const std::string space = "sweep gemm --m 1:8192 --n 64 --k 64 --group m --backend omp --recheck 0 ";
  const Result text = run(space + "--pareto none --csv '" + d + "/rows.csv'");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("  estimate: about "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("writing 8192 rows (about "), std::string::npos) << text.out;
  const Result both = run(space + "--pareto pes --json --out '" + d + "/rows.json' --csv '" + d + "/rows2.csv'");
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.err.find("writing 32768 rows (about "), std::string::npos) << both.err;  // 2 formats x (best + front)
  const Result refused = run(space + "--pareto none --csv '" + d + "/rows3.csv' --max-hours 0.0000001");
  expect_input_error(refused, "and 8192 rows to write, it would take about");
  EXPECT_FALSE(fs::exists(d + "/rows3.csv"));
  // The terminal alone shows at most 50 groups: nothing to estimate, nothing refused.
  const Result terminal = run(space + "--max-hours 0.0000001");
  ASSERT_EQ(terminal.code, 0) << terminal.err;
  EXPECT_EQ(terminal.out.find("estimate:"), std::string::npos) << terminal.out;
}

}  // namespace
