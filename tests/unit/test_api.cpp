// The typed API under the command line and Python (docs/adr/0029-typed-api.md): requests
// built in a program, not parsed from words, give what the command line gives, and a sweep's
// reporter sees the plan, the progress, every latency and the outcome, in that order.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "host/api/eval.h"
#include "host/api/merge_shards.h"
#include "host/api/sweep.h"
#include "host/cli/commands.h"
#include "host/common/error.h"
#include "host/common/output.h"

namespace kb {
namespace {

// The process's standard output and error, captured for a scope.
class Capture {
 public:
  Capture() : old_out_(std::cout.rdbuf(out.rdbuf())), old_err_(std::cerr.rdbuf(err.rdbuf())) {}
  ~Capture() {
    std::cout.rdbuf(old_out_);
    std::cerr.rdbuf(old_err_);
  }
  std::ostringstream out, err;

 private:
  std::streambuf* old_out_;
  std::streambuf* old_err_;
};

// What a command prints to stdout, run in process.
std::string run_words(const std::vector<std::string>& words) {
  Capture c;
  std::vector<std::string> argv{"kernbench-gpu"};
  argv.insert(argv.end(), words.begin(), words.end());
  EXPECT_EQ(cli_run(argv), 0) << c.err.str();
  return c.out.str();
}

TEST(Api, AnEvalRequestGivesTheCommandLinesDocument) {
  api::EvalRequest r;
  r.family = &family("collective");
  r.axes = {{"bytes", "65536"}, {"level", "cube"}, {"algo", "ring"}, {"ranks", "4"}, {"buffer", "hbm"}, {"chunks", "2"}};
  r.topology.sets = {"cube.hbm.bandwidth_gbps=410"};
  const nlohmann::json mine = api::eval_json(api::run_eval(r));
  const nlohmann::json theirs = nlohmann::json::parse(
      run_words({"eval", "collective", "--bytes", "65536", "--level", "cube", "--algo", "ring", "--ranks", "4", "--buffer",
                 "hbm", "--chunks", "2", "--set", "cube.hbm.bandwidth_gbps=410", "--json"}));
  EXPECT_EQ(mine, theirs);
  EXPECT_EQ(mine["parity"], true);
}

TEST(Api, AnEvalRequestIsCheckedByTheRunner) {
  api::EvalRequest r;
  r.family = &family("gemm");
  r.axes = {{"m", "64"}, {"n", "64"}};
  EXPECT_THROW(api::run_eval(r), InputError);  // --k is required
  r.axes["k"] = "64";
  r.axes["tile_q"] = "8";
  EXPECT_THROW(api::run_eval(r), InputError);
  r.axes.erase("tile_q");
  r.axes["m"] = "064";
  EXPECT_THROW(api::run_eval(r), InputError);  // the one integer rule
  r.axes["m"] = "64";
  r.engine = "fast";
  EXPECT_THROW(api::run_eval(r), InputError);
}

// Records every call, and keeps the latencies.
class Recorder : public api::SweepReporter {
 public:
  std::vector<std::string> calls;
  api::SweepPlan plan;
  std::vector<std::int64_t> lat;
  std::int64_t last_done = 0, finished_evaluated = -1;
  void planned(const api::SweepPlan& p) override { calls.push_back("planned"), plan = p; }
  bool wants_progress() const override { return true; }
  void progress(std::int64_t done, std::int64_t total, std::int64_t, double) override {
    if (calls.back() != "progress") calls.push_back("progress");
    EXPECT_GT(done, last_done);
    EXPECT_LE(done, total);
    last_done = done;
  }
  bool wants_latencies() const override { return true; }
  std::int64_t* latencies(std::int64_t configs) override {
    calls.push_back("latencies");
    lat.assign(static_cast<std::size_t>(configs), -2);
    return lat.data();
  }
  void finished(const SweepOutcome& o, SweepReportTo) override {
    calls.push_back("finished"), finished_evaluated = o.sum.evaluated;
  }
};

TEST(Api, ASweepsReporterSeesThePlanProgressLatenciesAndOutcome) {
  api::SweepRequest r;
  r.family = &family("gemm");
  r.axes = {{"m", "1:64"}, {"n", "16,32"}, {"k", "64"}, {"tile_m", "8,16,128"}};
  r.chunk = "50";  // several chunks: progress between them
  r.recheck = "2";
  Recorder rec;
  api::sweep(r, rec);
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"planned", "latencies", "progress", "finished"}));
  EXPECT_EQ(rec.plan.configs, 64 * 2 * 3);
  EXPECT_EQ(rec.plan.axes, 4);
  EXPECT_EQ(rec.finished_evaluated, rec.plan.configs);
  ASSERT_EQ(rec.lat.size(), static_cast<std::size_t>(rec.plan.configs));
  std::int64_t valid = 0;
  for (std::int64_t l : rec.lat) {
    EXPECT_TRUE(l == -1 || l > 0) << l;  // every one written: -1 invalid, else a latency
    valid += l > 0;
  }
  EXPECT_GT(valid, 0);
  EXPECT_LT(valid, rec.plan.configs);  // tiles larger than m are invalid
  // The same sweep's document as the command line prints it.
  std::ostringstream out, err;
  r.json = true;
  api::TerminalSweepReporter terminal(out, err);  // the command line's reporter, to streams of its own
  api::sweep(r, terminal);
  nlohmann::json mine = nlohmann::json::parse(out.str());
  nlohmann::json theirs = nlohmann::json::parse(run_words(
      {"sweep", "gemm", "--m", "1:64", "--n", "16,32", "--k", "64", "--tile-m", "8,16,128", "--chunk", "50", "--recheck",
       "2", "--json"}));
  mine.erase("timing"), theirs.erase("timing");
  EXPECT_EQ(mine, theirs);
}

