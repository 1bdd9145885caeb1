// `kernbench-gpu sweep serve` as a user runs it: each config is the `serve` run of its flags,
// the front holds exactly the configs that meet the SLO and no other such config beats on both
// throughputs, the result is the same for any threads, and each bad input is one line, exit 2
// and nothing written.
#include "cli_run.h"
#include "host/api/serve_sweep.h"
#include "host/families/family.h"

namespace kb::clitest {
namespace {

using json = nlohmann::json;

const std::string kTinyFlags = "--model llama-tiny-random --tp 1 --tp-level cube --isl uniform:8:200 --osl uniform:1:24 ";
const std::string kTinyWorkload = "--arrivals poisson:500,poisson:4000,gamma:2000:3 --requests 120 --slo-ttft 0.05 --slo-tpot 0.011 ";
const std::string kTinySweep = "sweep serve " + kTinyFlags + "--max-num-seqs 2,8 --max-batched-tokens 96,256 " + kTinyWorkload;

TEST(SweepServe, EachConfigIsTheServeRunOfItsFlags) {
  const Result r = run(kTinySweep + "--json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "kernbench-gpu/serve-sweep");
  ASSERT_EQ(j["configs"].size(), 12u);
  EXPECT_EQ(j["counts"]["valid"], 12);
  EXPECT_EQ(j["recheck"].size(), 1u);  // one mapping: its first config's steps
  EXPECT_EQ(j["recheck"][0]["identical"], 2);
  // The order: limits outer, arrivals inner; every third config one, checked against serve.
  for (std::size_t i : {0u, 4u, 8u, 11u}) {
    const json& c = j["configs"][i];
    EXPECT_EQ(c["config"], static_cast<int>(i));
    const Result one = run("serve " + kTinyFlags + "--max-num-seqs " + c["max_num_seqs"].get<std::string>() + " --max-batched-tokens " +
                           c["max_batched_tokens"].get<std::string>() + " --arrivals " + c["arrivals"].get<std::string>() +
                           " --requests 120 --slo-ttft 0.05 --slo-tpot 0.011 --recheck 0 --json");
    ASSERT_EQ(one.code, 0) << one.err;
    const json rep = json::parse(one.out)["report"];
    EXPECT_EQ(c["ttft_p90_ms"], rep["ttft_ms"]["p90"]) << i;
    EXPECT_EQ(c["tpot_p99_ms"], rep["tpot_ms"]["p99"]) << i;
    EXPECT_EQ(c["tokens_per_s_per_sip"], rep["output_tokens_per_s_per_sip"]) << i;
    EXPECT_EQ(c["goodput_per_s"], rep["goodput_per_s"]) << i;
  }
  EXPECT_EQ(j["configs"][1]["arrivals"], "poisson:4000");
  EXPECT_EQ(j["configs"][3]["max_batched_tokens"], "256");
}

TEST(SweepServe, TheFrontIsTheSloMeetingConfigsNoneBeats) {
  const Result r = run("sweep serve " + kTinyFlags + "--max-num-seqs 1,2,4,8 --max-batched-tokens 96,256 " + kTinyWorkload + "--json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& cs = j["configs"];
  auto beats = [](const json& b, const json& a) {
    const double bs = b["tokens_per_s_per_sip"], bu = b["tokens_per_s_per_user"], as = a["tokens_per_s_per_sip"],
                 au = a["tokens_per_s_per_user"];
    return bs >= as && bu >= au && (bs > as || bu > au);
  };
  std::int64_t meet = 0, front = 0, missed = 0;
  for (const json& a : cs) {
    const bool m = a["ttft_p90_ms"].get<double>() <= 0.05 && a["tpot_p90_ms"].get<double>() <= 0.011;
    EXPECT_EQ(a["meets_slo"], m);
    meet += m, missed += !m;
    if (!m) {
      EXPECT_FALSE(a["on_front"].get<bool>());
      continue;
    }
    bool beaten = false;
    for (const json& b : cs) beaten = beaten || (b["meets_slo"].get<bool>() && beats(b, a));
    EXPECT_EQ(a["on_front"].get<bool>(), !beaten) << a["config"];
    front += !beaten;
  }
  EXPECT_GT(front, 1);  // a curve, not a point
  EXPECT_GT(missed, 0);  // and the SLO cuts some
  EXPECT_EQ(j["counts"]["meet_slo"], meet);
  EXPECT_EQ(j["front"].size(), static_cast<std::size_t>(front));
  // The front in order of tokens/s per user.
  for (std::size_t k = 1; k < j["front"].size(); ++k)
    EXPECT_LE(cs[j["front"][k - 1].get<std::size_t>()]["tokens_per_s_per_user"].get<double>(),
              cs[j["front"][k].get<std::size_t>()]["tokens_per_s_per_user"].get<double>());
  // The terminal names the front's configs.
  const Result t = run(kTinySweep);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("sweep serve: 12 configs (1 mappings), 12 served"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("reference engine: 2 of 2 re-checked steps identical"), std::string::npos) << t.out;
}

TEST(SweepServe, TheSameForAnyThreadsAndConfigsThatCannotServeSayWhy) {
  api::ServeSweepRequest q;
  q.serve.llm.family = &family("llm");
  q.serve.llm.presets["--model"] = "llama-tiny-random";
  q.serve.llm.axes["tp"] = "1", q.serve.llm.axes["tp_level"] = "cube,sip";
  q.serve.isl = "uniform:8:64", q.serve.osl = "uniform:1:8", q.serve.requests = "60";
  q.serve.max_num_seqs = "4,16";
  q.serve.disagg = "none,1:1";
  q.serve.arrivals = "poisson:300,closed:3";
  q.threads = 1;
  const json one = api::sweep_serve(q);
  q.threads = 3;
  const json three = api::sweep_serve(q);
  EXPECT_EQ(one.dump(), three.dump());
  ASSERT_EQ(one["configs"].size(), 16u);
  std::int64_t cannot = 0;
  for (const json& c : one["configs"]) {
    if (c["status"] == "ok") continue;
    ++cannot;
    EXPECT_FALSE(c["on_front"].is_boolean() && c["on_front"].get<bool>());
    EXPECT_EQ(c["disagg"], "1:1");  // a closed loop, or two instances on one SIP
  }
  EXPECT_EQ(cannot, 8);
  EXPECT_EQ(one["counts"]["valid"], 8);
  EXPECT_EQ(one["counts"]["mappings"], 2);
}

// A mapping the model cannot run (tp 3 divides no head count) is rows that say why, beside the
// mapping that can; a malformed one is an error.
TEST(SweepServe, AMappingTheModelCannotRunIsRowsThatSayWhy) {
  const Result r = run("sweep serve --model llama-tiny-random --tp 1,3 --tp-level cube --arrivals poisson:500,poisson:900 "
                       "--requests 30 --recheck 0 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["configs"].size(), 4u);
  EXPECT_EQ(j["counts"]["valid"], 2);
  for (const json& c : j["configs"]) {
    EXPECT_EQ(c["status"] == "ok", c["tp"] == "1") << c;
    if (c["tp"] == "3") EXPECT_NE(c["status"].get<std::string>().find("--tp 3"), std::string::npos) << c;
  }
  expect_input_error(run("sweep serve --model llama-tiny-random --tp 1,x --tp-level cube --arrivals poisson:5 --requests 5"), "--tp");
  // Nothing served: the JSON says why, and there is no figure to draw.
  const std::string d = fresh_dir("kb_sweep_serve_none");
  const Result none = run("sweep serve --model llama-tiny-random --tp 3 --tp-level cube --arrivals poisson:5 --requests 5 --out '" + d +
                          "/s.json'");
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_NE(none.out.find("no config served: no figure"), std::string::npos) << none.out;
  std::ifstream in(d + "/s.json");
  EXPECT_EQ(json::parse(in)["counts"]["valid"], 0);
  EXPECT_FALSE(fs::exists(d + "/serve_sweep_front.png"));
}

TEST(SweepServe, BadInputIsOneLineAndWritesNothing) {
  const std::string d = fresh_dir("kb_sweep_serve_bad");
  const std::string out = d + "/sweep.json";
  const std::string base = "sweep serve " + kTinyFlags + "--requests 20 --out '" + out + "' ";
  expect_input_errors(base, {{"--arrivals poisson:5 --max-num-seqs 4,0", "--max-num-seqs 0"},
                             {"--arrivals poisson:5,poisson:0", "--arrivals poisson:0: RATE"},
                             {"--arrivals poisson:5 --max-batched-tokens 96,,128", "--max-batched-tokens 96,,128: an empty alternative"},
                             {"--arrivals poisson:5 --slo-percentile 95", "--slo-percentile 95: expected 50, 90 or 99"},
                             {"--arrivals poisson:5 --disagg 1:x", "--disagg 1:x"},
                             {"--arrivals poisson:5 --phase prefill", "--phase"}},
                      out);
  expect_input_error(run("sweep serve --model llama-tiny-random --tp 1 --tp-level cube,moon --arrivals poisson:5 --out '" + out + "'"),
                     "moon");
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace kb::clitest
