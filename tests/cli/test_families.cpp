// Workload families through the command line: results as first published, hardware axes,
// one name per figure in every document, the resolved topology recorded, and where the
// binary finds its data.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli_run.h"
#include "host/topology/fields.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;

const std::string kData = KB_TEST_DATA;
const std::vector<std::string> kConfigColumns = {"m",   "n",     "k",       "tile_m", "tile_n",   "tile_k",    "pes",
                                                 "cubes", "buffers", "split", "dataflow", "array_rows", "array_cols"};

TEST(Families, MilestoneGivesThePublishedNumbers) {
  const std::string out = fresh_dir("kb_ms_expected");
  const Result r = run("run --bench milestone-1h-gemm --backend omp --out '" + out + "'", "KERNBENCH_PYTHON=/bin/false ");
  ASSERT_NE(r.out.find("parity: 24/24"), std::string::npos) << r.out << r.err;
  const json got = load(out + "/gemm_sweep.json")["configs"];
  const json want = load(kData + "/expected/milestone_1h_gemm.json")["configs"];
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    for (const auto& [key, value] : want[i].items()) EXPECT_EQ(got[i][key], value) << i << " " << key;
}

TEST(Families, SweepGemmGivesThePublishedResults) {
  const json want = load(kData + "/expected/sweep_gemm.json")["sweeps"];
  ASSERT_EQ(want.size(), 3u);
  auto config = [](const json& row) {
    json c = {{"index", row["index"]}, {"latency_ps", row["latency_ps"]}};
    for (const auto& k : kConfigColumns) c[k] = row[k];
    return c;
  };
  for (const json& w : want) {
    SCOPED_TRACE(w["args"].get<std::string>());
    const Result r = run("sweep gemm " + w["args"].get<std::string>() + " --backend omp --json");
    ASSERT_EQ(r.code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["space"]["size"], w["size"]);
    EXPECT_EQ(j["valid"], w["valid"]);
    EXPECT_EQ(j["invalid"], w["invalid"]);
    EXPECT_EQ(j["latency_checksum"], w["latency_checksum"]);
    ASSERT_EQ(j["best_per_group"].size(), w["best"].size());
    for (std::size_t g = 0; g < w["best"].size(); ++g)
      EXPECT_EQ(w["best"][g].is_null() ? json() : config(j["best_per_group"][g]["best"]), w["best"][g]) << g;
    ASSERT_EQ(j["top"].size(), w["top"].size());
    for (std::size_t i = 0; i < w["top"].size(); ++i) EXPECT_EQ(config(j["top"][i]), w["top"][i]) << i;
    ASSERT_EQ(j["pareto"]["fronts"].size(), w["pareto"].size());
    for (std::size_t f = 0; f < w["pareto"].size(); ++f) {
      const json& pts = j["pareto"]["fronts"][f]["points"];
      ASSERT_EQ(pts.size(), w["pareto"][f].size());
      for (std::size_t p = 0; p < pts.size(); ++p) {
        json c = config(pts[p]);
        c["cost"] = pts[p]["cost"];
        EXPECT_EQ(c, w["pareto"][f][p]);
      }
    }
    EXPECT_EQ(j["histogram"]["bins"], w["histogram"]);
  }
}

