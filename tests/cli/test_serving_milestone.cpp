// milestone-llm-serving: the committed runs are `serve`'s own (a run of each kind again, from
// the command line, to the last digit), every sampled step was identical on both engines,
// and the study covers what it says.
#include "cli_run.h"

#include "benches/milestone_llm_serving.h"

namespace kb::clitest {
namespace {

using json = nlohmann::json;

json committed() {
  std::ifstream in(kRoot + "/docs/diagrams/llm_serving/llm_serving.json");
  return json::parse(in);
}

TEST(ServingMilestone, TheCommittedRunsAreServesOwn) {
  const json doc = committed();
  for (const char* which : {"agg tp8", "disagg tp1 4P:4D"}) {
    const json* row = nullptr;
    for (const json& r : doc["runs"])
      if (r["model"] == "mixtral-8x7b" && r["setup"] == which && r["rate"] == 4.0) row = &r;
    ASSERT_NE(row, nullptr) << which;
    const std::string disagg = std::string(which).find("disagg") == 0 ? " --disagg 4:4" : "";
    const Result r = run("serve --model mixtral-8x7b --topology '" + kTopo + "/ring8.yaml' --tp " + (*row)["tp"].dump() +
                         " --tp-level sip --arrivals poisson:4 --isl lognormal:1024:0.6 --osl lognormal:256:0.5 --requests 400 "
                         "--seed 1 --recheck 1 --json" + disagg);
    ASSERT_EQ(r.code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["report"]["ttft_ms"]["p90"], (*row)["ttft_p90_ms"]) << which;
    EXPECT_EQ(j["report"]["tpot_ms"]["p90"], (*row)["tpot_p90_ms"]) << which;
    EXPECT_EQ(j["report"]["output_tokens_per_s_per_sip"], (*row)["tokens_per_s_per_sip"]) << which;
    EXPECT_EQ(j["report"]["goodput_per_s"], (*row)["goodput_per_s"]) << which;
  }
}

TEST(ServingMilestone, EveryRunWasRecheckedAndTheStudyIsWhole) {
  const json doc = committed();
  EXPECT_EQ(doc["schema"], "kernbench-gpu/llm-serving");
  std::size_t runs = 0;
  for (const ServingSetup& s : serving_setups()) runs += s.rates.size();
  ASSERT_EQ(doc["runs"].size(), runs);
  bool agg = false, disagg = false;
  for (const json& r : doc["runs"]) {
    EXPECT_EQ(r["recheck_identical"], r["recheck_steps"].get<std::int64_t>() - r["recheck_skipped"].get<std::int64_t>());
    EXPECT_LE(r["goodput_per_s"].get<double>(), r["requests_per_s"].get<double>() + 1e-9);
    agg = agg || r["serving"] == "aggregated", disagg = disagg || r["serving"] == "disaggregated";
  }
  EXPECT_TRUE(agg && disagg);
  EXPECT_EQ(doc["parity"]["identical"], doc["parity"]["steps_checked"]);
}

}  // namespace
}  // namespace kb::clitest
