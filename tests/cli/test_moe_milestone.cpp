// milestone-moe-inference: every point on both engines, the committed numbers, and what the
// study must show whatever the numbers: a larger batch never lowers tokens/s per SIP on a
// fixed mapping, routing skew costs Mixtral's one-expert-a-rank placement and redundant
// experts recover it, and an all-to-all never moves a rank's bytes faster than its links
// could carry them.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "cli_run.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;
namespace fs = std::filesystem;

const json* find_row(const json& rows, const std::string& model, const std::string& routing, std::int64_t redundant) {
  for (const json& r : rows)
    if (r["model"] == model && r["routing"] == routing && r["redundant_experts"] == redundant) return &r;
  return nullptr;
}

TEST(MoeMilestone, GivesTheCommittedNumbers) {
  const std::string out = fresh_dir("kb_moe_milestone");
  const Result r = run("run --bench milestone-moe-inference --backend omp --out '" + out + "'");
  const bool plots = have_matplotlib();
  if (plots) {
    ASSERT_EQ(r.code, 0) << r.err;
  }
  EXPECT_NE(r.out.find("parity: 66/66 points identical"), std::string::npos) << r.out;
  const json doc = load(out + "/moe_inference.json");
  EXPECT_EQ(doc["schema"], "kernbench-gpu/moe-inference");
  EXPECT_EQ(doc["topology"]["name"], "ring8");
  EXPECT_EQ(doc["parity"]["ok"], true);
  ASSERT_EQ(doc["decode"].size(), 36u);  // 2 models x 3 strategies x 6 batches
  ASSERT_EQ(doc["skew"].size(), 20u);    // 4 skews x (3 + 2) redundant counts
  ASSERT_EQ(doc["prefill"].size(), 10u);
  ASSERT_EQ(doc["bandwidth"].size(), 24u);  // the expert-parallel decode points
  for (const json& p : doc["decode"]) {
    ASSERT_EQ(p["status"], "valid") << p;
    const double step = p["step_ps"].get<double>(), b = p["batch"].get<double>();
    EXPECT_NEAR(p["tokens_per_s"].get<double>(), b * 1e12 / step, 1e-6 * b * 1e12 / step);
    EXPECT_NEAR(p["tokens_per_s_per_user"].get<double>(), 1e12 / step, 1e-9 * 1e12 / step);
    EXPECT_NEAR(p["tokens_per_s_per_sip"].get<double>() * p["mapping"]["sips"].get<double>(), p["tokens_per_s"].get<double>(),
                1e-6 * p["tokens_per_s"].get<double>());
    EXPECT_GE(p["valid_mappings"].get<std::int64_t>(), 1);
  }
  // Skew: Mixtral holds one expert a rank, so its busiest rank sets the pace; copies of the
  // hottest experts (EPLB) take it back.
  const json* even = find_row(doc["skew"], "mixtral-8x7b", "balanced", 0);
  const json* hot = find_row(doc["skew"], "mixtral-8x7b", "zipf:1.2", 0);
  const json* fixed = find_row(doc["skew"], "mixtral-8x7b", "zipf:1.2", 8);
  ASSERT_TRUE(even && hot && fixed);
  EXPECT_GT((*hot)["load_imbalance"].get<double>(), 2.0);
  EXPECT_GT((*hot)["step_ps"].get<std::int64_t>(), (*even)["step_ps"].get<std::int64_t>());
  EXPECT_LT((*fixed)["step_ps"].get<std::int64_t>(), (*hot)["step_ps"].get<std::int64_t>());
  EXPECT_LT((*fixed)["load_imbalance"].get<double>(), (*hot)["load_imbalance"].get<double>());
  // A rank's all-to-all bytes cannot move faster than its links at that level carry them: a
  // cube has at most 4 mesh links, a SIP on the ring 2.
  for (const json& b : doc["bandwidth"]) {
    const double links = b["level"] == "cube" ? 4 : 2;
    EXPECT_LE(b["dispatch_busbw_gbps"].get<double>(), links * b["link_gbps"].get<double>()) << b;
    EXPECT_GT(b["dispatch_ps"].get<std::int64_t>(), 0) << b;
  }
  // Prefill: a longer prompt never gives an earlier first token.
  std::map<std::string, std::int64_t> last;
  for (const json& p : doc["prefill"]) {
    ASSERT_EQ(p["status"], "valid") << p;
    const std::string m = p["model"];
    EXPECT_GT(p["step_ps"].get<std::int64_t>(), last[m]);
    last[m] = p["step_ps"];
  }
  const json want = load(kRoot + "/docs/diagrams/moe_inference/moe_inference.json");
  for (const char* part : {"decode", "skew", "bandwidth", "prefill"}) EXPECT_EQ(doc[part], want[part]) << part;
  if (!plots) GTEST_SKIP() << "figures not checked: no Python with matplotlib here (tools/setup.sh installs it)";
  for (const char* f : {"moe_decode.png", "moe_breakdown.png", "moe_skew.png", "moe_bandwidth.png", "moe_prefill.png"})
    EXPECT_GT(fs::file_size(fs::path(out) / f), 1000u) << f;
}

}  // namespace