// The configs first published (0.1.0) on the weight- and input-stationary dataflows whose
// PEs all have work keep their latency exactly; since a cube's HBM is shared only by the PEs
// that access it, configs with idle PEs are faster (docs/adr/0007-communication-timing.md),
// and output-stationary folds are a row of the array shorter (SCALE-Sim v2: T + R + C - 2,
// docs/model.md section 3), so those configs are faster too.
TEST(Families, PublishedConfigsWithEveryPeWorkingAreUnchanged) {
  const json sweeps = load(kData + "/expected/sweep_gemm_0.1.0.json")["sweeps"];
  int same = 0, faster = 0;
  for (const json& w : sweeps) {
    const std::string args = w["args"].get<std::string>();
    const std::size_t set = args.find("--set");
    const std::string sets = set == std::string::npos ? "" : args.substr(set);
    std::vector<json> rows(w["top"].begin(), w["top"].end());
    for (const json& b : w["best"])
      if (!b.is_null()) rows.push_back(b);
    for (const json& row : rows) {
      const std::int64_t tm = (row["m"].get<std::int64_t>() + row["tile_m"].get<std::int64_t>() - 1) / row["tile_m"].get<std::int64_t>();
      const std::int64_t tn = (row["n"].get<std::int64_t>() + row["tile_n"].get<std::int64_t>() - 1) / row["tile_n"].get<std::int64_t>();
      const std::int64_t cubes = row["cubes"], pes = row["pes"];
      bool idle = false;
      for (std::int64_t c = 0; c < cubes; ++c) {
        const std::int64_t rows_of_cube = (c + 1) * tm / cubes - c * tm / cubes;
        idle |= rows_of_cube > 0 && rows_of_cube * tn < pes;
      }
      std::string eval = "eval gemm --engine batched --backend omp --json " + sets;
      for (std::string k : {"m", "n", "k", "pes", "cubes", "buffers", "array_rows", "array_cols", "tile_m", "tile_n", "tile_k"}) {
        const std::string value = row[k].dump();
        std::replace(k.begin(), k.end(), '_', '-');
        eval += " --" + k + " " + value;
      }
      eval += " --dataflow " + row["dataflow"].get<std::string>() + " --split rows";  // 0.1.0 split tile rows only
      const Result r = run(eval);
      ASSERT_EQ(r.code, 0) << r.err;
      const std::int64_t now = json::parse(r.out)["latency_ps"], then = row["latency_ps"];
      if (!idle && row["dataflow"] != "os") {
        EXPECT_EQ(now, then) << eval;
        ++same;
      } else {
        EXPECT_LE(now, then) << eval;
        faster += now < then;
      }
    }
  }
  EXPECT_GE(same, 5);     // the published ws and is configs with every PE working
  EXPECT_GT(faster, 50);  // the os configs, and those with idle PEs
}

// A hardware axis: for every value, the group's best config and latency are those of a
// sweep of the same space on a topology with that value set, and eval --set agrees.
TEST(Families, HwAxisAgreesWithEvalSet) {
  const std::string space = "--n 1024 --k 4096 --tile-m 32,64,128 --tile-n 64,128 --tile-k 128,512 "
                            "--pes 1:8:*2 --cubes 1,4 --buffers 1,2 --backend omp --json --top 0 --no-histogram ";
  const Result r = run("sweep gemm --m 256,2048 " + space + "--hw cube.hbm.bandwidth_gbps=205,819,3276 --hw pe.matrix.rows=16:64:*2 "
                       "--group cube.hbm.bandwidth_gbps,pe.matrix.rows,m");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["space"]["groups"], 3 * 3 * 2);
  EXPECT_EQ(j["space"]["group"], json::parse(R"(["cube.hbm.bandwidth_gbps", "array_rows", "m"])"));
  std::set<std::int64_t> latencies;
  for (const json& g : j["best_per_group"]) {
    const json& key = g["group"];
    const json& best = g["best"];
    ASSERT_FALSE(best.is_null());
    EXPECT_EQ(best["cube.hbm.bandwidth_gbps"], key["cube.hbm.bandwidth_gbps"]);
    EXPECT_EQ(best["array_rows"], key["array_rows"]);
    const std::string sets = "--set cube.hbm.bandwidth_gbps=" + key["cube.hbm.bandwidth_gbps"].dump() +
                             " --set pe.matrix.rows=" + key["array_rows"].dump();
    // The same space on a topology with the values set: the same best config.
    const Result s = run("sweep gemm " + space + "--group none " + sets + " --m " + key["m"].dump());
    ASSERT_EQ(s.code, 0) << s.err;
    const json sb = json::parse(s.out)["best_per_group"][0]["best"];
    for (const auto& k : kConfigColumns) EXPECT_EQ(sb[k], best[k]) << k;
    EXPECT_EQ(sb["latency_ps"], best["latency_ps"]);
    // eval --set on that config: the same figures.
    std::string args = "eval gemm --engine both --json " + sets;
    for (const char* k : {"m", "n", "k", "tile_m", "tile_n", "tile_k", "pes", "cubes", "buffers"})
      args += std::string(" --") + (std::string(k) == "tile_m" ? "tile-m" : std::string(k) == "tile_n" ? "tile-n" : std::string(k) == "tile_k" ? "tile-k" : k) + " " + best[k].dump();
    const Result e = run(args);
    ASSERT_EQ(e.code, 0) << e.err;
    const json ej = json::parse(e.out);
    EXPECT_EQ(ej["parity"], true);
    for (const auto& [name, value] : ej["batched"].items()) EXPECT_EQ(value, best[name]) << name;
    EXPECT_EQ(ej["topology"]["fields"]["pe.matrix.rows"], best["array_rows"]);
    latencies.insert(best["latency_ps"].get<std::int64_t>());
  }
  EXPECT_GT(latencies.size(), 9u);  // the hardware values change the answers
}

