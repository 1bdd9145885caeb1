// The command line as users see it: exit codes, one-line errors, nothing written on error.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "cli_run.h"

namespace {

using namespace kb::clitest;

std::string tmp_yaml(const std::string& name, const std::string& text) {
  const std::string p = ::testing::TempDir() + "/" + name;
  std::ofstream(p) << text;
  return p;
}

TEST(Cli, HelpAndVersion) {
  EXPECT_EQ(run("--help").code, 0);
  const Result v = run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("kernbench-gpu 0."), std::string::npos);
  for (const char* sub : {"list", "run", "eval", "eval gemm", "sweep", "sweep gemm", "topo", "topo check", "topo show",
                          "plot"}) {
    const Result r = run(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
}

TEST(Cli, TopoShowAndCheck) {
  const Result r = run("topo show '" + kTopo + "/default.yaml'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("PEs                64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("196.6 TFLOP/s"), std::string::npos) << r.out;
  const Result j = run("topo show --json '" + kTopo + "/ring8.yaml' --set pe.clock_mhz=1000");
  ASSERT_EQ(j.code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["pes"], 512);
  EXPECT_EQ(doc["sips"], 8);
  EXPECT_DOUBLE_EQ(doc["pe_peak_fp16_tflops"].get<double>(), 2.048);
  // Area and static power: 8 SIPs of 8 cubes of 8 PEs (docs/topology.md), and what they give.
  const double pe = 1024 * 263 + 64 * 263 + 2 * 323450, cube = 8 * pe + 10450000;
  const double sip = 8 * cube + 20 * 379000 + 2 * 1760000;
  EXPECT_DOUBLE_EQ(doc["area_mm2"]["pe"].get<double>(), pe / 1e6);
  EXPECT_DOUBLE_EQ(doc["area_mm2"]["total"].get<double>(), 8 * sip / 1e6);
  EXPECT_NEAR(doc["peak_fp16_tflops_per_mm2"].get<double>(), 512 * 2.048 / (8 * sip / 1e6), 1e-12);
  EXPECT_DOUBLE_EQ(doc["static_power_w"].get<double>(), (512 * 11 + 64 * 384) / 1e3);
  EXPECT_NE(r.out.find("area               150.9 mm2 (1.303 TFLOP/s per mm2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("static power       3.78 W"), std::string::npos) << r.out;
  EXPECT_EQ(run("topo check '" + kTopo + "/tiny.yaml'").code, 0);
}

TEST(Cli, BadTopologyInputs) {
  expect_input_error(run("topo check /nonexistent.yaml"), "/nonexistent.yaml:1:1: (file): cannot open file");
  expect_input_error(run("topo check '" + tmp_yaml("notyaml.yaml", "a: [1,\n") + "'"), "not valid YAML");
  expect_input_error(run("topo show '" + kTopo + "/default.yaml' --set cube.hbm.bandwidth_gbps=abc"),
                     "--set cube.hbm.bandwidth_gbps=abc: cube.hbm.bandwidth_gbps: expected an integer (got 'abc')");
  expect_input_error(run("topo show '" + kTopo + "/default.yaml' --set cube.hbm.speed=1"),
                     "cube.hbm.speed: unknown topology field");
  expect_input_error(run("topo check '" + kTopo + "/default.yaml' --set cube.hbm.bandwidth_gbps=-3"),
                     "cube.hbm.bandwidth_gbps: must be > 0 (got -3)");
  expect_input_error(run("topo check '" + kTopo + "/default.yaml' --set sip.cube_rows=0"), "sip.cube_rows: must be > 0");
  expect_input_error(run("topo check '" + kTopo + "/default.yaml' --set cube.hbm.latency_ns=99999999999999"),
                     "must be <= 1000000000");
}

TEST(Cli, UnknownSubcommandAndBench) {
  expect_input_error(run("frobnicate"), "unknown subcommand 'frobnicate' (known: list, run, eval, sweep, merge, model, serve, topo, plot)");
  expect_input_error(run("topo frob x.yaml"), "unknown subcommand 'frob' (known: check, show, diagram)");
  expect_input_error(run("model frob"), "unknown subcommand 'frob' (known: list, show, place)");
  const std::string out = fresh_dir("kb_unknown_bench");
  expect_input_error(run("run --bench no-such-bench --out '" + out + "'"),
                     "--bench no-such-bench: unknown bench (known: milestone-1h-gemm");
  EXPECT_FALSE(fs::exists(out));
}

TEST(Cli, BadInputWritesNothing) {
  const std::string out = fresh_dir("kb_bad_topo");
  expect_input_error(run("run --bench milestone-1h-gemm --out '" + out + "' --set pe.sram_kib=abc"), "pe.sram_kib");
  EXPECT_FALSE(fs::exists(out));
  const std::string trace = fresh_dir("kb_trace_bad.json");
  expect_input_error(run("eval gemm --m 0 --n 4 --k 4 --trace '" + trace + "'"), "m, n, k");
  EXPECT_FALSE(fs::exists(trace));
}

TEST(Cli, List) {
  const Result r = run("list");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("milestone-1h-gemm"), std::string::npos);
  EXPECT_NE(r.out.find("[shape, variant]"), std::string::npos);
  EXPECT_NE(r.out.find("gemm                         one GEMM"), std::string::npos) << r.out;
}

TEST(Cli, EvalGemmJsonHasEveryField) {
  const std::string trace = fresh_dir("kb_trace.json");
  const Result r = run("eval gemm --m 300 --n 200 --k 500 --tile-m 64 --tile-n 64 --tile-k 128 --pes 4 --cubes 2 --json"
                       " --trace '" + trace + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* f : {"latency_ps", "mac_cycles", "mac_util", "hbm_read_bytes", "hbm_write_bytes", "roofline_ps", "engine"})
    EXPECT_TRUE(j.contains(f)) << f;
  EXPECT_EQ(j["engine"], "both");
  EXPECT_EQ(j["parity"], true);
  EXPECT_EQ(j["reference"]["latency_ps"], j["batched"]["latency_ps"]);
  EXPECT_GE(j["latency_ps"].get<std::int64_t>(), j["roofline_ps"].get<std::int64_t>());
  std::ifstream in(trace);
  const auto doc = nlohmann::json::parse(in);
  EXPECT_GT(doc["traceEvents"].size(), 10u);
}

TEST(Cli, EvalGemmEngines) {
  const Result ref = run("eval gemm --m 64 --n 64 --k 64 --tile-m 32 --tile-n 32 --tile-k 32 --engine reference --json");
  const Result bat = run("eval gemm --m 64 --n 64 --k 64 --tile-m 32 --tile-n 32 --tile-k 32 --engine batched --json --backend omp");
  ASSERT_EQ(ref.code, 0) << ref.err;
  ASSERT_EQ(bat.code, 0) << bat.err;
  const auto a = nlohmann::json::parse(ref.out), b = nlohmann::json::parse(bat.out);
  EXPECT_EQ(a["latency_ps"], b["latency_ps"]);
  EXPECT_EQ(a["engine"], "reference");
  EXPECT_EQ(b["backend"], "omp");
  EXPECT_FALSE(a.contains("parity"));
}

TEST(Cli, EvalGemmInvalidRequests) {
  expect_input_error(run("eval gemm --m 4096 --n 4096 --k 4096 --tile-m 1024 --tile-n 1024 --tile-k 1024"),
                     "bytes of SRAM; a PE has 2097152");
  expect_input_error(run("eval gemm --m 64 --n 64 --k 64 --pes 9"), "pes: must be in 1..8");
  expect_input_error(run("eval gemm --m 64 --n 64 --k 64 --cubes 9"), "cubes: must be in 1..8");
  expect_input_error(run("eval gemm --m 64 --n 64 --k 64 --buffers 3"), "buffers: must be 1 or 2");
  expect_input_error(run("eval gemm --m 64 --n 64 --k 64 --engine magic"), "--engine magic");
  expect_input_error(run("eval gemm --m 64 --n 64 --k 64 --tile-m 32 --tile-n 32 --tile-k 32 --backend tpu"), "--backend tpu");
  expect_input_error(run("eval gemm --m 64 --n 64"), "--k is required");
  expect_input_error(run("eval gemm --m x --n 64 --k 64"), "--m");
}

TEST(Cli, CudaBackendWithoutDeviceIsAClearError) {
  const Result r = run("eval gemm --m 64 --n 64 --k 64 --tile-m 32 --tile-n 32 --tile-k 32 --engine batched --backend cuda");
  if (r.code == 0) GTEST_SKIP() << "a CUDA device is present";
  expect_input_error(r, "--backend cuda:");
  const std::string out = fresh_dir("sweep_no_device") + "/s.json";
  expect_input_error(run("sweep gemm --m 64 --n 64 --k 64 --tile-m 32 --tile-n 32 --tile-k 32 --backend cuda --out '" +
                         out + "'"),
                     "--backend cuda:");
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace

namespace {

TEST(Cli, MilestoneWithoutMatplotlibWritesNumbersThenFails) {
  const std::string out = fresh_dir("kb_gemm_noplot");
  const Result r = run("run --bench milestone-1h-gemm --backend omp --out '" + out + "'", "KERNBENCH_PYTHON=/bin/false ");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("matplotlib is not available"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("apt-get install python3-matplotlib"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("parity: 24/24"), std::string::npos) << r.out;
  std::ifstream in(out + "/gemm_sweep.json");
  const auto doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["schema_version"], "1.4.0");
  EXPECT_EQ(doc["configs"].size(), 24u);
  EXPECT_EQ(doc["parity"]["ok"], true);
  EXPECT_NE(r.out.find("parity: 5/5 tile-size points"), std::string::npos) << r.out;
  // Energy against tile size: larger tiles reuse each loaded byte more, so the energy a MAC
  // costs beside static power falls with the tile.
  ASSERT_EQ(doc["tile_energy"].size(), 5u);
  double last = 1e300;
  for (const auto& t : doc["tile_energy"]) {
    EXPECT_EQ(t["parity"], true);
    const double dynamic = static_cast<double>(t["energy_fj"].get<std::int64_t>() - t["energy_static_fj"].get<std::int64_t>()) /
                           static_cast<double>(t["macs"].get<std::int64_t>());
    EXPECT_LT(dynamic, last) << t["tile"];
    last = dynamic;
  }
  EXPECT_TRUE(fs::exists(out + "/gemm_sweep.csv"));
  EXPECT_FALSE(fs::exists(out + "/gemm_roofline.png"));
}

TEST(Cli, MilestoneFastRerendersCommittedResults) {
  if (std::system("python3 -c 'import matplotlib' 2>/dev/null && exit 0 || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null") != 0)
    GTEST_SKIP() << "no Python with matplotlib here (tools/setup.sh installs python3-matplotlib)";
  const std::string out = fresh_dir("kb_gemm_fast");
  const Result r = run("run --bench milestone-1h-gemm --fast --out '" + out + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"gemm_sweep.json", "gemm_sweep.csv", "gemm_latency_vs_roofline.png", "gemm_mac_util.png",
                        "gemm_roofline.png", "gemm_energy.png", "gemm_pj_per_mac_vs_tile.png"})
    EXPECT_GT(fs::file_size(fs::path(out) / f), 1000u) << f;
  // MILESTONE_FAST takes the usual true words (and false ones); any other value is an error.
  for (const char* word : {"1", "true", "Yes", "ON"}) {
    const std::string o = fresh_dir(std::string("kb_gemm_fast_") + word);
    const Result e = run("run --bench milestone-1h-gemm --out '" + o + "'", std::string("MILESTONE_FAST=") + word + " ");
    EXPECT_EQ(e.code, 0) << word << e.err;
    EXPECT_NE(e.out.find("re-rendered figures from"), std::string::npos) << word;
    EXPECT_TRUE(fs::exists(fs::path(o) / "gemm_sweep.csv")) << word;
  }
  const std::string none = fresh_dir("kb_gemm_fast_bad");
  expect_input_error(run("run --bench milestone-1h-gemm --out '" + none + "'", "MILESTONE_FAST=maybe "),
                     "MILESTONE_FAST=maybe: expected 1, true, yes or on");
  expect_input_error(run("run --bench milestone-1h-gemm --fast --set pe.sram_kib=1024 --out '" + none + "'"),
                     "--fast: the committed results are for the bench's own topology (default.yaml)");
  expect_input_error(run("run --bench milestone-1h-gemm --out '" + none + "' --topology '" + kTopo + "/tiny.yaml'",
                         "MILESTONE_FAST=yes "),
                     "MILESTONE_FAST: the committed results are for the bench's own topology (default.yaml)");
  EXPECT_FALSE(fs::exists(none));
  const std::string again = fresh_dir("kb_gemm_replot");
  const Result p = run("plot --bench milestone-1h-gemm --in '" + out + "' --out '" + again + "'");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(fs::exists(fs::path(again) / "gemm_roofline.png"));
  expect_input_error(run("plot --bench milestone-1h-gemm --in '" + fresh_dir("kb_nothing") + "'"), "cannot open file");
}

}  // namespace

namespace {

// Whether a running process has `var` (NAME=VALUE) in its environment.
bool some_process_has(const std::string& var) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::ifstream in(e.path() / "environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (("\0" + env).find('\0' + var + '\0') != std::string::npos) return true;
  }
  return false;
}

// A bench starts its figure script before it simulates (the script imports matplotlib
// meanwhile, then reads its arguments from its standard input). A wrapper as the Python logs
// each start: one early start per bench, no cold one. A bench that fails after the start
// ends the script with the command: no process left, nothing in the temp folder, no output.
TEST(Cli, FigureScriptStartsEarlyAndLeavesNothingBehind) {
  std::string python;
  for (const char* c : {"python3", "/usr/bin/python3"})
    if (python.empty() && std::system((std::string(c) + " -c 'import matplotlib' 2>/dev/null").c_str()) == 0) python = c;
  if (python.empty()) GTEST_SKIP() << "no Python with matplotlib here (tools/setup.sh installs python3-matplotlib)";
  const std::string tmp = fresh_dir("kb_early_tmp"), dir = fresh_dir("kb_early_bin");
  fs::create_directories(tmp);
  fs::create_directories(dir);
  const std::string log = dir + "/starts.log", wrapper = dir + "/python";
  std::ofstream(wrapper) << "#!/bin/sh\necho \"$*\" >> '" << log << "'\nexec " << python << " \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  const std::string env = "TMPDIR='" + tmp + "' KERNBENCH_PYTHON='" + wrapper + "' ";
  auto starts = [&](const std::string& what) {
    std::ifstream in(log);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
    return n;
  };
  const std::string out = fresh_dir("kb_early_out");
  const Result r = run("run --bench milestone-1h-ccl --fast --out '" + out + "'", env);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GT(fs::file_size(fs::path(out) / "ccl_latency_vs_size.png"), 1000u);
  EXPECT_EQ(starts("plot_ccl.py --args-on-stdin"), 1);
  EXPECT_EQ(starts("plot_ccl.py --in"), 0);  // no cold start
  EXPECT_TRUE(fs::is_empty(tmp));
  fs::remove(log);
  const std::string none = fresh_dir("kb_early_none");
  expect_input_error(run("run --bench milestone-1h-ccl --fast --set pe.sram_kib=1024 --out '" + none + "'", env),
                     "--fast: the committed results are for the bench's own topology (default.yaml)");
  EXPECT_EQ(starts("plot_ccl.py --args-on-stdin"), 1);
  EXPECT_FALSE(fs::exists(none));
  EXPECT_TRUE(fs::is_empty(tmp));
  EXPECT_FALSE(some_process_has("TMPDIR=" + tmp));
}

TEST(Cli, OverflowingRequestIsAnInputError) {
  expect_input_error(run("eval gemm --m 262144 --n 262144 --k 262144 --tile-m 262144 --tile-n 262144 --tile-k 262144"
                         " --buffers 1 --set pe.matrix.rows=1 --set pe.matrix.cols=1 --set pe.sram_kib=1073741824"
                         " --set cube.hbm.capacity_mib=1073741824 --set pe.clock_mhz=100000"),
                     "would overflow int64 picoseconds");
}

// --pareto area, in every family: the cost is the machine's area from the topology's area
// fields, here worked by hand (docs/topology.md) for the configs of the front.
TEST(Cli, SweepParetoAreaInEveryFamily) {
  const auto list = nlohmann::json::parse(run("list --json").out);
  for (const auto& f : list["families"]) {
    bool area = false;
    for (const auto& c : f["costs"]) area |= c["name"] == "area";
    EXPECT_TRUE(area) << f["name"];
  }
  // The default machine: 8 cubes of 8 PEs, a 2x4 mesh (20 link directions), one SIP.
  auto machine = [](std::int64_t rows, std::int64_t cols, std::int64_t sram_kib) {
    const std::int64_t pe = rows * cols * 263 + 64 * 263 + sram_kib * 323450 / 1024;
    return 8 * (8 * pe + 10450000) + 20 * 379000;
  };
  const auto g = nlohmann::json::parse(run("sweep gemm --m 1024 --n 1024 --k 1024 --hw pe.matrix.rows=16,32,64 "
                                           "--hw pe.matrix.cols=16,64 --group none --pareto area --backend omp --json")
                                           .out);
  EXPECT_EQ(g["pareto"]["cost"], "area");
  const auto& front = g["pareto"]["fronts"][0]["points"];
  ASSERT_GE(front.size(), 3u);
  for (const auto& p : front)
    EXPECT_EQ(p["cost"], machine(p["array_rows"].get<std::int64_t>(), p["array_cols"].get<std::int64_t>(), 2048)) << p;
  const auto a = nlohmann::json::parse(run("sweep allreduce --level pe --algo ring --ranks 8 --bytes 65536 --buffer sram "
                                           "--hw pe.sram_kib=1024,4096 --set pe.sram_area_um2_per_mib=1000000 "
                                           "--group none --pareto area --backend omp --json")
                                           .out);
  const auto& afront = a["pareto"]["fronts"][0]["points"];
  ASSERT_EQ(afront.size(), 1u);  // more SRAM: more area, the same latency
  EXPECT_EQ(afront[0]["cost"], 8 * (8 * (32 * 32 * 263 + 64 * 263 + 1000000) + 10450000) + 20 * 379000);
}

// sweep gemm: the reductions come back, consistent with each other and with `eval gemm`.
// --pareto energy trades latency against energy_fj, grouped here by a swept energy figure:
// the same config costs exactly its MACs x 200 fJ more at 500 fJ a MAC than at 300.
TEST(Cli, SweepGemmParetoEnergyGroupedByAnEnergyField) {
  const Result r = run("sweep gemm --m 512 --n 512 --k 512 --tile-m 64,128 --pes 1,8 --hw pe.matrix.mac_fj=300,500 "
                       "--group pe.matrix.mac_fj --pareto energy --top 0 --no-histogram --backend omp --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pareto"]["cost"], "energy");
  const auto& fronts = j["pareto"]["fronts"];
  ASSERT_EQ(fronts.size(), 2u);
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> at300;  // (tile_m, pes) -> energy
  for (const auto& f : fronts) {
    const std::int64_t mac_fj = f["group"]["pe.matrix.mac_fj"];
    ASSERT_FALSE(f["points"].empty());
    for (const auto& p : f["points"]) {
      EXPECT_EQ(p["cost"], p["energy_fj"]);
      EXPECT_EQ(p["energy_matrix_fj"], p["macs"].get<std::int64_t>() * mac_fj);
      const auto key = std::make_pair(p["tile_m"].get<std::int64_t>(), p["pes"].get<std::int64_t>());
      if (mac_fj == 300) {
        at300[key] = p["energy_fj"];
      } else if (at300.count(key)) {
        EXPECT_EQ(p["energy_fj"].get<std::int64_t>() - at300[key], p["macs"].get<std::int64_t>() * 200);
      }
    }
  }
}

TEST(Cli, SweepGemmJson) {
  const std::string out = fresh_dir("sweep_out") + "/sweep.json";
  const Result r = run("sweep gemm --m 32,2048 --n 1024 --k 4096 --tile-m 32,64 --tile-n 64:256:*2 "
                       "--tile-k 128,256 --pes 1:8:*2 --cubes 1,2 --buffers 1,2 --dataflow os,ws --top 4 "
                       "--pareto pes --backend omp --json --out '" + out + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j, nlohmann::json::parse(std::ifstream(out)));
  EXPECT_EQ(j["schema"], "kernbench-gpu/gemm-space-sweep");
  EXPECT_EQ(j["space"]["size"], 2 * 2 * 3 * 2 * 4 * 2 * 2 * 2);
  EXPECT_EQ(j["space"]["groups"], 2);
  EXPECT_EQ(j["evaluated"], j["space"]["size"]);
  std::int64_t invalid = 0;
  for (const auto& [reason, count] : j["invalid"].items()) invalid += count.get<std::int64_t>();
  EXPECT_EQ(invalid + j["valid"].get<std::int64_t>(), j["space"]["size"]);
  EXPECT_GT(j["invalid"]["tile_larger_than_matrix"].get<std::int64_t>(), 0);
  ASSERT_EQ(j["best_per_group"].size(), 2u);
  ASSERT_EQ(j["top"].size(), 4u);
  // The fastest config overall is the best of its group, and eval gemm agrees on it.
  const auto& top = j["top"][0];
  bool found = false;
  for (const auto& g : j["best_per_group"]) found |= g["best"]["index"] == top["index"];
  EXPECT_TRUE(found);
  const Result e = run("eval gemm --engine both --json --m " + top["m"].dump() + " --n " + top["n"].dump() + " --k " +
                       top["k"].dump() + " --tile-m " + top["tile_m"].dump() + " --tile-n " + top["tile_n"].dump() +
                       " --tile-k " + top["tile_k"].dump() + " --pes " + top["pes"].dump() + " --cubes " +
                       top["cubes"].dump() + " --buffers " + top["buffers"].dump() + " --dataflow " +
                       top["dataflow"].get<std::string>() + " --array-rows " + top["array_rows"].dump() +
                       " --array-cols " + top["array_cols"].dump());
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(nlohmann::json::parse(e.out)["latency_ps"], top["latency_ps"]);
  // One front per group, cost rising and latency falling; every valid config is in the histogram.
  ASSERT_EQ(j["pareto"]["fronts"].size(), 2u);
  for (const auto& f : j["pareto"]["fronts"]) {
    const auto& pts = f["points"];
    for (std::size_t i = 1; i < pts.size(); ++i) {
      EXPECT_GT(pts[i]["cost"], pts[i - 1]["cost"]);
      EXPECT_LT(pts[i]["latency_ps"], pts[i - 1]["latency_ps"]);
    }
  }
  std::int64_t counted = 0;
  for (const auto& b : j["histogram"]["bins"]) counted += b["count"].get<std::int64_t>();
  EXPECT_EQ(counted, j["valid"]);
}

TEST(Cli, SweepGemmReductionsCanBeTurnedOff) {
  const Result r = run("sweep gemm --m 256 --n 256 --k 256 --tile-m 32,64 --pes 1:8 --top 0 --pareto none "
                       "--no-histogram --group none --backend omp --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["top"].size(), 0u);
  EXPECT_FALSE(j.contains("pareto"));
  EXPECT_FALSE(j.contains("histogram"));
  EXPECT_EQ(j["space"]["groups"], 1);
  ASSERT_EQ(j["best_per_group"].size(), 1u);
  EXPECT_EQ(j["best_per_group"][0]["group"], nlohmann::json::object());
  EXPECT_EQ(j["best_per_group"][0]["best"]["pes"], 8);
}

// Automatic tiles fit every shape, repeated values count once, and the JSON records what
// the space holds besides its axes.
TEST(Cli, SweepGemmAutoTilesAndRecord) {
  const Result r = run("sweep gemm --m 32,64,64 --n 8192 --k 8192 --tile-m 16,auto,16 --pes 2 --backend omp --json "
                       "--set pe.sram_kib=512");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["space"]["size"], 4);
  EXPECT_EQ(j["valid"], 4);
  EXPECT_EQ(j["space"]["axes"][0]["values"], nlohmann::json::parse("[32, 64]"));
  EXPECT_EQ(j["space"]["axes"][3]["values"], nlohmann::json::parse(R"([16, "auto"])"));
  EXPECT_EQ(j["space"]["fixed"]["tile_n"], "auto");
  EXPECT_EQ(j["space"]["fixed"]["pes"], 2);
  EXPECT_EQ(j["space"]["fixed"]["dataflow"], "os");
  EXPECT_EQ(j["space"]["fixed"]["array_rows"], 32);
  EXPECT_EQ(j["topology"]["overrides"], nlohmann::json::parse(R"(["pe.sram_kib=512"])"));
  for (const auto& t : j["top"]) {  // the automatic tile_n: one of the space's (gemm_auto.h), here 32..512
    const std::int64_t tn = t["tile_n"];
    EXPECT_TRUE(tn >= 32 && tn <= 512 && (tn & (tn - 1)) == 0) << tn;
  }
  bool auto_m32 = false;
  for (const auto& t : j["top"]) auto_m32 |= t["m"] == 32 && t["tile_m"] == 32;
  EXPECT_TRUE(auto_m32);
  // A group with no valid config says why.
  const Result e = run("sweep gemm --m 16 --n 64 --k 64 --tile-n 128 --backend omp --json");
  ASSERT_EQ(e.code, 0) << e.err;
  const auto je = nlohmann::json::parse(e.out);
  EXPECT_TRUE(je["best_per_group"][0]["best"].is_null());
  EXPECT_NE(je["best_per_group"][0]["reason"].get<std::string>().find("tile-m, tile-n, tile-k"), std::string::npos);
}

TEST(Cli, SweepGemmTables) {
  const Result r = run("sweep gemm --m 2048 --n 1024,4096 --k 4096 --tile-m 64,128 --pes 1,8 --backend omp");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"sweep gemm: 8 configs over 5 axes, 2 group(s)", "best per group (m,n,k):", "top 8 of",
                           "Pareto front per group", "latency of the valid configs"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
}

TEST(Cli, EvalGemmArrayAndDataflowShorthands) {
  const std::string args = "eval gemm --m 100 --n 70 --k 90 --tile-m 32 --tile-n 16 --tile-k 64 --engine both --json ";
  const Result a = run(args + "--dataflow ws --array-rows 8 --array-cols 16");
  const Result b = run(args + "--set pe.matrix.dataflow=ws --set pe.matrix.rows=8 --set pe.matrix.cols=16");
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, run(args).out);
  expect_input_error(run(args + "--array-rows 0"), "--array-rows 0: must be > 0 (got 0)");
}

TEST(Cli, SweepGemmBadInput) {
  const std::string out = fresh_dir("sweep_bad") + "/s.json";
  const std::string sweep = "sweep gemm --out '" + out + "' ";
  const std::string base = sweep + "--m 64 --n 64 --k 64 ";
  // Each appended to a valid sweep that would write `out`.
  expect_input_errors(base, {
      {"--tile-m 32:abc", "--tile-m 32:abc: item '32:abc': expected a non-negative integer (got 'abc')"},
      {"--tile-m 64:32", "--tile-m 64:32: item '64:32': the range ends before it starts"},
      {"--tile-m 32:64:+0", "item '32:64:+0': the step must be >= 1"},
      {"--tile-m 1:64:*1", "item '1:64:*1': a geometric range needs FACTOR >= 2 and LO >= 1"},
      {"--tile-m 1:64:/2", "a step is +STEP or *FACTOR (got '/2')"},
      {"--tile-m 1:2:3:4", "expected V, LO:HI, LO:HI:+STEP or LO:HI:*FACTOR"},
      {"--tile-m 32,,64", "--tile-m 32,,64: expected a non-negative integer (got '')"},
      {"--tile-m -8", "expected a non-negative integer (got '-8')"},
      {"--tile-m 99999999999999", "value out of range (at most 1048576)"},
      {"--tile-m 0:2000000", "0 is outside 1..1048576"},
      {"--tile-m 1:1048576,1048576:2000000", "1048577 is outside 1..1048576"},
      {"--dataflow os,xs", "--dataflow os,xs: item 'xs': expected os, ws or is"},
      {"--group m,size", "--group m,size: 'size' is not an axis"},
      {"--group m,m", "--group m,m: 'm' is named twice"},
      {"--group tile_k,tile_n --tile-k 1:1024 --tile-n 1:2048",
       "2097152 groups; at most 2^20 (group by fewer axes, or --group none)"},
      {"--top 1025", "--top 1025: must be <= 1024"},
      {"--pareto volume", "--pareto volume: expected pes, sram, hbm, area, energy or none"},
      {"--chunk -1", "--chunk -1: must be >= 0"},
      {"--pes 1:16", "--pes 1:16: item '1:16': 9 is outside 1..8"},
      {"--buffers 1,3", "--buffers 1,3: item '3': 3 is outside 1..2"},
      {"--array-rows 8192", "--array-rows 8192: item '8192': 8192 is outside 1..4096"},
      {"--set pe.clock_mhz=0", "pe.clock_mhz: must be > 0"},
      {"--backend gpu", "--backend gpu: expected auto, cuda or omp"}}, out);
  expect_input_error(run(sweep + "--m 1:1024 --n 1:1024 --k 1:1024 --tile-m 1:1024 --tile-n 1:2048 --group none"),
                     "the space has more than 2^50 configs");
  expect_input_error(run(sweep + "--m 0,64 --n 64 --k 64"), "--m 0,64: item '0': 0 is outside 1..1048576");
  EXPECT_FALSE(fs::exists(out));
  const std::string folder = fresh_dir("sweep_out_folder");
  fs::create_directories(folder);
  expect_input_error(run("sweep gemm --m 64 --n 64 --k 64 --out '" + folder + "'"), "is a folder");
}

}  // namespace

