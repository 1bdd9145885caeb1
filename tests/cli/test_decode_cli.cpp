// The decode family through the command line: eval's figures and engines for every case,
// sweep, the milestone bench (numbers as committed, parity, traces, figures, --fast and
// plot), and invalid requests as one line with exit 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "cli_run.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;


TEST(DecodeCli, EvalJsonHasEveryFieldForEveryCase) {
  for (int k = 1; k <= 4; ++k) {
    SCOPED_TRACE(k);
    const std::string trace = fresh_dir("kb_decode_trace" + std::to_string(k) + ".json");
    const json j = run_json("eval decode --case " + std::to_string(k) + " --s-kv 8192 --engine both --json --trace '" +
                            trace + "'");
    for (const char* f : {"latency_ps", "lower_bound_ps", "case_bound_ps", "mac_util", "hbm_read_bytes",
                          "kv_footprint_bytes", "kv_cube_bytes", "copies_pe", "copies_cube", "copies_sip",
                          "link_bytes_pe", "link_bytes_cube", "link_bytes_sip", "root_cube"})
      EXPECT_TRUE(j.contains(f)) << f;
    EXPECT_EQ(j["parity"], true);
    EXPECT_EQ(j["reference"]["latency_ps"], j["batched"]["latency_ps"]);
    EXPECT_EQ(j["kv_cube_bytes"].size(), 8u);
    EXPECT_EQ(j["root_cube"], k == 1 || k == 4 ? 6 : -1);
    EXPECT_GE(j["latency_ps"].get<std::int64_t>(), j["case_bound_ps"].get<std::int64_t>());
    EXPECT_GE(j["case_bound_ps"].get<std::int64_t>(), j["lower_bound_ps"].get<std::int64_t>());
    std::ifstream in(trace);
    EXPECT_GT(json::parse(in)["traceEvents"].size(), 10u);
  }
  // The bare flag: every cube ends with the answer, and writes it.
  const json a = run_json("eval decode --case 4 --s-kv 8192 --allreduce --json");
  EXPECT_EQ(a["allreduce"], "on");
  EXPECT_EQ(a["hbm_write_bytes"], 8 * 8 * 128 * 2);
  const json b = run_json("eval decode --case 4 --s-kv 8192 --allreduce off --batch 3 --h-kv 2 --h-q 16 --kv-chunk 100 --json");
  EXPECT_EQ(b["parity"], true);
  EXPECT_EQ(b["kv_chunk"], 100);
}

TEST(DecodeCli, InvalidRequests) {
  expect_input_error(run("eval decode --case 5"), "case: 5 is not 1..4");
  expect_input_error(run("eval decode --case 1 --h-q 8 --h-kv 3"), "a multiple of h_kv");
  expect_input_error(run("eval decode --case 4 --s-kv 63"), "splits the KV cache into 64 parts; s_kv 63 is shorter");
  expect_input_error(run("eval decode --case 2 --allreduce"), "only case 4 reduces across cubes");
  expect_input_error(run("eval decode --case 2 --kv-chunk 131072"), "bytes of SRAM per PE");
  expect_input_error(run("eval decode --case 2 --s-kv 16777216 --batch 64 --h-q 64 --h-kv 8"), "on one cube, whose HBM holds");
  expect_input_error(run("eval decode --case 1 --kv-chunk 200000"), "kv-chunk: 200000 is outside 1..s_kv");
  expect_input_error(run("eval decode --s-kv 1024"), "--case is required");
  expect_input_error(run("eval decode --case 1 --allreduce maybe"), "--allreduce maybe: expected");
}

TEST(DecodeCli, SweepCasesShapesAndHardware) {
  const json j = run_json("sweep decode --case 1,2,3,4 --s-kv 4096,65536 --batch 1,8 --hbm-gbps 400,819 --backend omp --json");
  EXPECT_EQ(j["space"]["size"], 32);
  EXPECT_EQ(j["best_per_group"].size(), 4u);
  for (const auto& g : j["best_per_group"]) EXPECT_TRUE(g["best"].contains("case"));
}

TEST(DecodeCli, MilestoneGivesTheCommittedNumbers) {
  const std::string out = fresh_dir("kb_decode");
  const Result r = run("run --bench milestone-gqa-decode-4cases --backend omp --out '" + out + "'");
  const bool plots = have_matplotlib();
  if (plots) {
    ASSERT_EQ(r.code, 0) << r.err;
  }
  EXPECT_NE(r.out.find("parity: 77/77"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("winner: case 4"), std::string::npos) << r.out;
  const json doc = load(out + "/sweep.json");
  EXPECT_EQ(doc["schema"], "kernbench-gpu/gqa-decode-4cases");
  EXPECT_EQ(doc["version"], 1);
  ASSERT_EQ(doc["panels"].size(), 4u);
  ASSERT_EQ(doc["rows"].size(), 4u);
  for (const auto& row : doc["rows"]) {
    for (const char* f : {"panel", "kind", "C", "P", "T_q", "S_kv", "d_head", "h_q", "h_kv", "op_log_summary"})
      EXPECT_TRUE(row.contains(f)) << f;
    EXPECT_EQ(row["C"], 8);
    EXPECT_EQ(row["P"], 8);
    EXPECT_EQ(row.contains("sub_w"), row["kind"] == "decode");
    EXPECT_EQ(row["op_log_summary"]["parity"], true);
  }
  EXPECT_EQ(doc["rows"][3]["sub_w"], 4);
  EXPECT_EQ(doc["parity"]["ok"], true);
  const json want = load(kRoot + "/docs/diagrams/gqa_decode_4cases/sweep.json");
  ASSERT_EQ(doc["configs"].size(), want["configs"].size());
  for (std::size_t i = 0; i < want["configs"].size(); ++i)
    for (const auto& [key, value] : want["configs"][i].items())
      EXPECT_EQ(doc["configs"][i][key], value) << i << " " << key;
  EXPECT_EQ(doc["rows"], want["rows"]);
  EXPECT_EQ(doc["best_by_s_kv"], want["best_by_s_kv"]);
  EXPECT_EQ(doc["best_by_batch"], want["best_by_batch"]);
  EXPECT_TRUE(fs::exists(out + "/sweep.csv"));
  for (int k = 1; k <= 4; ++k) EXPECT_GT(fs::file_size(fs::path(out) / ("trace_case" + std::to_string(k) + ".json")), 1000u);
  if (!plots) GTEST_SKIP() << "figures not checked: no Python with matplotlib here (tools/setup.sh installs it)";
  for (const char* f : {"decode_cases.png", "decode_vs_s_kv.png", "decode_vs_batch.png", "decode_energy.png"})
    EXPECT_GT(fs::file_size(fs::path(out) / f), 1000u) << f;
  const std::string again = fresh_dir("kb_decode_replot");
  const Result p = run("plot --bench milestone-gqa-decode-4cases --in '" + out + "' --out '" + again + "'");
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_TRUE(fs::exists(fs::path(again) / "decode_vs_batch.png"));
  const std::string fast = fresh_dir("kb_decode_fast");
  const Result f = run("run --bench milestone-gqa-decode-4cases --fast --out '" + fast + "'");
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_TRUE(fs::exists(fs::path(fast) / "decode_cases.png"));
}

}  // namespace