// The same figure has the same name in eval, sweep and milestone documents, and every
// document records every field of its resolved topology.
TEST(Families, SameFigureSameNameEverywhere) {
  const Result e = run("eval gemm --m 2048 --n 8192 --k 8192 --tile-m 128 --tile-n 128 --tile-k 256 --pes 8 --cubes 1 "
                       "--engine batched --backend omp --json");
  ASSERT_EQ(e.code, 0) << e.err;
  const json ej = json::parse(e.out);
  const Result s = run("sweep gemm --m 2048 --n 8192 --k 8192 --tile-m 128 --tile-n 128 --tile-k 256 --pes 8 "
                       "--backend omp --json");
  ASSERT_EQ(s.code, 0) << s.err;
  const json sj = json::parse(s.out);
  const json srow = sj["best_per_group"][0]["best"];
  const std::string out = fresh_dir("kb_ms_names");
  run("run --bench milestone-1h-gemm --backend omp --out '" + out + "'", "KERNBENCH_PYTHON=/bin/false ");
  const json mj = load(out + "/gemm_sweep.json");
  json mrow;
  for (const json& c : mj["configs"])
    if (c["shape"] == "o-proj-prefill-2k" && c["variant"] == "1cube-8pe") mrow = c;
  ASSERT_FALSE(mrow.is_null());
  std::set<std::string> names;
  for (const auto& [name, value] : ej["batched"].items()) names.insert(name);
  for (const char* must : {"latency_ps", "hbm_read_bytes", "hbm_write_bytes", "mac_util", "achieved_tflops", "roofline_ps"})
    EXPECT_EQ(names.count(must), 1u) << must;
  EXPECT_EQ(names.count("hbm_bytes"), 0u);
  for (const std::string& n : names) {
    EXPECT_EQ(ej[n], ej["batched"][n]) << n;  // the engine's figure at the top level too
    EXPECT_EQ(srow[n], ej[n]) << "sweep: " << n;
    EXPECT_EQ(mrow[n], ej[n]) << "milestone: " << n;
  }
  for (const auto& k : kConfigColumns) {
    EXPECT_EQ(srow[k], ej[k]) << k;
    EXPECT_EQ(mrow[k], ej[k]) << k;
  }
  for (const json* doc : {&ej, &sj, &mj}) {
    const json& t = (*doc)["topology"];
    EXPECT_EQ(t["name"], "default");
    EXPECT_EQ(t["fields"].size(), kb::hw_fields().size());
    EXPECT_EQ(t["fields"]["cube.hbm.bandwidth_gbps"], 819);
    EXPECT_EQ(t["fields"]["pe.matrix.dataflow"], "os");
    EXPECT_TRUE(t["hash"].is_string());
  }
}

