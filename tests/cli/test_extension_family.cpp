// A fourth family that exists only here, registered by the one KB_EXTENSION_FAMILY line
// below: a message passed along a chain of PEs, store and forward. Nothing outside this
// file names it, and eval, sweep, merge, the bad-input table and the study layer's
// document writer all serve it. This program is also the command line (`--cli ARGS`), so
// that the tests run it as a user would run kernbench-gpu.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cli_run.h"
#include "device/common/energy.h"
#include "device/common/hw.h"
#include "device/common/units.h"
#include "host/cli/commands.h"
#include "host/api/mpi.h"
#include "host/engine/engine.h"
#include "host/families/extension.h"
#include "host/study/bench_writer.h"
#include "host/study/study.h"
#include "host/topology/load.h"

namespace kbtest {

using kb::ps_t;

// ---- the model: pure KB_HD code, as a family's model is ----

struct ChainConfig {
  kb::HwConfig hw;
  std::int64_t bytes;
  std::int64_t hops;
};
struct ChainResult {
  std::int32_t status;
  std::int32_t pad;
  ps_t latency_ps;
  std::int64_t link_bytes;
  std::int64_t sram_read_bytes, sram_write_bytes;  // each hop reads one PE's SRAM and writes the next's
};
enum ChainStatus : std::int32_t { kChainOk = 0, kChainBadBytes, kChainBadHops, kChainStatusCount };
constexpr std::int64_t kChainMaxHops = 64, kChainMaxBytes = INT64_C(1) << 30;

KB_HD inline std::int32_t chain_check(const ChainConfig& c) {
  if (c.bytes < 1 || c.bytes > kChainMaxBytes) return kChainBadBytes;
  if (c.hops < 1 || c.hops > kChainMaxHops || c.hops > c.hw.total_pes()) return kChainBadHops;
  return kChainOk;
}
// One hop: the copy queue's transfer, then its latency; the next hop starts when it lands.
KB_HD inline ps_t chain_hop_ps(const ChainConfig& c) { return kb::transfer_ps(c.bytes, c.hw.ipcq.bandwidth_gbps); }

struct ChainModel {
  using Config = ChainConfig;
  using Result = ChainResult;
  static constexpr int kStatuses = kChainStatusCount;
  static constexpr bool kCounts = true;
  KB_HD static void complete(Config&) {}
  KB_HD static Result evaluate(const Config& c) {
    Result r{};
    r.status = chain_check(c);
    if (r.status != kChainOk) return r;
    r.latency_ps = c.hops * (chain_hop_ps(c) + c.hw.ipcq.latency_ns * kb::kPsPerNs);
    r.link_bytes = c.hops * c.bytes;
    r.sram_read_bytes = r.sram_write_bytes = c.hops * c.bytes;
    return r;
  }
  KB_HD static std::int64_t cost(std::int32_t, const Config& c, const Result&) { return c.hops; }
  KB_HD static kb::Actions actions(const Config&, const Result& r) {
    return kb::Actions{0, 0, r.sram_read_bytes, r.sram_write_bytes, 0, 0, r.link_bytes, 0, 0};
  }
  KB_HD static kb::Energy energy(const Config& c, const Result& r) { return kb::energy_of(c.hw, actions(c, r), r.latency_ps); }
};

// ---- the reference: the same chain as an op graph on the reference engine ----

ChainResult chain_reference(const ChainConfig& c) {
  kb::engine::Graph g;
  kb::engine::OpId prev = kb::engine::kNoOp;
  for (std::int64_t h = 0; h < c.hops; ++h) {
    const kb::engine::ResourceId q =
        g.add_resource("pe" + std::to_string(h) + ".ipcq", kb::engine::ResourceClass::ipcq, 0);
    kb::engine::Op op{};
    op.kind = kb::engine::OpKind::copy;
    op.resource = q;
    op.busy_ps = chain_hop_ps(c);
    op.latency_ps = c.hw.ipcq.latency_ns * kb::kPsPerNs;
    op.bytes = c.bytes;
    op.sram_read = op.sram_write = c.bytes;
    prev = g.add_op(op, {prev});
  }
  const kb::engine::RunResult run = kb::engine::simulate(g);
  ChainResult r{};
  r.latency_ps = run.summary.latency_ps;
  for (std::int64_t b : run.resource_bytes) r.link_bytes += b;
  r.sram_read_bytes = run.summary.sram_read_bytes, r.sram_write_bytes = run.summary.sram_write_bytes;
  return r;
}

// ---- the descriptor ----

kb::Family chain_descriptor(kb::batched::Family id) {
  using C = ChainConfig;
  using R = ChainResult;
  kb::Family f;
  f.name = "chain";
  f.description = "a message passed along a chain of PEs, store and forward (a test family)";
  f.id = id;
  f.hw_offset = offsetof(C, hw);
  f.axes = {kb::axis("bytes", "--bytes", "message bytes", offsetof(C, bytes)).range(1, kChainMaxBytes).defines_problem(),
            kb::axis("hops", "--hops", "PEs the message passes", offsetof(C, hops)).range(1, kChainMaxHops).default_to("2")};
  f.default_group = "bytes";
  f.statuses = {"ok", "bad_bytes", "bad_hops"};
  f.status_message = [](std::int32_t s, const void* c) {
    const C& x = *static_cast<const C*>(c);
    return s == kChainBadBytes ? "--bytes " + std::to_string(x.bytes) + ": not in 1..2^30"
                               : "--hops " + std::to_string(x.hops) + ": more than the machine's PEs or 64";
  };
  f.costs = {{"hops", "PEs passed"}};
  f.default_cost = "hops";
  f.columns = {kb::parity_figure<C, R>("latency_ps", "ps", "end-to-end time", &R::latency_ps, true),
               kb::parity_figure<C, R>("link_bytes", "bytes", "bytes over copy queues", &R::link_bytes, true)};
  kb::set_engines<C, R>(
      f, [](const C& c) { return chain_check(c); }, [](const C& c, const std::string*) { return chain_reference(c); },
      [](const C& c) { return c.hops; });
  kb::add_energy<ChainModel>(f);
  return f;
}

}  // namespace kbtest