// What the terminal reporter writes under --json, to a stream of its own.
std::string json_of(const std::function<void(api::SweepReporter&)>& run) {
  std::ostringstream out, err;
  api::TerminalSweepReporter terminal(out, err);
  run(terminal);
  return out.str();
}

// Keeps the outcome's document whole, as the Python module's reporter does; shows nothing.
class KeepDocument : public api::SweepReporter {
 public:
  nlohmann::json document;
  void finished(const SweepOutcome& o, SweepReportTo to) override {
    to.json = true;
    to.document = [this](nlohmann::json d) { document = std::move(d); };
    report_sweep(o, to);
  }
};

TEST(Api, AKeptDocumentIsTheTextsAndNothingIsPrinted) {
  api::SweepRequest r;
  r.family = &family("collective");
  r.axes = {{"bytes", "1024:1048576:*4"}, {"level", "pe,cube"}, {"algo", "ring,tree"}, {"ranks", "2:4"}, {"buffer", "sram,hbm"}};
  r.pareto = "ranks";
  r.json = true;
  const std::string text = json_of([&](api::SweepReporter& p) { api::sweep(r, p); });
  KeepDocument keep;
  Capture c;  // a program's reporter: nothing reaches the process's streams
  api::sweep(r, keep);
  EXPECT_EQ(c.out.str(), "");
  EXPECT_EQ(c.err.str(), "");
  nlohmann::json theirs = nlohmann::json::parse(text);
  ASSERT_FALSE(keep.document["best_per_group"].empty());
  ASSERT_FALSE(keep.document["pareto"]["fronts"].empty());
  keep.document.erase("timing"), theirs.erase("timing");
  EXPECT_EQ(keep.document, theirs);
  EXPECT_EQ(keep.document.dump(2), theirs.dump(2));  // the text Python's to_json() writes
}

TEST(Api, AMergeRequestOfTheShardsIsTheWholeSweep) {
  const std::string dir = std::filesystem::temp_directory_path() / ("kb_api_merge_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  api::SweepRequest r;
  r.family = &family("gemm");
  r.axes = {{"m", "8:512:*2"}, {"n", "64,128"}, {"k", "256"}, {"pes", "1:8"}};
  r.pareto = "pes";
  r.recheck = "0";
  r.json = true;
  nlohmann::json whole = nlohmann::json::parse(json_of([&](api::SweepReporter& p) { api::sweep(r, p); }));
  api::MergeRequest m;
  for (int i = 0; i < 3; ++i) {
    api::SweepRequest s = r;
    s.shard = std::to_string(i) + "/3";
    s.json = false;
    s.out = dir + "/s" + std::to_string(i) + ".json";
    json_of([&](api::SweepReporter& p) { api::sweep(s, p); });
    m.files.push_back(s.out);
  }
  m.json = true;
  nlohmann::json merged = nlohmann::json::parse(json_of([&](api::SweepReporter& p) { api::merge(m, p); }));
  for (const char* key : {"best_per_group", "top", "pareto", "histogram", "latency_checksum", "evaluated", "valid"})
    EXPECT_EQ(merged[key], whole[key]) << key;
  m.files.pop_back();  // a shard missing
  EXPECT_THROW(json_of([&](api::SweepReporter& p) { api::merge(m, p); }), InputError);
  std::filesystem::remove_all(dir);
}

TEST(Api, ASweepRequestIsCheckedByTheRunner) {
  api::SweepRequest r;
  r.family = &family("gemm");
  r.axes = {{"m", "64"}, {"n", "64"}, {"k", "64"}};
  Recorder rec;
  r.group = "";
  EXPECT_THROW(api::sweep(r, rec), InputError);
  r.group.reset();
  r.top = "010";
  EXPECT_THROW(api::sweep(r, rec), InputError);
  r.top.reset();
  r.shard = "0/2";
  r.json = true;
  EXPECT_THROW(api::sweep(r, rec), InputError);  // latencies are not a shard's
  EXPECT_EQ(rec.calls, (std::vector<std::string>{"planned"}));  // refused before any work
}

}  // namespace
}  // namespace kb