TEST(Families, HwAxisBadInput) {
  const std::string out = fresh_dir("hw_bad") + "/s.json";
  const std::string base = "sweep gemm --out '" + out + "' --m 64 --n 64 --k 64 ";
  expect_input_errors(base, {
      {"--hw pe.matrix.rows=16:abc", "--hw pe.matrix.rows=16:abc: item '16:abc': expected a non-negative integer"},
      {"--hw pe.matrix.rows=8192", "--hw pe.matrix.rows=8192: item '8192': 8192 is outside 1..4096"},
      {"--hw cube.hbm.speed=1,2", "--hw cube.hbm.speed=1,2: cube.hbm.speed: unknown topology field"},
      {"--hw cube.hbm", "--hw cube.hbm: expected PATH=LIST"},
      {"--hw pe.matrix.dataflow=os,xs", "--hw pe.matrix.dataflow=os,xs: item 'xs': expected os, ws or is"},
      {"--dataflow os --hw pe.matrix.dataflow=ws", "pe.matrix.dataflow is swept twice"},
      {"--hw sip.cube_rows=1,2 --hw sip.cube_rows=4", "sip.cube_rows is swept twice"},
      {"--group cube.hbm.bandwidth_gbps", "'cube.hbm.bandwidth_gbps' is not an axis"},
  }, out);
  // A count swept on the hardware widens what the axes it bounds accept.
  const Result r = run("sweep gemm --m 64 --n 64 --k 64 --pes 1,16 --hw cube.pe_rows=2,4 --backend omp --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["valid"], 3);
  EXPECT_EQ(j["invalid"]["too_many_pes"], 1);
}

// A plot script that rejects its input: exit 2 and the script's own line, nothing else.
TEST(Families, PlotRejectionIsAnInputError) {
  if (std::system("python3 -c 'import matplotlib' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null") != 0)
    GTEST_SKIP() << "no Python with matplotlib here (tools/setup.sh installs python3-matplotlib)";
  const std::string in = fresh_dir("kb_plot_v9");
  fs::create_directories(in);
  copy_edited(kData + "/gemm_sweep_sample.json", in + "/gemm_sweep.json", "\"1.0.0\"", "\"9.0.0\"");
  const Result r = run("plot --bench milestone-1h-gemm --in '" + in + "' --out '" + in + "/figs'");
  expect_input_error(r, "schema_version");
  EXPECT_EQ(r.err.find("exit 512"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(in + "/figs/gemm_roofline.png"));
}

// The shipped data is found without a compile-time path: KERNBENCH_DATA_DIR, the installed
// layout next to the binary, or the tree the binary was built in.
TEST(Families, DataDirFromEnvironmentAndInstalledLayout) {
  const std::string root = fresh_dir("kb_prefix");
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/share/kernbench-gpu/topologies");
  fs::copy_file(KB_CLI_EXE, root + "/bin/kernbench-gpu");
  copy_edited(kTopo + "/tiny.yaml", root + "/share/kernbench-gpu/topologies/default.yaml", "name: tiny", "name: installed");
  const std::string eval = "eval gemm --m 16 --n 16 --k 16 --engine batched --backend omp --json";
  const std::string cmd = "'" + root + "/bin/kernbench-gpu' " + eval + " > '" + root + "/out.json' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(load(root + "/out.json")["topology"]["name"], "installed");
  const Result env = run(eval, "KERNBENCH_DATA_DIR='" + root + "/share/kernbench-gpu' ");
  ASSERT_EQ(env.code, 0) << env.err;
  EXPECT_EQ(json::parse(env.out)["topology"]["name"], "installed");
  expect_input_error(run(eval, "KERNBENCH_DATA_DIR=/nonexistent "), "/nonexistent/topologies/default.yaml:1:1");
  const Result tree = run(eval);  // the build tree: the source's topologies/default.yaml
  ASSERT_EQ(tree.code, 0) << tree.err;
  EXPECT_EQ(json::parse(tree.out)["topology"]["name"], "default");
}

}  // namespace

namespace {

// A zipped axis: shapes as (m, n, k) tuples. Each group's best is the best of a sweep of
// that shape alone, and tuples may mix family axes with topology fields.
TEST(Families, ZippedAxesTakeValuesTogether) {
  const std::string rest = "--tile-m 32,64,128 --tile-n 64,128 --pes 1:8:*2 --cubes 1,2 --backend omp --json --top 5 ";
  const Result r = run("sweep gemm --zip m,n,k=32/10240/8192,2048/8192/8192,32/28672/8192 " + rest);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["space"]["size"], 3 * 3 * 2 * 4 * 2);
  EXPECT_EQ(j["space"]["axes"][0]["name"], "m,n,k");
  EXPECT_EQ(j["space"]["axes"][0]["names"], json::parse(R"(["m", "n", "k"])"));
  EXPECT_EQ(j["space"]["axes"][0]["values"][1], json::parse("[2048, 8192, 8192]"));
  ASSERT_EQ(j["best_per_group"].size(), 3u);
  const char* shapes[][3] = {{"32", "10240", "8192"}, {"2048", "8192", "8192"}, {"32", "28672", "8192"}};
  for (std::size_t g = 0; g < 3; ++g) {
    const Result one = run(std::string("sweep gemm --m ") + shapes[g][0] + " --n " + shapes[g][1] + " --k " +
                           shapes[g][2] + " " + rest);
    ASSERT_EQ(one.code, 0) << one.err;
    const json b = json::parse(one.out)["best_per_group"][0]["best"];
    const json& z = j["best_per_group"][g]["best"];
    for (const auto& k : kConfigColumns) EXPECT_EQ(z[k], b[k]) << g << " " << k;
    EXPECT_EQ(z["latency_ps"], b["latency_ps"]);
    EXPECT_EQ(j["best_per_group"][g]["group"]["m"].dump(), shapes[g][0]);
  }
  // Hardware in a tuple: array shapes (rows, cols) together, grouped by one of them.
  const Result h = run("sweep gemm --m 512 --n 512 --k 512 --zip pe.matrix.rows,array_cols=16/64,64/16,32/32 "
                       "--group array_rows --backend omp --json");
  ASSERT_EQ(h.code, 0) << h.err;
  const json hj = json::parse(h.out);
  EXPECT_EQ(hj["space"]["size"], 3);
  EXPECT_EQ(hj["space"]["axes"][0]["name"], "array_rows,array_cols");
  for (const json& g : hj["best_per_group"]) {
    EXPECT_EQ(g["group"]["array_rows"], g["best"]["array_rows"]);
    EXPECT_EQ(g["best"]["array_rows"].get<int>() * g["best"]["array_cols"].get<int>(), 1024);
  }
}

// Named cases: a zip's tuples with names, reported in a column "case" and usable as a group.
TEST(Families, NamedCases) {
  const Result r = run("sweep gemm --zip m,n,k=qkv-decode:32/10240/8192,o-proj:2048/8192/8192,square:4096/4096/4096 "
                       "--tile-m 32,128 --pes 1,8 --group case --top 3 --backend omp --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["space"]["axes"][0]["cases"], json::parse(R"(["qkv-decode", "o-proj", "square"])"));
  const char* names[] = {"qkv-decode", "o-proj", "square"};
  const int m[] = {32, 2048, 4096};
  for (int g = 0; g < 3; ++g) {
    EXPECT_EQ(j["best_per_group"][g]["group"]["case"], names[g]);
    EXPECT_EQ(j["best_per_group"][g]["best"]["case"], names[g]);
    EXPECT_EQ(j["best_per_group"][g]["best"]["m"], m[g]);
  }
  for (const json& t : j["top"])
    for (int g = 0; g < 3; ++g)
      if (t["m"] == m[g]) {
        EXPECT_EQ(t["case"], names[g]);
      }
  // One case: a fixed field.
  const Result one = run("sweep gemm --zip m,n,k=only:64/64/64 --group none --backend omp --json");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(json::parse(one.out)["space"]["fixed"]["case"], "only");
  EXPECT_EQ(json::parse(one.out)["best_per_group"][0]["best"]["case"], "only");
}

TEST(Families, ZipBadInput) {
  const std::string out = fresh_dir("zip_bad") + "/s.json";
  const std::string base = "sweep gemm --out '" + out + "' --k 64 ";
  expect_input_errors(base, {
      {"--zip m,n", "--zip m,n: expected NAMES=TUPLES"},
      {"--zip m=64,32", "--zip m=64,32: a zip names two fields or more"},
      {"--zip m,n=64/64/64", "tuple '64/64/64' has 3 values for 2 fields"},
      {"--zip m,size=64/64", "'size' is not an axis of gemm or a topology field"},
      {"--zip m,n=64/64 --m 32", "m is also given by --m"},
      {"--zip m,n=64/64 --zip n,tile_n=64/64", "n is swept twice"},
      {"--zip m,n=0/64", "0 is outside 1..1048576"},
      {"--zip m,n=1:4/64", "a tuple holds single values, not ranges"},
      {"--zip dataflow,m=xs/64 --n 64", "dataflow 'xs': expected os, ws or is"},
      {"--zip m,pes=64/16 --n 64", "16 is outside 1..8"},
      {"--n 64", "--m: required"},
      {"--zip m,n=a:64/64,64/32", "name every tuple or none"},
      {"--zip m,n=a:64/64,a:64/32", "case 'a' is named twice"},
      {"--zip m,n=a:64/64,b:64/64", "cases 'b' and another have the same values"},
      {"--zip m,n=a:64/64,b:32/64 --zip tile_m,tile_n=c:8/8,d:16/16", "only one zip may name its tuples"},
  }, out);
}

}  // namespace

namespace {

// Hardware swept past what one topology file may hold (here 2^40 PEs) is an invalid config
// of the sweep, counted, as eval --set rejects it; nothing overflows.
TEST(Families, HardwareAxesBeyondTheMachineLimitAreInvalidConfigs) {
  const json j = run_json("sweep gemm --m 4096 --n 4096 --k 4096 --tile-m 4096 --tile-n 4096 --tile-k 4096 "
                          "--hw pe.matrix.rows=4096 --hw pe.matrix.cols=4096 --hw cube.pe_rows=1,1024 --hw cube.pe_cols=16 "
                          "--hw sip.cube_rows=1024 --hw sip.cube_cols=1024 --hw pe.sram_kib=1073741824 --pes 16 "
                          "--cubes 1048576 --backend omp --json");
  EXPECT_EQ(j["space"]["size"], 2);
  EXPECT_EQ(j["invalid"]["bad_hardware"], 1);
  EXPECT_EQ(j["topology"]["swept"], json::parse(R"(["cube.pe_rows"])"));
  expect_input_error(run("eval gemm --m 64 --n 64 --k 64 --set sip.cube_rows=1024 --set sip.cube_cols=1024 --set cube.pe_rows=1024"),
                     "PEs; at most 16777216 are supported");
}

// Axes of one value (the default group's m, n, k here) do not count against the limit of
// 16 axes with several values; hardware axes may be named by their short names.
TEST(Families, OnlyAxesWithSeveralValuesCount) {
  EXPECT_EQ(run_json("sweep gemm --m 64 --n 64 --k 64 --pes 1,2 --cubes 1,2 --buffers 1,2 --tile-m 1,2 --tile-n 1,2 "
                     "--tile-k 1,2 --dataflow os,ws --array-rows 1,2 --array-cols 1,2 --hw pe.clock_mhz=1,2 "
                     "--hw pe.sram_kib=1,2 --hw cube.hbm.latency_ns=1,2 --hw cube.ipcq.latency_ns=1,2 "
                     "--hw pe.dma.engines=1,2 --backend omp --json --top 0 --pareto none --no-histogram")["space"]["size"],
            1 << 14);
  EXPECT_EQ(run_json("sweep gemm --m 64 --n 64 --k 64 --hw array_rows=16,32 --backend omp --json")["space"]["axes"][3]["name"],
            "array_rows");
}

// --csv: the reported configs as CSV, with the same columns and values as the JSON rows.
TEST(Families, SweepCsvHoldsTheJsonRows) {
  const std::string csv = fresh_dir("kb_sweep_csv") + "/s.csv";
  const json j = run_json("sweep gemm --m 64,256 --n 128 --k 64 --tile-m 32,64 --pes 1,2 --top 3 --backend omp --json --csv '" + csv + "'");
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("report,group_index,cost,index,m,n,k,tile_m", 0), 0u) << header;
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  const std::size_t fronts_points = [&] {
    std::size_t n = 0;
    for (const json& f : j["pareto"]["fronts"]) n += f["points"].size();
    return n;
  }();
  ASSERT_EQ(rows.size(), j["best_per_group"].size() + j["top"].size() + fronts_points);
  const json& best = j["best_per_group"][1]["best"];
  const std::string want = "best,1,," + best["index"].dump() + "," + best["m"].dump() + ",";
  EXPECT_EQ(rows[1].rfind(want, 0), 0u) << rows[1];
  EXPECT_NE(rows[1].find("," + best["latency_ps"].dump() + ","), std::string::npos) << rows[1];
}

// Large cubes: a transfer's HBM share is checked against the PEs that share it, not every
// PE a cube could hold, so the reference engine runs what the model accepts.
TEST(Families, ReferenceRunsWhatTheModelAcceptsOnLargeCubes) {
  const json j = run_json("eval gemm --m 40000 --n 1 --k 32768 --tile-m 40000 --tile-n 1 --tile-k 32768 --buffers 1 "
                          "--set cube.pe_rows=1024 --set cube.pe_cols=1024 --set sip.cube_rows=1 --set sip.cube_cols=1 "
                          "--set pe.sram_kib=4194304 --set cube.hbm.capacity_mib=8192 --engine both --backend omp --json");
  EXPECT_EQ(j["parity"], true);
  EXPECT_GT(j["latency_ps"].get<std::int64_t>(), 0);
}

TEST(Families, OutputProblemsAreFoundBeforeTheWork) {
  const Result r = run("sweep gemm --m 64 --n 64 --k 64 --out /proc/no/such.json");
  expect_input_error(r, "--out /proc/no/such.json: cannot write in /proc");
  const std::string dir = fresh_dir("kb_plot_file");
  fs::create_directories(dir);
  std::ofstream(dir + "/gemm_sweep.json") << "{}";
  expect_input_error(run("plot --bench milestone-1h-gemm --in '" + dir + "/gemm_sweep.json'"), "is a file; give the folder");
}

}  // namespace