namespace {

// topo diagram: DOT with every cube, mesh link and SIP link labelled; rendered by dot.
TEST(Cli, TopoDiagram) {
  const std::string dir = fresh_dir("kb_diagram");
  const Result r = run("topo diagram '" + kTopo + "/default.yaml' -o '" + dir + "/d.dot'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(dir + "/d.dot");
  const std::string dot((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(dot.find("subgraph cluster_sip0"), std::string::npos);
  std::size_t cubes = 0, mesh = 0;
  for (std::size_t at = dot.find("<B>cube "); at != std::string::npos; at = dot.find("<B>cube ", at + 1)) ++cubes;
  for (std::size_t at = dot.find("256 GB/s\\n50 ns"); at != std::string::npos; at = dot.find("256 GB/s\\n50 ns", at + 1)) ++mesh;
  EXPECT_EQ(cubes, 8u);
  EXPECT_EQ(mesh, 10u);  // a 2x4 mesh: 6 row links and 4 column links
  EXPECT_NE(dot.find("pe7</TD>"), std::string::npos);
  // SIP links by kind: a ring of 8, a switch of 3; --set reaches the drawing.
  const Result ring = run("topo diagram '" + kTopo + "/ring8.yaml' -o '" + dir + "/r.dot'");
  ASSERT_EQ(ring.code, 0) << ring.err;
  std::ifstream rin(dir + "/r.dot");
  const std::string rdot((std::istreambuf_iterator<char>(rin)), {});
  std::size_t sip_links = 0;
  for (std::size_t at = rdot.find("100 GB/s\\n1000 ns"); at != std::string::npos; at = rdot.find("100 GB/s\\n1000 ns", at + 1)) ++sip_links;
  EXPECT_EQ(sip_links, 8u);
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz's dot is not installed (tools/setup.sh installs graphviz)";
  for (const char* ext : {"png", "svg"}) {
    const Result p = run("topo diagram '" + kTopo + "/default.yaml' --set system.sips=3 --set system.sip_link.topology=switch -o '" +
                         dir + "/s." + ext + "'");
    ASSERT_EQ(p.code, 0) << p.err;
    EXPECT_GT(fs::file_size(dir + "/s." + ext), 1000u) << ext;
  }
  std::ifstream svg(dir + "/s.svg");
  const std::string s((std::istreambuf_iterator<char>(svg)), {});
  EXPECT_NE(s.find("SIP switch"), std::string::npos);
  EXPECT_EQ(std::count_if(fs::directory_iterator(dir), fs::directory_iterator(), [](const auto&) { return true; }), 4);  // no temporaries left
}

// Names are escaped in DOT; beyond 16 SIPs the others are one box and one labelled edge.
TEST(Cli, TopoDiagramNamesAndManySips) {
  const std::string dir = fresh_dir("kb_diagram_names");
  fs::create_directories(dir);
  copy_edited(kTopo + "/tiny.yaml", dir + "/q.yaml", "name: tiny", "name: \"my \\\"quoted\\\" topo \\\\N\"");
  ASSERT_EQ(run("topo diagram '" + dir + "/q.yaml' -o '" + dir + "/q.dot'").code, 0);
  std::ifstream in(dir + "/q.dot");
  const std::string dot((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(dot.find("label=\"my \\\"quoted\\\" topo \\\\N: "), std::string::npos) << dot.substr(0, 300);
  const Result big = run("topo diagram '" + kTopo + "/default.yaml' --set system.sips=4096 --set system.sip_link.topology=fully_connected "
                         "--set sip.cube_rows=1 --set sip.cube_cols=1 -o '" + dir + "/big.dot'");
  ASSERT_EQ(big.code, 0) << big.err;
  EXPECT_LT(fs::file_size(dir + "/big.dot"), 10000u);
  std::ifstream bin(dir + "/big.dot");
  const std::string bdot((std::istreambuf_iterator<char>(bin)), {});
  EXPECT_NE(bdot.find("SIPs 1..4095"), std::string::npos);
  EXPECT_NE(bdot.find("fully_connected of 4096 SIPs"), std::string::npos);
}

// A large cube grid: a corner of it is drawn, and the label says what is left out, so the
// DOT source stays small whatever the topology.
TEST(Cli, TopoDiagramOfALargeGridShowsItsCorner) {
  const std::string dir = fresh_dir("kb_diagram_large");
  const Result r = run("topo diagram '" + kTopo + "/default.yaml' --set sip.cube_rows=64 --set sip.cube_cols=64 "
                       "--set system.sips=2 -o '" + dir + "/big.dot'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LT(fs::file_size(dir + "/big.dot"), 100000u);
  std::ifstream in(dir + "/big.dot");
  const std::string dot((std::istreambuf_iterator<char>(in)), {});
  std::size_t cubes = 0;
  for (std::size_t at = dot.find("<B>cube "); at != std::string::npos; at = dot.find("<B>cube ", at + 1)) ++cubes;
  EXPECT_EQ(cubes, 2u * 36u);  // two SIPs in detail, 6x6 cubes each
  EXPECT_NE(dot.find("SIP 1: cubes (0..5, 0..5) of its 64x64 grid shown; the others are alike"), std::string::npos);
  EXPECT_EQ(dot.find("<B>cube 6</B>"), std::string::npos);
  EXPECT_NE(dot.find("<B>cube 325</B>"), std::string::npos);  // row 5, column 5
}

TEST(Cli, TopoDiagramBadInput) {
  const std::string dir = fresh_dir("kb_diagram_bad");
  expect_input_error(run("topo diagram '" + kTopo + "/default.yaml' -o '" + dir + "/d.pdf'"), "must be .dot, .svg or .png");
  expect_input_error(run("topo diagram /nonexistent.yaml -o '" + dir + "/d.dot'"), "cannot open file");
  expect_input_error(run("topo diagram '" + kTopo + "/default.yaml' --set sip.cube_rows=0 -o '" + dir + "/d.png'"),
                     "sip.cube_rows: must be > 0");
  expect_input_error(run("topo diagram '" + kTopo + "/default.yaml'"), "-o");
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace
