// Space files: every shipped space runs (the GEMM design space on a reduced size), a space
// file gives the same sweep as its flags, and every kind of mistake in one is one line
// with FILE:LINE:COL and exit 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "cli_run.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;

const std::string kSpaces = KB_TEST_DATA "/../../spaces";

std::string write(const std::string& name, const std::string& text) {
  const std::string p = fresh_dir(name);
  std::ofstream(p) << text;
  return p;
}

TEST(Spaces, EveryShippedSpaceRuns) {
  // The GEMM design space with one array shape, SRAM size and HBM rate: 8 shapes x 3
  // dataflows x 64 tilings.
  const std::string gemm = fresh_dir("kb_space_gemm.yaml");
  copy_edited(kSpaces + "/llama70b-gemm-design.yaml", gemm, "pe.matrix.rows: [16, 32, 64, 128]", "pe.matrix.rows: [32]");
  copy_edited(gemm, gemm, "pe.matrix.cols: [16, 32, 64, 128]", "pe.matrix.cols: [32]");
  copy_edited(gemm, gemm, "pe.sram_kib: [512, 1024, 2048, 4096]", "pe.sram_kib: [2048]");
  copy_edited(gemm, gemm, "cube.hbm.bandwidth_gbps: [410, 819, 1638]", "cube.hbm.bandwidth_gbps: [819]");
  copy_edited(gemm, gemm, "topology: ../topologies/default.yaml", "topology: " + kTopo + "/default.yaml");
  const json g = run_json("sweep --space '" + gemm + "' --backend omp --json");
  EXPECT_EQ(g["space"]["size"], 8 * 3 * 64);
  EXPECT_EQ(g["best_per_group"].size(), 8u);
  EXPECT_EQ(g["best_per_group"][0]["best"]["case"], "decode-qkv");
  EXPECT_EQ(g["recheck"]["checked"].size(), 5u);
  EXPECT_EQ(g["pareto"]["cost"], "sram");
  const json a = run_json("sweep --space '" + kSpaces + "/allreduce-best-per-size.yaml' --backend omp --json");
  EXPECT_EQ(a["space"]["size"], 11 * 2 * 5 * 2 * 3);  // 1 KiB to 1 GiB by 4
  EXPECT_EQ(a["best_per_group"].size(), 22u);
  EXPECT_EQ(a["recheck"]["ok"], true);
  // The OpenMP backend evaluates every config in one stage: none deferred.
  EXPECT_EQ(a["schema_version"], "3.0.0");
  EXPECT_EQ(a["backend"], json({{"name", "omp"}, {"deferred", 0}, {"on_host", 0}}));
  const json d = run_json("sweep --space '" + kSpaces + "/decode-sharding-crossover.yaml' --backend omp --json");
  EXPECT_EQ(d["space"]["size"], 4 * 11 * 7);
  EXPECT_EQ(d["best_per_group"].size(), 77u);
  EXPECT_EQ(d["best_per_group"][0]["best"]["case"], 4);  // S_kv 1K, batch 1
}

TEST(Spaces, AFileIsTheSameSweepAsItsFlags) {
  const std::string f = write("kb_space_same.yaml",
                              "family: gemm\naxes:\n  m: [32, 2048]\n  n: \"1024:4096:*2\"\n  k: 8192\n  tile_m: [32, 128]\n"
                              "  pe.matrix.dataflow: [os, ws]\ngroup: [m, n]\nobjectives:\n  pareto: hbm\n"
                              "reductions:\n  top: 3\n  histogram: false\n  recheck: 2\n");
  json file = run_json("sweep gemm --space '" + f + "' --backend omp --json");
  json flags = run_json("sweep gemm --m 32,2048 --n 1024:4096:*2 --k 8192 --tile-m 32,128 --dataflow os,ws --group m,n"
                        " --pareto hbm --top 3 --no-histogram --recheck 2 --backend omp --json");
  for (json* j : {&file, &flags}) j->erase("timing");
  file["space"].erase("axes");  // a topology path and its short name
  flags["space"].erase("axes");
  EXPECT_EQ(file["best_per_group"], flags["best_per_group"]);
  EXPECT_EQ(file["top"], flags["top"]);
  EXPECT_EQ(file["pareto"], flags["pareto"]);
  EXPECT_EQ(file["latency_checksum"], flags["latency_checksum"]);
  EXPECT_FALSE(file.contains("histogram"));
}

TEST(Spaces, MistakesNameTheirLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"family: gemm\naxes:\n  m: [32, 0]\n  n: 1024\n  k: 1024\n", ":3:6: axes.m: --m 32,0: item '0': 0 is outside"},
      {"family: gemm\naxes:\n  mm: [32]\n", ":3:3: mm: not an axis of gemm"},
      {"family: nope\n", ":1:9: family: 'nope' is not a workload family"},
      {"axes:\n  m: 1\n", ":1:1: family: required field is missing"},
      {"family: gemm\naxes:\n  m: 32\n  n: 64\n  k: 64\n  pe.matrix.rows: [0]\n", ":6:19: axes.pe.matrix.rows:"},
      {"family: gemm\naxes:\n  m: 32\n  n: 64\n  k: 64\ngroup: [q]\n", ":6:8: group: --group q: 'q' is not an axis"},
      {"family: gemm\nextra: 1\n", ":2:1: extra: unknown key"},
      {"family: gemm\naxes: [\n", ": (document): not valid YAML"},
      {"family: gemm\naxes:\n  m: 32\n  n: 64\n  k: 64\nreductions:\n  top: 5000\n", ":7:8: reductions.top: must be <= 1024"},
      {"family: gemm\naxes:\n  m: 32\n  n: 64\n  k: 64\nobjectives:\n  pareto: speed\n", ":7:11: objectives.pareto: 'speed'"},
      {"family: gemm\naxes:\n  m: 32\n  n: 64\n  k: 64\nreductions:\n  histogram: maybe\n", "reductions.histogram: expected true or false"},
      {"family: gemm\naxes:\n  m: 32\n  n: 64\n  m: 64\n", "axes.m: given twice"},
      {"family: gemm\nzip:\n  - names: [m, n, k]\n    tuples: [[1, 2]]\n  \n", "zip[0]"},
      {"", ":1:1: (document): empty file"},
  };
  int i = 0;
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text);
    const std::string f = write("kb_space_bad" + std::to_string(i++) + ".yaml", text);
    const Result r = run("sweep --space '" + f + "' --backend omp");
    expect_input_error(r, error);
    EXPECT_EQ(r.err.rfind("error: " + f + ":", 0), 0u) << r.err;  // FILE:LINE:COL first
  }
  const std::string ok = write("kb_space_ok.yaml", "family: gemm\naxes:\n  m: 32\n  n: 64\n  k: 64\n");
  expect_input_error(run("sweep allreduce --space '" + ok + "'"), "the file is a gemm space, not collective");
  expect_input_error(run("sweep gemm --space '" + ok + "' --m 8"), "--m cannot be given too");
  expect_input_error(run("sweep --space '" + fresh_dir("kb_no_such_space.yaml") + "'"), "kb_no_such_space.yaml");
}

TEST(Spaces, PlotDrawsASweep) {
  const std::string dir = fresh_dir("kb_plot_sweep");
  const Result r = run("sweep --space '" + kSpaces + "/decode-sharding-crossover.yaml' --backend omp --recheck 0 --out '" +
                       dir + "/crossover.json'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ofstream(dir + "/bad.json") << "{\"schema\": \"kernbench-gpu/gemm-sweep\", \"schema_version\": \"1.0.0\"}";
  if (!have_matplotlib()) GTEST_SKIP() << "figures not checked: no Python with matplotlib here (tools/setup.sh installs it)";
  const Result p = run("plot --sweep '" + dir + "/crossover.json'");
  ASSERT_EQ(p.code, 0) << p.err;
  for (const char* f : {"sweep_pareto.png", "sweep_histogram.png", "sweep_best.png"})
    EXPECT_GT(fs::file_size(fs::path(dir) / f), 1000u) << f;
  expect_input_error(run("plot --sweep '" + dir + "/bad.json' --out '" + dir + "/o'"), "expected \"kernbench-gpu/FAMILY-space-sweep\"");
  EXPECT_FALSE(fs::exists(dir + "/o/sweep_best.png"));
  expect_input_error(run("plot --sweep '" + dir + "/none.json'"), "none.json");
  expect_input_error(run("plot"), "give --bench NAME or --sweep FILE");
}

}  // namespace
