// `kernbench-gpu serve` as a user runs it: a run's report, files and figures; the same run
// twice the same bytes; the reference engine's re-check of sampled steps; and each bad input
// one line, exit 2, and nothing written.
#include "cli_run.h"

namespace kb::clitest {
namespace {

using json = nlohmann::json;

const std::string kTiny = "serve --model llama-tiny-random --tp 1 --tp-level cube --isl uniform:8:200 --osl uniform:1:24 "
                          "--max-num-seqs 8 --max-batched-tokens 96 ";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(ServeCli, ARunReportsWritesItsFilesAndIsRecheckedOnTheReferenceEngine) {
  const std::string d = fresh_dir("kb_serve_run");
  const Result r = run(kTiny + "--arrivals poisson:400 --requests 80 --recheck 3 --out '" + d + "' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema"], "kernbench-gpu/serve");
  EXPECT_EQ(j["workload"]["requests"], 80);
  EXPECT_GT(j["steps"]["count"].get<std::int64_t>(), 24);
  const json& rep = j["report"];
  for (const char* k : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_s"}) {
    EXPECT_GT(rep[k]["p50"].get<double>(), 0) << k;
    EXPECT_LE(rep[k]["p50"].get<double>(), rep[k]["p90"].get<double>()) << k;
    EXPECT_LE(rep[k]["p90"].get<double>(), rep[k]["p99"].get<double>()) << k;
  }
  EXPECT_GT(rep["output_tokens_per_s"].get<double>(), 0);
  EXPECT_GE(rep["met_slo"].get<std::int64_t>(), 0);
  EXPECT_EQ(j["recheck"]["steps"], 3);
  EXPECT_EQ(j["recheck"]["identical"], 3);  // the tiny model's steps all fit the reference engine
  // The files: one row a request, one a step; the summary the same document.
  const std::string requests = slurp(d + "/requests.csv"), steps = slurp(d + "/steps.csv");
  EXPECT_EQ(std::count(requests.begin(), requests.end(), '\n'), 81);
  EXPECT_EQ(std::count(steps.begin(), steps.end(), '\n'), j["steps"]["count"].get<std::int64_t>() + 1);
  EXPECT_EQ(json::parse(slurp(d + "/summary.json"))["report"], rep);
  // The same seed, the same run, to the byte; another seed, another run.
  const Result again = run(kTiny + "--arrivals poisson:400 --requests 80 --recheck 3 --json");
  EXPECT_EQ(json::parse(again.out)["report"], rep);
  const Result other = run(kTiny + "--arrivals poisson:400 --requests 80 --recheck 0 --seed 2 --json");
  EXPECT_NE(json::parse(other.out)["report"], rep);
}

TEST(ServeCli, AClosedLoopKeepsItsClientsBusy) {
  const Result r = run(kTiny + "--arrivals closed:4 --requests 40 --recheck 0 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  // Four clients, no think time: never more than four requests at once, never a preemption.
  EXPECT_EQ(j["report"]["preemptions"], 0);
  EXPECT_GT(j["report"]["requests_per_s"].get<double>(), 0);
}

TEST(ServeCli, TheTerminalReportNamesEachFigure) {
  const Result r = run(kTiny + "--arrivals gamma:300:2 --requests 30 --recheck 1");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"TTFT", "TPOT", "ITL", "E2E", "goodput", "KV cache", "reference engine: 1 of 1"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(ServeCli, BadInputIsOneLineAndWritesNothing) {
  const std::string d = fresh_dir("kb_serve_bad");
  fs::create_directories(d);
  std::ofstream(d + "/back.csv") << "timestamp,input,output\n0.5,10,2\n0.25,10,2\n";
  std::ofstream(d + "/negative.csv") << "0,10,2\n-1,10,2\n";
  const std::string out = d + "/out";
  struct Case {
    std::string args, want;
  };
  for (const Case& c : {Case{"--arrivals poisson:0", "--arrivals poisson:0: RATE"},
                        Case{"--arrivals poisson:-3", "RATE"},
                        Case{"--arrivals '" + d + "/back.csv'", "back.csv:3:1: timestamp"},
                        Case{"--arrivals '" + d + "/negative.csv'", "negative.csv:2:1: timestamp"},
                        Case{"--arrivals poisson:5 --kv-block 0", "--kv-block 0"},
                        Case{"--arrivals poisson:5 --slo-ttft abc", "--slo-ttft abc: expected milliseconds"},
                        Case{"--arrivals poisson:5 --slo-tpot 1e400", "--slo-tpot"},
                        Case{"--arrivals poisson:5 --chunked-prefill maybe", "expected on or off"},
                        Case{"--arrivals poisson:5 --requests 0", "--requests 0"},
                        Case{"--arrivals poisson:5 --seed -1", "--seed -1"},
                        Case{"--arrivals closed:0", "closed:CONCURRENCY"}}) {
    const Result r = run(kTiny + c.args + " --out '" + out + "'");
    expect_input_error(r, c.want);
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
  expect_input_error(run("serve --model llama-tiny-random --arrivals poisson:5 --isl 0"), "--isl 0");
  expect_input_error(run("serve --model llama-tiny-random --arrivals poisson:5 --max-num-seqs 0"), "--max-num-seqs 0");
  // The step's own flags belong to the scheduler.
  expect_input_error(run("serve --model llama-tiny-random --arrivals poisson:5 --phase prefill"), "--phase");
  expect_input_error(run("serve --model llama-tiny-random --arrivals poisson:5 --batch 4"), "--batch");
  // A model whose weights and a step's activations leave no room for the KV cache.
  expect_input_error(run("serve --model llama-3.1-8b --tp 1 --tp-level cube --arrivals poisson:5 --max-batched-tokens 16384 "
                         "--out '" + out + "'"),
                     "leaves no room for a KV block of 16 tokens");
  EXPECT_FALSE(fs::exists(out));
  // A model whose weights leave no HBM is the llm family's one line.
  expect_input_error(run("serve --model llama-3.1-70b --tp 1 --tp-level cube --arrivals poisson:5"), "HBM");
}

}  // namespace
}  // namespace kb::clitest

namespace kb::clitest {
namespace {

// A prompt's chunk after cached positions (what a serving step's prefill runs) on both
// engines, its attention above the same chunk's from 0; a decode step has no such positions.
TEST(ServeCli, APromptChunkAfterCachedPositionsRunsOnBothEngines) {
  auto eval = [](const std::string& more) {
    const Result r = run("eval llm --model llama-tiny-random --tp 2 --tp-level cube --phase prefill --json " + more);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const nlohmann::json chunk = eval("--prompt 40 --prior 70"), alone = eval("--prompt 40"), whole = eval("--prompt 110");
  EXPECT_EQ(chunk["parity"], true);
  EXPECT_EQ(chunk["prior"], 70);
  EXPECT_GT(chunk["attention_ps"].get<std::int64_t>(), alone["attention_ps"].get<std::int64_t>());
  // Its work and the first 70 tokens' are the whole prompt's, but for one more LM-head row
  // (hidden 64 x vocab 256): a chunk's tiles are fewer, so its time need not be below the
  // whole prompt's, which deals more tiles to the PEs.
  const nlohmann::json first = eval("--prompt 70");
  EXPECT_EQ(chunk["macs"].get<std::int64_t>() + first["macs"].get<std::int64_t>() - whole["macs"].get<std::int64_t>(), 64 * 256);
  EXPECT_EQ(alone.count("prior"), 0u);  // written only where it is not 0
  expect_input_error(run("eval llm --model llama-tiny-random --tp 2 --tp-level cube --phase decode --prior 5"),
                     "--prior 5: positions cached before a prompt are a prefill's");
}

}  // namespace
}  // namespace kb::clitest

namespace kb::clitest {
namespace {

// --disagg P:D: prefill and decode instances on disjoint SIPs, the KV cache sent between them
// (and one transfer re-checked on the reference engine); each bad use one line.
TEST(ServeCli, DisaggregatedServingRunsOnDisjointSips) {
  const std::string ring = "serve --model llama-tiny-random --topology '" + kTopo + "/ring8.yaml' --tp 2 --tp-level sip "
                           "--isl uniform:8:200 --osl uniform:1:24 --max-num-seqs 8 --max-batched-tokens 96 ";
  const Result r = run(ring + "--disagg 1:3 --arrivals poisson:900 --requests 60 --recheck 1 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["disagg"]["prefill"], 1);
  EXPECT_EQ(j["disagg"]["decode"], 3);
  EXPECT_GT(j["disagg"]["kv_transfer_ms"]["mean"].get<double>(), 0);
  EXPECT_EQ(j["report"]["sips"], 8);
  EXPECT_EQ(j["recheck"]["kv_transfer"]["identical"], true);
  const Result agg = run(ring + "--arrivals poisson:900 --requests 60 --recheck 0 --json");
  ASSERT_EQ(agg.code, 0) << agg.err;
  EXPECT_EQ(json::parse(agg.out)["disagg"], nullptr);
  EXPECT_EQ(json::parse(agg.out)["report"]["sips"], 2);
  expect_input_error(run(ring + "--disagg 3 --arrivals poisson:5"), "--disagg 3: expected P:D");
  expect_input_error(run(ring + "--disagg 0:2 --arrivals poisson:5"), "--disagg 0:2: expected P:D");
  expect_input_error(run(ring + "--disagg 2:3 --arrivals poisson:5"), "5 instances of 2 SIPs each need 10 SIPs; the topology has 8");
  expect_input_error(run(ring + "--disagg 1:1 --arrivals closed:4"), "open-loop arrivals");
}

}  // namespace
}  // namespace kb::clitest

namespace kb::clitest {
namespace {

// A million requests hold only those in flight: a few records, percentiles binned in bounded
// memory, every request counted.
TEST(ServeCli, AMillionRequestsHoldOnlyThoseInFlight) {
  const Result r = run("serve --model llama-tiny-random --tp 1 --tp-level cube --isl uniform:8:32 --osl uniform:1:4 "
                       "--max-num-seqs 32 --max-batched-tokens 256 --arrivals poisson:100000 --requests 1000000 --recheck 0 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["report"]["ttft_ms"]["count"], 1000000);
  EXPECT_EQ(j["report"]["percentiles"], "binned");
  EXPECT_LT(j["memory"]["peak_request_records"].get<std::int64_t>(), 1000);
  EXPECT_LT(j["memory"]["report_bytes"].get<std::int64_t>(), 8 << 20);
  EXPECT_GT(j["steps"]["count"].get<std::int64_t>(), 100000);
  // A small run's percentiles are the values themselves.
  const Result small = run(kTiny + "--arrivals poisson:400 --requests 50 --recheck 0 --json");
  ASSERT_EQ(small.code, 0) << small.err;
  EXPECT_EQ(json::parse(small.out)["report"]["percentiles"], "exact");
}

// A trace serves its own rows, at their times and lengths; a conversations file gives lengths.
TEST(ServeCli, ATraceServesItsRowsAndAFileItsLengths) {
  const std::string d = fresh_dir("kb_serve_trace");
  fs::create_directories(d);
  std::ofstream(d + "/trace.csv") << "timestamp,input,output\n0,50,3\n0.001,20,1\n0.5,70,9\n";
  const Result r = run(kTiny + "--arrivals '" + d + "/trace.csv' --recheck 0 --out '" + d + "/out' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["workload"]["requests"], 3);
  const std::string csv = slurp(d + "/out/requests.csv");
  EXPECT_NE(csv.find("\n0,0.000000000,50,3,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n2,0.500000000,70,9,"), std::string::npos) << csv;
  expect_input_error(run(kTiny + "--arrivals '" + d + "/trace.csv' --requests 4"), "--requests 4");
  std::ofstream(d + "/conv.csv") << "input,output\n33,4\n";
  const Result f = run(kTiny + "--arrivals poisson:50 --lengths '" + d + "/conv.csv' --requests 5 --recheck 0 --out '" + d +
                       "/out2' --json");
  ASSERT_EQ(f.code, 0) << f.err;
  const std::string rows = slurp(d + "/out2/requests.csv");
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 6);
  EXPECT_EQ(rows.find(",33,4,") != std::string::npos, true) << rows;
}

}  // namespace
}  // namespace kb::clitest
