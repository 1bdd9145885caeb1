// The findings of the hostile-input probes: a shard is input, so every field of one that
// merge reads is checked (types, ranges, counts that add up, each reported config
// re-derived from its index) and a tampered shard is exit 2 with one line naming the file
// and the field, nothing on stdout and nothing written; a tampered shard that merge accepts
// gives the merge a real sweep gives. Also: inputs that are not regular files, strict
// numbers in every sweep flag, space files as strict as topologies, contradictions
// refused, the command line over a space file, outputs that would destroy an input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cli_run.h"
#include "host/sweep/merge.h"

namespace {

using namespace kb::clitest;
using nlohmann::json;

const char* kSpace =
    "sweep gemm --m 8,32,2048 --n 1024,10240 --k 8192 --tile-m 8,32,128 --tile-n 64,128 --tile-k 128,512 --pes 1:8:*2"
    " --cubes 1,2 --pareto pes --backend omp --top 6";

struct Shards {
  std::string dir, s0, s1;
  json d0, d1;
  json whole;  // the merge of the untouched shards
};

const Shards& shards() {
  static const Shards s = [] {
    Shards r;
    r.dir = fresh_dir("kb_hostile_shards_" + std::to_string(::getpid()));  // tests run side by side
    std::filesystem::create_directories(r.dir);
    r.s0 = r.dir + "/s0.json", r.s1 = r.dir + "/s1.json";
    EXPECT_EQ(run(std::string(kSpace) + " --shard 0/2 --out '" + r.s0 + "'").code, 0);
    EXPECT_EQ(run(std::string(kSpace) + " --shard 1/2 --out '" + r.s1 + "'").code, 0);
    r.d0 = load(r.s0), r.d1 = load(r.s1);
    r.whole = run_json("merge '" + r.s0 + "' '" + r.s1 + "' --json");
    return r;
  }();
  return s;
}

void write_json(const std::string& path, const json& j) { std::ofstream(path) << j.dump(); }

void expect_refused(const std::string& args, const std::string& dir, const std::string& fragment = "") {
  SCOPED_TRACE(args);
  std::vector<std::string> before;
  for (const auto& e : std::filesystem::directory_iterator(dir)) before.push_back(e.path().string());
  const Result r = run(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
  if (!fragment.empty()) {
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  }
  std::vector<std::string> after;
  for (const auto& e : std::filesystem::directory_iterator(dir)) after.push_back(e.path().string());
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(before, after) << "files created or removed";
}

// A copy of shard 0 with one edit, merged with the untouched shard 1.
void expect_tamper_refused(const std::string& name, const std::function<void(json&)>& edit, const std::string& fragment) {
  const Shards& s = shards();
  json d = s.d0;
  edit(d);
  const std::string f = s.dir + "/t_" + name + ".json";
  write_json(f, d);
  expect_refused("merge '" + f + "' '" + s.s1 + "' --out '" + s.dir + "/merged.json'", s.dir, fragment);
  std::filesystem::remove(f);
}

TEST(HostileShards, EveryTamperedFieldIsOneLineNamingFileAndField) {
  const Shards& s = shards();
  ASSERT_FALSE(s.whole.is_null());
  json& sum0 = const_cast<json&>(s.d0)["shard"]["summary"];
  ASSERT_TRUE(sum0["has_histogram"].get<bool>());
  ASSERT_FALSE(sum0["top"].empty());
  ASSERT_FALSE(sum0["pareto"].empty());
  auto at = [](json& d) -> json& { return d["shard"]["summary"]; };
  const std::vector<std::tuple<std::string, std::function<void(json&)>, std::string>> cases = {
      {"hist_negative", [&](json& d) { at(d)["histogram"] = json::array({{5, -3}}); }, "histogram"},
      {"hist_sum", [&](json& d) { at(d)["histogram"][0][1] = at(d)["histogram"][0][1].get<std::int64_t>() + 1; }, "histogram"},
      {"hist_dup", [&](json& d) { at(d)["histogram"].push_back(at(d)["histogram"][0]); }, "histogram"},
      {"no_hist", [&](json& d) { at(d)["has_histogram"] = false, at(d)["histogram"] = json::array(); }, "has_histogram"},
      {"top_negative", [&](json& d) { at(d)["top"][0][1] = -4; }, "top[0][1]"},
      {"top_far", [&](json& d) { at(d)["top"][0][1] = INT64_C(1000000000000); }, "top[0]"},
      {"top_float", [&](json& d) { at(d)["top"][0][1] = 0.9; }, "top[0][1]"},
      {"top_latency", [&](json& d) { at(d)["top"][0][0] = at(d)["top"][0][0].get<std::int64_t>() - 1; }, "top[0]"},
      {"top_short", [&](json& d) { at(d)["top"].erase(at(d)["top"].size() - 1); }, "top"},
      {"top_order", [&](json& d) { std::swap(at(d)["top"][0], at(d)["top"][1]); }, "top[1]"},
      {"pareto_negative", [&](json& d) { at(d)["pareto"][0][3] = -1; }, "pareto[0][3]"},
      {"pareto_cost", [&](json& d) { at(d)["pareto"][0][1] = at(d)["pareto"][0][1].get<std::int64_t>() + 100; }, "pareto"},
      {"best_far", [&](json& d) { at(d)["best"][0][1] = INT64_C(1000000000000); }, "best[0]"},
      {"best_latency", [&](json& d) { at(d)["best"][0][0] = 1; }, "best[0]"},
      {"valid_high", [&](json& d) { at(d)["valid"] = 1000; }, "valid"},
      {"by_status_negative", [&](json& d) { at(d)["by_status"][1] = -1; }, "by_status"},
      {"by_status_sum", [&](json& d) { at(d)["by_status"][1] = at(d)["by_status"][1].get<std::int64_t>() + 1; }, "by_status"},
      {"evaluated_negative", [&](json& d) { at(d)["evaluated"] = -1; }, "evaluated"},
      {"count_negative", [&](json& d) { d["shard"]["count"] = -1; }, "shard.count"},
      {"count_huge", [&](json& d) { d["shard"]["count"] = INT64_C(1) << 40; }, "shard.count"},
      {"count_large", [&](json& d) { d["shard"]["count"] = 100000000; }, "shard.count"},
      {"index_float", [&](json& d) { d["shard"]["index"] = 0.5; }, "shard.index"},
      {"top_k_negative", [&](json& d) { d["shard"]["request"]["top_k"] = -5; }, "top_k"},
      {"schema_type", [&](json& d) { d["schema"] = 7; }, "not the output of a sweep's shard"},
      {"timing_type", [&](json& d) { d["timing"] = "x"; }, "timing"},
      {"backend_type", [&](json& d) { d["backend"] = json::array(); }, "backend.name"},
      {"backend_string", [&](json& d) { d["backend"] = "tpu"; }, "backend.name"},
      {"deferred_on_omp", [&](json& d) { at(d)["deferred"] = 1; }, "shard.summary.deferred"},
      {"backend_name", [&](json& d) { d["backend"]["name"] = "tpu"; }, "backend.name"},
      {"space_type", [&](json& d) { d["space"] = 5; }, "space"},
      {"document_array", [&](json& d) { d = json::array(); }, "not the output"},
      {"document_string", [&](json& d) { d = "x"; }, "not the output"},
      {"document_null", [&](json& d) { d = nullptr; }, "not the output"},
      // What only the whole sweep could derive again is covered by the shard's digest.
      {"checksum", [&](json& d) { at(d)["latency_checksum"] = at(d)["latency_checksum"].get<std::uint64_t>() + 1; }, "shard.digest"},
      {"checksum_both", [&](json& d) {
         at(d)["latency_checksum"] = at(d)["latency_checksum"].get<std::uint64_t>() + 7;
         d["latency_checksum"] = at(d)["latency_checksum"];
       }, "shard.digest"},
      {"checksum_top", [&](json& d) { d["latency_checksum"] = d["latency_checksum"].get<std::uint64_t>() + 1; }, "latency_checksum"},
      {"digest_missing", [&](json& d) { d["shard"].erase("digest"); }, "shard.digest: missing"},
      {"digest_edited", [&](json& d) { d["shard"]["digest"] = "fnv1a64:0000000000000000"; }, "shard.digest"},
  };
  for (const auto& [name, edit, fragment] : cases) {
    SCOPED_TRACE(name);
    expect_tamper_refused(name, edit, fragment);
  }
  // Deep nesting, in each place that is compared or parsed.
  for (const std::string where : {"/space", "/shard/request", "/topology"}) {
    json d = s.d0;
    d[json::json_pointer(where)] = "@DEEP@";
    std::string text = d.dump();
    text.replace(text.find("\"@DEEP@\""), 8, std::string(60000, '[') + std::string(60000, ']'));
    const std::string f = s.dir + "/deep.json";
    std::ofstream(f) << text;
    expect_refused("merge '" + f + "' '" + s.s1 + "'", s.dir, "nested");
    std::filesystem::remove(f);
  }
}

// Property: over many random single-field edits of a shard's summary and request, merge
// either refuses the shard (exit 2, one line) or gives exactly the merge of the real
// shards. With the shard's digest every edit is refused, also those only a full re-run
// could find otherwise: the sum of latencies, and in which of the bins above the fastest
// config the histogram's counts lie.
// A shard of schema 2 (backend, a name alone) still merges; a CUDA shard's counts of deferred
// configs, digested with its summary, add up in the merge's backend.
TEST(HostileShards, EarlierShardsAndDeferredCountsMerge) {
  const Shards& s = shards();
  ASSERT_FALSE(s.whole.is_null());
  const std::string a = s.dir + "/old0.json", b = s.dir + "/old1.json";
  json d0 = s.d0, d1 = s.d1;
  d0["backend"] = "omp", d1["backend"] = "omp";
  write_json(a, d0), write_json(b, d1);
  const json old = run_json("merge '" + a + "' '" + b + "' --json");
  EXPECT_EQ(old["latency_checksum"], s.whole["latency_checksum"]);
  EXPECT_EQ(old["backend"], json({{"name", "omp"}, {"deferred", 0}, {"on_host", 0}}));
  const std::int64_t groups = s.whole["space"]["groups"].get<std::int64_t>();
  const int statuses = static_cast<int>(s.d0["shard"]["summary"]["by_status"].size());
  int i = 0;
  for (json* d : {&d0, &d1}) {
    (*d)["backend"] = {{"name", "cuda"}, {"deferred", 3 + i}, {"on_host", 1 - i}};
    json& sum = (*d)["shard"]["summary"];
    sum["deferred"] = 3 + i;
    if (i == 0) sum["on_host"] = 1;
    (*d)["shard"]["digest"] =
        kb::shard_digest((*d)["shard"]["request"], i, 2, kb::summary_from_json(sum, groups, statuses, "x"));
    ++i;
  }
  write_json(a, d0), write_json(b, d1);
  const json merged = run_json("merge '" + a + "' '" + b + "' --json");
  EXPECT_EQ(merged["latency_checksum"], s.whole["latency_checksum"]);
  EXPECT_EQ(merged["backend"], json({{"name", "cuda"}, {"deferred", 7}, {"on_host", 1}}));
  // Without the new digest, a count changed after the sweep is refused.
  d1["shard"]["summary"]["deferred"] = 5;
  write_json(b, d1);
  expect_refused("merge '" + a + "' '" + b + "' --json", s.dir, "shard.digest");
}

TEST(HostileShards, EveryAcceptedTamperingMergesAsARealSweep) {
  const Shards& s = shards();
  ASSERT_FALSE(s.whole.is_null());
  std::vector<json::json_pointer> leaves;
  std::function<void(const json&, const json::json_pointer&)> walk = [&](const json& j, const json::json_pointer& p) {
    if (j.is_object())
      for (auto it = j.begin(); it != j.end(); ++it) walk(it.value(), p / it.key());
    else if (j.is_array())
      for (std::size_t i = 0; i < j.size(); ++i) walk(j[i], p / i);
    else if (j.is_number_integer() || j.is_boolean())
      leaves.push_back(p);
  };
  walk(s.d0["shard"]["summary"], json::json_pointer("/shard/summary"));
  walk(s.d0["shard"]["request"], json::json_pointer("/shard/request"));
  ASSERT_GT(leaves.size(), 50u);
  std::mt19937_64 rng(20261201);
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 160; ++trial) {
    json d = s.d0;
    const json::json_pointer p = leaves[rng() % leaves.size()];
    json& v = d[p];
    if (v.is_boolean()) {
      v = !v.get<bool>();
    } else {
      const std::int64_t x = v.get<std::int64_t>();
      const json& o = d[leaves[rng() % leaves.size()]];
      const std::int64_t other = o.is_number_integer() ? o.get<std::int64_t>() : 3;
      const std::int64_t choices[] = {x + 1, x - 1, 0, -1, other, x * 2, INT64_C(1) << 40};
      v = choices[rng() % 7];
    }
    if (d == s.d0) continue;
    const std::string f = s.dir + "/p.json";
    write_json(f, d);
    const Result r = run("merge '" + f + "' '" + s.s1 + "' --json");
    SCOPED_TRACE(p.to_string() + " = " + v.dump());
    if (r.code == 2) {
      ++refused;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_NE(r.err.find(f), std::string::npos) << r.err;
      continue;
    }
    ASSERT_EQ(r.code, 0) << r.err;
    ++accepted;
    json got = json::parse(r.out), want = s.whole;
    // Where in the histogram counts lie cannot be checked without evaluating the shard
    // again (only that they add up, and none lie below the fastest config): compare totals.
    auto total = [](const json& j) {
      std::int64_t n = 0;
      for (const json& b : j["histogram"]["bins"]) n += b["count"].get<std::int64_t>();
      return n;
    };
    EXPECT_EQ(total(got), total(want));
    for (json* j : {&got, &want}) j->erase("timing"), j->erase("merged"), j->erase("latency_checksum"), j->erase("histogram");
    EXPECT_EQ(got, want) << "accepted a tampered shard, and the merge differs from the real one";
  }
  EXPECT_GT(refused, 100);
  EXPECT_EQ(accepted, 0);
  std::printf("tampered shards: %d refused, %d accepted with the real merge\n", refused, accepted);
}

TEST(HostileInputs, NotRegularFilesAndStrictValuesAreOneLineErrors) {
  const std::string d = fresh_dir("kb_hostile_inputs");
  std::filesystem::create_directories(d);
  ASSERT_EQ(::mkfifo((d + "/fifo").c_str(), 0600), 0);
  const std::string q = "'" + d;
  const std::string def = kTopo + "/default.yaml";
  std::ofstream(d + "/dup.yaml") << "family: gemm\nfamily: gemm\naxes:\n  m: 16\n  n: 16\n  k: 16\n";
  std::ofstream(d + "/dupaxes.yaml") << "family: gemm\naxes:\n  m: 16\n  n: 16\n  k: 16\naxes:\n  m: 32\n";
  std::ofstream(d + "/duptop.yaml") << "family: gemm\naxes:\n  m: 16\n  n: 16\n  k: 16\nreductions:\n  top: 3\n  top: 4\n";
  std::ofstream(d + "/twodocs.yaml") << "family: gemm\naxes:\n  m: 16\n  n: 16\n  k: 16\n---\nfamily: gemm\n";
  std::ofstream(d + "/quoted.yaml") << "family: decode\naxes:\n  case: [\"1,2,3,4\"]\n";
  std::ofstream(d + "/tuple.yaml") << "family: gemm\nzip:\n  - names: [m, n, k]\n    tuples: [[\"1024/8\", 8, 8]]\n";
  std::ofstream(d + "/space.yaml") << "family: gemm\naxes:\n  m: 16\n  n: 16\n  k: 16\n";
  // A case's name that the zip's command-line text would read as more tuples.
  std::ofstream(d + "/case.yaml") << "family: gemm\nzip:\n  - names: [m, n]\n    tuples:\n      \"x:16/8,y\": [16, 16]\n";
  std::ofstream(d + "/case2.yaml") << "family: gemm\naxes:\n  k: 16\nzip:\n  - names: [m, n]\n    tuples:\n      \"a b\": [16, 16]\n";
  {
    // default.yaml in UTF-16LE, no BOM.
    std::ifstream in(def, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(d + "/utf16.yaml", std::ios::binary);
    for (char c : text) out.put(c).put('\0');
  }
  std::ofstream(d + "/twodocs-topo.yaml") << std::ifstream(def).rdbuf() << "---\nschema_version: 1\n";
  const std::string gemm = "sweep gemm --m 16 --n 16 --k 16 ";
  const std::vector<std::string> cases = {
      "eval allreduce --bytes 4096 --level pe --algo ring --ranks 2 --buffer sram --topology " + q + "/fifo'",
      "topo check " + q + "/fifo'",
      "merge " + q + "/fifo'",
      "sweep --space " + q + "/dup.yaml'",
      "sweep --space " + q + "/dupaxes.yaml'",
      "sweep --space " + q + "/duptop.yaml'",
      "sweep --space " + q + "/twodocs.yaml'",
      "sweep --space " + q + "/quoted.yaml'",
      "sweep --space " + q + "/tuple.yaml'",
      "sweep --space " + q + "/case.yaml'",
      "sweep --space " + q + "/case2.yaml'",
      "sweep --space ''",
      gemm + "--shard ''",
      gemm + "--out ''",
      gemm + "--csv ''",
      "eval gemm --m 16 --n 16 --k 16 --trace ''",
      "run --bench milestone-1h-gemm --out ''",
      "merge ''",
      // No machine of the swept hardware fits a topology file: 2^35 PEs at the least.
      "sweep allreduce --hw system.sips=4096 --hw sip.cube_rows=1024 --hw sip.cube_cols=1024 --bytes 1024 --level pe "
      "--algo ring --ranks 2 --buffer sram",
      "sweep gemm --m 16 --n 16 --k 16 --zip sip.cube_rows,sip.cube_cols=1024/1024,512/1024 --hw system.sips=4096",
      "topo check " + q + "/utf16.yaml'",
      "topo check " + q + "/twodocs-topo.yaml'",
      gemm + "--top 0x10",
      gemm + "--top 010",
      gemm + "--top ' 5'",
      gemm + "--top +5",
      gemm + "--top ''",
      gemm + "--top -1",
      gemm + "--chunk 0x10",
      gemm + "--chunk ''",
      gemm + "--recheck 1e3",
      gemm + "--max-hours nan",
      gemm + "--max-hours -inf",
      gemm + "--max-hours 1e3",
      gemm + "--max-hours ''",
      gemm + "--progress-every inf",
      gemm + "--progress-every -1",
      gemm + "--group ''",
      gemm + "--pareto ''",
      "eval decode --case 1 --kv-chunk 0",
      "sweep decode --case 1 --kv-chunk 0:4",
      "eval allreduce --bytes 4096 --level pe --algo ring --ranks 2 --buffer sram --ipcq-gbps 5 --set cube.ipcq.bandwidth_gbps=7",
      "eval gemm --m 16 --n 16 --k 16 --set pe.sram_kib=512 --set pe.sram_kib=1024",
      gemm + "--hw cube.hbm.bandwidth_gbps=410,819 --set cube.hbm.bandwidth_gbps=819",
      "eval \"$(printf 'allreduce\\nx')\"",
      gemm + "--out " + q + "/o.json' --csv " + q + "/o.json'",
      "sweep --space " + q + "/space.yaml' --out " + q + "/space.yaml'",
      "eval gemm --m 16 --n 16 --k 16 --topology " + q + "/t.yaml' --trace " + q + "/t.yaml'",
      gemm + "--out " + q + "/out.json/'",
      gemm + "--out " + q + "/" + std::string(250, 'n') + "'",
      gemm + "--out " + q + "/" + std::string(5000, 'p') + "'",
  };
  std::filesystem::copy_file(def, d + "/t.yaml");
  for (const std::string& args : cases) expect_refused(args, d);
  EXPECT_TRUE(std::filesystem::is_fifo(d + "/fifo"));
  const Shards& s = shards();
  expect_refused("merge '" + s.s0 + "' '" + s.s1 + "' --out '" + s.s0 + "'", s.dir, "the same file as the input");
}

// A space file may come through a pipe (`--space -`) or a FIFO: read once, as a file is,
// including where the file names the family; its errors name "<stdin>".
TEST(HostileInputs, ASpaceFromAPipeOrAFifoIsReadOnce) {
  const std::string d = fresh_dir("kb_space_stream");
  std::filesystem::create_directories(d);
  const std::string file = d + "/space.yaml";
  std::ofstream(file) << "family: gemm\naxes:\n  m: [16, 64]\n  n: 32\n  k: 16\nreductions:\n  recheck: 1\n";
  const std::string args = " --backend omp --json";
  const Result want = run("sweep --space '" + file + "'" + args);
  ASSERT_EQ(want.code, 0) << want.err;
  auto same = [&](const Result& r) {
    ASSERT_EQ(r.code, 0) << r.err;
    json a = json::parse(r.out), b = json::parse(want.out);
    for (json* j : {&a, &b}) j->erase("timing");
    EXPECT_EQ(a, b);
  };
  same(run_shell("cat '" + file + "' | '" + KB_CLI_EXE + "' sweep --space -" + args));
  same(run_shell("cat '" + file + "' | '" + KB_CLI_EXE + "' sweep gemm --space -" + args));
  same(run_shell(std::string("'") + KB_CLI_EXE + "' sweep --space /dev/stdin" + args + " < '" + file + "'"));
  const std::string fifo = d + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  same(run_shell("(cat '" + file + "' > '" + fifo + "' &); '" + KB_CLI_EXE + "' sweep --space '" + fifo + "'" + args));
  const Result bad = run_shell("printf 'family: gemm\\naxes:\\n  m: [16, 0]\\n' | '" + std::string(KB_CLI_EXE) + "' sweep --space -");
  expect_input_error(bad, "<stdin>:3:");
  const Result empty = run_shell("'" + std::string(KB_CLI_EXE) + "' sweep --space - < /dev/null");
  expect_input_error(empty, "<stdin>:1:1");
  expect_input_error(run("sweep --space /dev/zero"), "a device or socket");
}

// Outputs a file-size limit (ulimit -f) would cut short: refused before any work when the
// estimate sees it (exit 4, nothing written), else the write fails with one line (exit 4),
// never a process killed part-way by SIGXFSZ.
TEST(HostileInputs, AFileSizeLimitIsOneLineNotASignal) {
  const std::string d = fresh_dir("kb_fsize");
  std::filesystem::create_directories(d);
  const std::string exe = std::string("'") + KB_CLI_EXE + "'";
  // 2^22 configs in 2^20 groups: about 3.7 GB of JSON, against a limit of 100 MB.
  Result r = run_shell("ulimit -f 200000; " + exe + " sweep decode --case 1:4 --s-kv 1:1048576 --group s_kv --json > '" + d +
                       "/big.json'");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("ulimit -f"), std::string::npos) << r.err;
  EXPECT_EQ(std::filesystem::file_size(d + "/big.json"), 0u);
  r = run_shell("ulimit -f 200000; " + exe + " sweep decode --case 1:4 --s-kv 1:1048576 --group s_kv --out '" + d + "/o.json'");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(d + "/o.json"));
  // Too small for the estimate to weigh (fewer than 1,024 groups): the write itself fails.
  for (const std::string& out : {" --json > '" + d + "/small.json'", " --out '" + d + "/small2.json' > /dev/null"}) {
    r = run_shell("ulimit -f 4; " + exe + " sweep gemm --m 128:8192:*2 --n 128 --k 128 --backend omp" + out);
    EXPECT_EQ(r.code, 4) << r.err;
    EXPECT_EQ(r.err.rfind("error: environment: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(d + "/small2.json"));
}

// --fast re-renders the committed results: a corrupt committed file is found before
// anything is written, and the error names it (not a copy of it).
TEST(HostileInputs, FastModeChecksTheCommittedResultsBeforeWriting) {
  if (!have_matplotlib()) GTEST_SKIP() << "no python3 with matplotlib: the figure scripts cannot run";
  const std::string d = fresh_dir("kb_hostile_fast");
  const std::string data = d + "/data", src = std::filesystem::path(kTopo).parent_path().string();
  std::filesystem::create_directories(data + "/docs/diagrams/gemm");
  std::filesystem::create_directories(data + "/tools");
  std::filesystem::create_directory_symlink(src + "/topologies", data + "/topologies");
  std::filesystem::create_directory_symlink(src + "/tools/plot", data + "/tools/plot");
  const std::string committed = data + "/docs/diagrams/gemm/gemm_sweep.json";
  std::filesystem::copy_file(src + "/docs/diagrams/gemm/gemm_sweep.csv", data + "/docs/diagrams/gemm/gemm_sweep.csv");
  const std::string good = [&] {
    std::ifstream in(src + "/docs/diagrams/gemm/gemm_sweep.json");
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }();
  // A NaN where a number is (Python's json would read it): the first value of a float field.
  std::string nan = good;
  const auto at = nan.find("\"achieved_tflops\": ") + 19;
  nan.replace(at, nan.find(',', at) - at, "NaN");
  for (const std::string& text : {std::string(""), good.substr(0, good.size() / 2), std::string("{\"schema\": 5}"),
                                  std::string(100000, '[') + std::string(100000, ']'), nan}) {
    std::ofstream(committed) << text;
    for (const char* how : {"--fast", ""}) {
      const Result r = run(std::string("run --bench milestone-1h-gemm ") + how + " --out '" + d + "/o'",
                           std::string("KERNBENCH_DATA_DIR='") + data + "' " + (*how ? "" : "MILESTONE_FAST=1 "));
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_NE(r.err.find(committed), std::string::npos) << r.err;
      EXPECT_FALSE(std::filesystem::exists(d + "/o")) << "wrote output for a corrupt source";
    }
  }
}

// The reference engine's size is known before its graph is built: a run above --max-ops
// (default 2^24 ops) is refused naming its estimate, the batched model still runs it, and
// a sweep's re-check passes over configs above the cap and says so.
TEST(HostileInputs, TheReferenceRunIsSizedBeforeItIsBuilt) {
  const std::string tiny_tiles = "eval gemm --m 256 --n 256 --k 256 --tile-m 1 --tile-n 1 --tile-k 1";
  const Result r = run(tiny_tiles);
  expect_input_error(r, "--max-ops 16777216: the reference engine would build up to 50397189 ops");
  EXPECT_EQ(run(tiny_tiles + " --engine batched --json").code, 0);
  const std::string mid = "eval gemm --m 256 --n 256 --k 256 --tile-m 16 --tile-n 16 --tile-k 16 --json";
  expect_input_error(run(mid + " --max-ops 12544"), "would build up to 12549 ops");  // 16 x 16 tiles x (3 x 16 + 1), + 5
  const json ok = run_json(mid + " --max-ops 12549");
  ASSERT_FALSE(ok.is_null());
  EXPECT_EQ(ok["reference"]["ops"], 12544);
  EXPECT_EQ(ok["parity"], true);
  // A re-check within the cap, and one that passes over every config.
  const std::string sweep = "sweep gemm --m 64,128 --n 64 --k 64 --tile-m 16 --tile-n 16 --tile-k 16 --recheck 2 ";
  const json all = run_json(sweep + "--json");
  ASSERT_FALSE(all.is_null());
  EXPECT_EQ(all["recheck"]["checked"].size(), 2u);
  EXPECT_TRUE(all["recheck"]["skipped"].empty());
  const json none = run_json(sweep + "--max-ops 100 --json");
  ASSERT_FALSE(none.is_null());
  EXPECT_TRUE(none["recheck"]["checked"].empty());
  ASSERT_EQ(none["recheck"]["skipped"].size(), 2u);
  EXPECT_GT(none["recheck"]["skipped"][0]["reference_ops"].get<std::int64_t>(), 100);
  const Result text = run(sweep + "--max-ops 100");
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("passed over 2 faster config(s) whose reference run would build more than --max-ops 100 ops"),
            std::string::npos) << text.out;
}

// A value no config of the space could use is refused; one some config can use is not.
TEST(HostileInputs, RanksAreBoundByTheLevelsSwept) {
  const std::string base = "sweep allreduce --bytes 4096 --algo ring --buffer sram --recheck 0 --json ";
  expect_input_error(run(base + "--level pe --ranks 65"), "--ranks 65: ranks '65': 65 is outside 2..8 for level pe");
  expect_input_error(run(base + "--level pe,cube --ranks 9"), "ranks '9': 9 is outside 2..8, the widest of the level values swept (pe)");
  const json mixed = run_json(base + "--level pe,hier --ranks 16");  // hier can use 16 PEs; pe cannot
  ASSERT_FALSE(mixed.is_null());
  EXPECT_EQ(mixed["valid"], 1);
  EXPECT_EQ(mixed["invalid"]["bad_ranks"], 1);
  expect_input_error(run(base + "--zip level,ranks=pe/8,cube/16"), "ranks '16': 16 is outside 2..8 for level cube");
  EXPECT_FALSE(run_json(base + "--zip level,ranks=pe/8,hier/16").is_null());
}

TEST(HostileInputs, TheCommandLineOverridesTheSpaceFile) {
  const std::string d = fresh_dir("kb_hostile_precedence");
  std::filesystem::create_directories(d);
  std::ofstream(d + "/s.yaml") << "family: gemm\naxes:\n  m: 64,128\n  n: 64\n  k: 64\n  pes: 1,2\n"
                                  "reductions:\n  top: 3\n  recheck: 3\n  histogram: true\nobjectives:\n  pareto: pes\n";
  const json file = run_json("sweep --space '" + d + "/s.yaml' --json");
  ASSERT_FALSE(file.is_null());
  EXPECT_EQ(file["recheck"]["checked"].size(), 3u);
  const json cli = run_json("sweep --space '" + d + "/s.yaml' --recheck 0 --top 1 --no-histogram --pareto none --json");
  ASSERT_FALSE(cli.is_null());
  EXPECT_TRUE(file.contains("pareto") && file.contains("histogram"));
  EXPECT_FALSE(cli.contains("recheck") && !cli["recheck"].is_null()) << cli["recheck"].dump();
  EXPECT_EQ(cli["top"].size(), 1u);
  EXPECT_FALSE(cli.contains("pareto")) << cli["pareto"].dump();
  EXPECT_FALSE(cli.contains("histogram")) << cli["histogram"].dump();
}

}  // namespace

// One rule for an integer's text wherever one is read: decimal digits, no leading zero (010
// reads as octal elsewhere). Axis lists, ranges, zip tuples, space files, eval's axes, --set,
// hardware axes, --top and --pp-layers each refuse it in one line; plain 0 and 10 pass.
namespace {
TEST(HostileInputs, OneIntegerRuleEverywhere) {
  const std::string d = fresh_dir("kb_hostile_integers");
  std::filesystem::create_directories(d);
  std::ofstream(d + "/space.yaml") << "family: gemm\naxes:\n  m: [16, 010]\n  n: 16\n  k: 16\n";
  std::ofstream(d + "/zip.yaml") << "family: gemm\nzip:\n  - names: [m, n, k]\n    tuples: [[16, 016, 16]]\n";
  const std::vector<std::string> cases = {
      "sweep gemm --m 16,010 --n 16 --k 16",
      "sweep gemm --m 08:64:*2 --n 16 --k 16",
      "sweep gemm --zip m,n,k=16/016/16",
      "sweep --space '" + d + "/space.yaml'",
      "sweep --space '" + d + "/zip.yaml'",
      "eval gemm --m 016 --n 16 --k 16",
      "eval gemm --m 16 --n 16 --k 16 --set pe.sram_kib=01024",
      "sweep gemm --m 16 --n 16 --k 16 --hw pe.sram_kib=512,01024",
      "sweep gemm --m 16 --n 16 --k 16 --top 05",
      "eval llm --model llama-tiny-random --pp 2 --pp-layers 01,1",
  };
  for (const std::string& c : cases) expect_refused(c, d, c.find("pp-layers") == std::string::npos ? "leading zero" : "");
  // A plain zero, and numbers with zeros inside, are numbers.
  EXPECT_EQ(run("eval gemm --m 10 --n 16 --k 16 --set cube.ipcq.latency_ns=0").code, 0);
  EXPECT_EQ(run("sweep gemm --zip m,n,k=10/16/16 --hw cube.ipcq.latency_ns=0,20 --recheck 0 --top 0").code, 0);
}
}  // namespace