KB_EXTENSION_FAMILY(chain, kbtest::ChainModel, kbtest::chain_descriptor);

namespace kbtest {
namespace {

using namespace kb::clitest;

// This program as the command line.
Result cli(const std::string& args) {
  return run_shell("'" + fs::read_symlink("/proc/self/exe").string() + "' --cli " + args);
}

ps_t expected_latency(std::int64_t bytes, std::int64_t hops, const kb::TopologySpec& t) {
  return hops * (kb::ceil_div(bytes * 1000, t.ipcq.bandwidth_gbps) + t.ipcq.latency_ns * 1000);
}

TEST(ExtensionFamily, IsRegisteredAfterTheListedOnes) {
#define KB_COUNT_FAMILY(id, Model) +1
  constexpr std::size_t kListed = 0 KB_FAMILIES(KB_COUNT_FAMILY);  // the list of families.h, then chain
#undef KB_COUNT_FAMILY
  ASSERT_EQ(kb::families().size(), kListed + 1);
  EXPECT_EQ(kb::families().back()->name, "chain");
  EXPECT_EQ(&kb::family("chain"), kb::families().back());
  EXPECT_TRUE(kb::batched::is_extension(kb::family("chain").id));
  const Result list = cli("list");
  EXPECT_EQ(list.code, 0) << list.err;
}

TEST(ExtensionFamily, EvalRunsBothEnginesAndComparesThem) {
  const kb::TopologySpec t = kb::load_topology(kTopo + "/default.yaml");
  const Result r = cli("eval chain --bytes 4096 --hops 3 --backend omp --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "kernbench-gpu/chain-eval");
  EXPECT_EQ(j["parity"], true);
  EXPECT_EQ(j["reference"]["latency_ps"], expected_latency(4096, 3, t));
  EXPECT_EQ(j["batched"]["latency_ps"], expected_latency(4096, 3, t));
  EXPECT_EQ(j["link_bytes"], 3 * 4096);
  // A config the family's check refuses is its status message, exit 2.
  expect_input_error(cli("eval chain --bytes 4096 --hops 65 --backend omp"), "--hops");
  // The default backend ("auto") is the OpenMP system for it, with or without a device.
  const Result deflt = cli("eval chain --bytes 4096 --hops 3 --engine batched --json");
  ASSERT_EQ(deflt.code, 0) << deflt.err;
  EXPECT_EQ(nlohmann::json::parse(deflt.out)["backend"], "omp");
  // The CUDA backend compiles the listed families only: asked for this one, it says so.
  const Result cuda = cli("eval chain --bytes 4096 --engine batched --backend cuda");
  EXPECT_NE(cuda.code, 0);
  EXPECT_EQ(cuda.out, "");
}

// Its model counts what it does (SRAM read and written and a copy queue per hop), so it has
// the energy columns and `--pareto energy` like the listed families, by hand here.
TEST(ExtensionFamily, CountsItsActionsAndHasEnergy) {
  const kb::TopologySpec t = kb::load_topology(kTopo + "/default.yaml");
  const kb::HwConfig& h = t.hw();
  const Result r = cli("eval chain --bytes 4096 --hops 3 --backend omp --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::int64_t moved = 3 * 4096, latency = expected_latency(4096, 3, t);
  EXPECT_EQ(j["sram_read_bytes"], moved);
  EXPECT_EQ(j["link_bytes_pe"], moved);
  const std::int64_t dynamic = moved * (h.sram_read_fj_per_byte + h.sram_write_fj_per_byte + h.ipcq.energy_fj_per_byte);
  const std::int64_t stat = kb::hw_static_mw(h) * latency;
  ASSERT_GT(dynamic, 0);
  ASSERT_GT(stat, 0);
  EXPECT_EQ(j["energy_fj"], dynamic + stat);
  EXPECT_EQ(j["energy_static_fj"], stat);
  EXPECT_EQ(j["energy_status"], "ok");
  EXPECT_EQ(j["reference"]["energy_fj"], j["batched"]["energy_fj"]);
  // More hops cost more energy and more time: every hop count is on the energy front.
  const Result s = cli("sweep chain --bytes 4096 --hops 1:4 --pareto energy --backend omp --json");
  ASSERT_EQ(s.code, 0) << s.err;
  const nlohmann::json sj = nlohmann::json::parse(s.out);
  ASSERT_TRUE(sj.contains("pareto")) << s.out.substr(0, 400);
}

TEST(ExtensionFamily, SweepShardsAndMergeServeIt) {
  const std::string d = fresh_dir("kb_extension_sweep");
  fs::create_directories(d);
  const std::string space = "sweep chain --bytes 1024,4096,65536 --hops 1:8 --backend omp --pareto hops --recheck 4";
  const Result whole = cli(space + " --out '" + d + "/whole.json' --csv '" + d + "/whole.csv'");
  ASSERT_EQ(whole.code, 0) << whole.err;
  const nlohmann::json w = load(d + "/whole.json");
  EXPECT_EQ(w["schema"], "kernbench-gpu/chain-space-sweep");
  EXPECT_EQ(w["evaluated"], 24);
  EXPECT_EQ(w["valid"], 24);
  ASSERT_EQ(w["best_per_group"].size(), 3u);
  EXPECT_EQ(w["best_per_group"][0]["best"]["hops"], 1);
  EXPECT_EQ(w["recheck"]["checked"].size(), 4u);
  EXPECT_EQ(w["recheck"]["ok"], true);
  for (int i = 0; i < 3; ++i) {
    const Result part =
        cli(space + " --shard " + std::to_string(i) + "/3 --out '" + d + "/part" + std::to_string(i) + ".json'");
    ASSERT_EQ(part.code, 0) << part.err;
  }
  const Result merged = cli("merge '" + d + "/part0.json' '" + d + "/part1.json' '" + d + "/part2.json' --out '" + d +
                            "/merged.json'");
  ASSERT_EQ(merged.code, 0) << merged.err;
  const nlohmann::json m = load(d + "/merged.json");
  for (const char* key : {"evaluated", "valid", "latency_checksum", "best_per_group", "top", "pareto", "recheck"})
    EXPECT_EQ(m[key], w[key]) << key;
}

TEST(ExtensionFamily, EveryMalformedAxisValueIsOneLineExitTwo) {
  const std::vector<std::string> cases = bad_axis_values(kb::family("chain"));
  ASSERT_EQ(cases.size(), 2u * 6u * 2u);
  for (const std::string& args : cases) {
    SCOPED_TRACE(args);
    expect_input_error(cli(args), "error: ");
  }
}

TEST(ExtensionFamily, TheStudyLayerWritesItsDocument) {
  const std::string d = fresh_dir("kb_extension_study");
  kb::BenchInfo info;
  info.name = "chain-study";
  info.json = "chain.json";
  info.schema = "kernbench-gpu/chain-study";
  info.schema_version = "1.0.0";
  kb::BenchContext ctx;
  ctx.bench = &info;
  ctx.topology = kb::load_topology(kTopo + "/default.yaml");
  ctx.out_dir = d;
  kb::Study study(kb::family("chain"), kb::BackendKind::omp);
  for (std::int64_t hops = 1; hops <= 4; ++hops) {
    ChainConfig c{};
    c.hw = ctx.topology.hw();
    c.bytes = 2048, c.hops = hops;
    study.add_config(c, {"h" + std::to_string(hops)});
  }
  ChainConfig wide{};
  wide.hw = ctx.topology.hw();
  wide.bytes = 2048, wide.hops = 1000;  // a point that does not fit: reported, not simulated
  study.add_config(wide, {"wide"});
  study.run(kb::Rejected::invalid);
  study.require_parity();
  EXPECT_EQ(study.checked(), 4u);
  EXPECT_EQ(study.invalid(), 1u);
  const kb::Table table = study.table({{"point", "", kb::ColType::text}}, true);
  nlohmann::json doc = kb::bench_document(ctx, study);
  doc["configs"] = table.json();
  kb::write_bench(ctx, doc, table);
  const nlohmann::json j = load(d + "/chain.json");
  EXPECT_EQ(j["schema"], "kernbench-gpu/chain-study");
  EXPECT_EQ(j["bench"], "chain-study");
  EXPECT_EQ(j["parity"]["ok"], true);
  EXPECT_EQ(j["parity"]["checked"], 4);
  ASSERT_EQ(j["configs"].size(), 4u);
  EXPECT_EQ(j["configs"][2]["point"], "h3");
  EXPECT_EQ(j["configs"][2]["hops"], 3);
  EXPECT_EQ(j["configs"][2]["latency_ps"], expected_latency(2048, 3, ctx.topology));
  EXPECT_EQ(j["configs"][2]["reference_latency_ps"], j["configs"][2]["latency_ps"]);
  std::ifstream csv(d + "/chain.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("point,bytes,hops", 0), 0u) << header;
}

}  // namespace
}  // namespace kbtest

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--cli") == 0) {
    argv[1] = argv[0];
    int n = argc - 1;
    char** args = argv + 1;
    kb::mpi_start(&n, &args);
    const int rc = kb::cli_main(n, args);
    kb::mpi_stop();
    return rc;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
