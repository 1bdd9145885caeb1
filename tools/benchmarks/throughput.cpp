// Throughput of the two engines: configs/s of the batched model per backend, events/s
// and configs/s of the reference engine, on the milestone shapes and a 2048-tile config.
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <iostream>
#include <sstream>

#include "benches/milestone_1h_ccl.h"
#include "device/common/kernel_memo.h"
#include "device/models/collective/allreduce_model.h"
#include "benches/milestone_1h_gemm.h"
#include "benches/milestone_gqa_decode.h"
#include "host/api/eval.h"
#include "host/api/serve.h"
#include "host/api/serve_sweep.h"
#include "host/cli/commands.h"
#include "host/common/output.h"
#include "host/families/family.h"
#include "host/families/llm/llm_barrier.h"
#include "host/llm/model_file.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"

namespace kb {
namespace {

TopologySpec topo() { return load_topology(data_dir() + "/topologies/default.yaml"); }

// The 2048-tile config: square-4096 on 8 PEs of one cube.
GemmConfig big() {
  const auto& s = gemm_milestone_shapes().back();
  return gemm_milestone_params(s, gemm_milestone_variants()[2]);
}

std::vector<GemmConfig> milestone_configs(const TopologySpec& t, std::size_t copies) {
  std::vector<GemmConfig> c;
  while (c.size() < copies)
    for (const Shape& s : gemm_milestone_shapes())
      for (const Variant& v : gemm_milestone_variants()) c.push_back(gemm_config(t, gemm_milestone_params(s, v)));
  c.resize(copies);
  return c;
}

void run_batched(benchmark::State& state, BackendKind b, std::vector<GemmConfig> configs, int threads) {
  std::vector<GemmResult> out(configs.size());
  for (auto _ : state) {
    eval_batch(b, batched::Family::gemm, configs.data(), configs.size(), out.data(), threads);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}

void BM_BatchedMilestoneOmp(benchmark::State& state) {
  run_batched(state, BackendKind::omp, milestone_configs(topo(), 1 << 16), static_cast<int>(state.range(0)));
}
// Threads: 1, 2, and 0 = every core (what a GPU machine's 16 cores give, for comparison).
BENCHMARK(BM_BatchedMilestoneOmp)->ArgName("threads")->Arg(1)->Arg(2)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Batched2048TilesOmp(benchmark::State& state) {
  run_batched(state, BackendKind::omp, std::vector<GemmConfig>(1 << 14, gemm_config(topo(), big())),
              static_cast<int>(state.range(0)));
}
BENCHMARK(BM_Batched2048TilesOmp)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_BatchedMilestoneCuda(benchmark::State& state) {
  std::string why;
  if (batched::cuda_device_count(&why) == 0) {
    state.SkipWithError(why.c_str());
    return;
  }
  run_batched(state, BackendKind::cuda, milestone_configs(topo(), 1 << 22), 0);
}
BENCHMARK(BM_BatchedMilestoneCuda)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Batched2048TilesCuda(benchmark::State& state) {
  std::string why;
  if (batched::cuda_device_count(&why) == 0) {
    state.SkipWithError(why.c_str());
    return;
  }
  run_batched(state, BackendKind::cuda, std::vector<GemmConfig>(1 << 20, gemm_config(topo(), big())), 0);
}
BENCHMARK(BM_Batched2048TilesCuda)->UseRealTime()->Unit(benchmark::kMillisecond);

// Reference engine on one thread: the whole 2048-tile GEMM (graph built and simulated).
void BM_Reference2048Tiles(benchmark::State& state) {
  const TopologySpec t = topo();
  const GemmConfig p = big();
  std::int64_t events = 0;
  for (auto _ : state) {
    const GemmReference r = run_gemm_reference(t, p);
    events += r.report.summary.events;
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Reference2048Tiles)->Unit(benchmark::kMillisecond);

// Reference engine on every milestone config, one after another.
void BM_ReferenceMilestone(benchmark::State& state) {
  const TopologySpec t = topo();
  std::int64_t events = 0, configs = 0;
  for (auto _ : state)
    for (const Shape& s : gemm_milestone_shapes())
      for (const Variant& v : gemm_milestone_variants()) {
        events += run_gemm_reference(t, gemm_milestone_params(s, v)).report.summary.events;
        ++configs;
      }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReferenceMilestone)->Unit(benchmark::kMillisecond);

// The typed API's eval of a small GEMM (256^3 on one PE), as Python's kb.eval runs it: the
// request checked, the topology (read, and parsed the first time), both engines, and the
// result's document. tools/benchmarks/python_eval.py times the same call from Python.
void BM_ApiEvalSmallGemm(benchmark::State& state) {
  api::EvalRequest r;
  for (const Family* f : families())
    if (f->name == "gemm") r.family = f;
  r.axes = {{"m", "256"}, {"n", "256"}, {"k", "256"}};
  r.engine = state.range(0) == 0 ? "both" : state.range(0) == 1 ? "batched" : "reference";
  for (auto _ : state) {
    const nlohmann::json doc = api::eval_json(api::run_eval(r));
    benchmark::DoNotOptimize(doc.size());
  }
  state.SetLabel(r.engine);
}
BENCHMARK(BM_ApiEvalSmallGemm)->ArgName("engine")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

// The sweep path end to end, as the README's 10^7-config GEMM sweep runs it: the command
// line's words, the space built and estimated, every config evaluated on every core, the
// reductions (best per group, top 10, histogram) and the report and CSV written to files.
void BM_SweepReadmeGemm(benchmark::State& state) {
  const std::string dir = std::filesystem::temp_directory_path() / "kb_bench_sweep";
  std::filesystem::create_directories(dir);
  const std::vector<std::string> words = {
      "kernbench-gpu", "sweep", "gemm", "--m", "128:8192:*2", "--n", "1024:16384:*2", "--k", "1024:16384:*2",
      "--tile-m", "32:512:*2", "--tile-n", "32:512:*2", "--tile-k", "32:1024:*2", "--pes", "1:8", "--cubes", "1:8",
      "--buffers", "1,2", "--dataflow", "os,ws,is", "--recheck", "0", "--out", dir + "/sweep.json", "--csv",
      dir + "/best.csv"};
  std::ostringstream out, err;  // the tables the command prints, kept from the benchmark's own output
  std::streambuf* const old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* const old_err = std::cerr.rdbuf(err.rdbuf());
  for (auto _ : state) cli_run(words);
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  state.counters["configs/s"] = benchmark::Counter(10080000.0 * state.iterations(), benchmark::Counter::kIsRate);
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SweepReadmeGemm)->UseRealTime()->Unit(benchmark::kSecond);

// Whole models on tuned GEMM kernels (--kernel-tuning best) against the automatic tiling,
// cold: every iteration starts with no tuning kept, as a fresh command does. Space 0: the
// milestone's LLaMA-3.1-70B decode on ring8 (batch 1-256, contexts 4K and 32K, every
// algorithm and attention case at tp 8 over SIPs; 10,240 configs, 1,280 distinct GEMMs).
// Space 1: a hardware sweep of 64 designs (array rows 16-128, HBM 410-3277 GB/s, SRAM 256 KiB-2
// MiB) of batch 1-256 by octaves at context 4K (11,520 configs). The counter is every config
// evaluated a second, valid or not.
void BM_SweepLlmTuning(benchmark::State& state) {
  const bool tuned = state.range(0) == 0;
  const bool designs = state.range(1) == 1;
  std::vector<std::string> words = {"kernbench-gpu", "sweep", "llm", "--model", "llama-3.1-70b", "--topology",
                                    data_dir() + "/topologies/ring8.yaml", "--tp", "8", "--tp-level", "sip", "--pp", "1",
                                    "--recheck", "0", "--no-histogram", "--kernel-tuning", tuned ? "best" : "auto"};
  const std::vector<std::string> space =
      designs ? std::vector<std::string>{"--batch", "1,2,4,8,16,32,64,128,256", "--context", "4096", "--hw",
                                         "pe.matrix.rows=16,32,64,128", "--hw", "cube.hbm.bandwidth_gbps=410,819,1638,3277",
                                         "--hw", "pe.sram_kib=256,512,1024,2048"}
              : std::vector<std::string>{"--batch", "1:256", "--context", "4096,32768"};
  words.insert(words.end(), space.begin(), space.end());
  const double configs = designs ? 9.0 * 64 * 20 : 256.0 * 2 * 20;
  std::ostringstream out, err;
  std::streambuf* const old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* const old_err = std::cerr.rdbuf(err.rdbuf());
  for (auto _ : state) {
    forget_shared_memos();
    cli_run(words);
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  state.SetLabel(std::string(tuned ? "best" : "auto") + (designs ? ", 64 designs" : ", milestone decode"));
  state.counters["configs/s"] = benchmark::Counter(configs * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepLlmTuning)->ArgNames({"auto", "designs"})->Args({0, 0})->Args({1, 0})->Args({0, 1})->Args({1, 1})
    ->UseRealTime()->Unit(benchmark::kMillisecond);

// A mixture-of-experts mapping sweep, cold (no tuning kept): Mixtral-8x7B decode on ring8,
// batch 64 at context 4K routed zipf:1.2, over the MoE axes and the mapping: tp (the expert-
// parallel ranks) 1-8 over cubes or SIPs, attention tensor- or data-parallel, 0, 8 or 16
// redundant copies, fp8 or fp16 dispatch, every allreduce algorithm and attention case (1,920
// configs). Arg 1: the same warm (the tuning kept from a first run). The counter is every
// config evaluated a second, valid or not.
void BM_SweepLlmMoe(benchmark::State& state) {
  const bool warm = state.range(0) == 1;
  const std::vector<std::string> words = {
      "kernbench-gpu", "sweep", "llm", "--model", "mixtral-8x7b", "--topology", data_dir() + "/topologies/ring8.yaml",
      "--batch", "64", "--context", "4096", "--routing", "zipf:1.2", "--tp", "1,2,4,8", "--tp-level", "cube,sip",
      "--attention", "tp,dp", "--redundant-experts", "0,8,16", "--dispatch-bytes", "1,2", "--attention-case", "1,2,3,4",
      "--pp", "1", "--recheck", "0", "--no-histogram"};
  const double configs = 4.0 * 2 * 2 * 3 * 2 * 5 * 4;
  std::ostringstream out, err;
  std::streambuf* const old_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* const old_err = std::cerr.rdbuf(err.rdbuf());
  if (warm) cli_run(words);
  for (auto _ : state) {
    if (!warm) forget_shared_memos();
    cli_run(words);
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  state.SetLabel(warm ? "warm" : "cold");
  state.counters["configs/s"] = benchmark::Counter(configs * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepLlmMoe)->ArgName("warm")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// Issue-sized MoE sweeps with routing as an axis (docs/model.md section 13.11): each shipped
// many-expert model on ring8, batch 64 decoding at contexts 1K-32K, expert-parallel over 4 or
// 8 cubes, SIPs or PEs (hier), routed balanced, uniform, zipf 1.0 or 1.2 with seeds 1-4,
// 0/8/16 redundant copies, fp8 or fp16 dispatch, every attention case and allreduce algorithm
// (69,120 configs). Cold:
// the shared memos forgotten before each sweep. The counter is valid configs a second (the
// target is 10^5 on 2 cores); configs/s counts every one.
void BM_SweepLlmMoeModels(benchmark::State& state) {
  static const char* const kModels[] = {"deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "llama-4-scout-17b-16e"};
  const std::string model = kModels[state.range(0)];
  const std::vector<std::string> words = {
      "kernbench-gpu", "sweep", "llm", "--model", model, "--topology", data_dir() + "/topologies/ring8.yaml", "--batch", "64",
      "--context", "1024:32768:*2", "--ep", "4,8", "--ep-level", "cube,sip,hier", "--routing", "balanced,uniform,zipf:1.0,zipf:1.2",
      "--routing-seed", "1:4", "--redundant-experts", "0,8,16", "--dispatch-bytes", "1,2", "--pp", "1", "--recheck", "0",
      "--no-histogram", "--top", "0", "--json"};
  std::ostringstream err;
  std::streambuf* const old_err = std::cerr.rdbuf(err.rdbuf());
  double valid = 0, configs = 0;
  for (auto _ : state) {
    forget_shared_memos();
    std::ostringstream out;
    std::streambuf* const old_out = std::cout.rdbuf(out.rdbuf());
    cli_run(words);
    std::cout.rdbuf(old_out);
    const nlohmann::json j = nlohmann::json::parse(out.str());
    valid += j["valid"].get<double>(), configs += j["evaluated"].get<double>();
  }
  std::cerr.rdbuf(old_err);
  state.SetLabel(model);
  state.counters["valid/s"] = benchmark::Counter(valid, benchmark::Counter::kIsRate);
  state.counters["configs/s"] = benchmark::Counter(configs, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepLlmMoeModels)->ArgName("model")->DenseRange(0, 3)->UseRealTime()->Unit(benchmark::kMillisecond);

// A serving run (`serve`, docs/model.md section 13.16): LLaMA-3.1-70B on ring8, tp 8 over SIPs
// (arg 0), or disaggregated 2P:2D at tp 2 (arg 1); 1,000 requests of Poisson arrivals at 1 a
// second, prompts lognormal 1,024, outputs 128, no re-check. Cold: the kernel memos forgotten
// before each run (a serve command's own). The counters: serving configs (whole runs) and
// engine steps a second. sweep serve's target is 10^4 configs/s.
void BM_ServeRun(benchmark::State& state) {
  const bool disagg = state.range(0) == 1;
  api::ServeRequest r;
  r.llm.family = &family("llm");
  r.llm.presets["--model"] = "llama-3.1-70b";
  r.llm.axes["tp"] = disagg ? "2" : "8";
  r.llm.axes["tp_level"] = "sip";
  r.llm.topology.path = data_dir() + "/topologies/ring8.yaml";
  r.arrivals = "poisson:1", r.isl = "lognormal:1024:0.6", r.osl = "128", r.requests = "1000", r.recheck = "0";
  if (disagg) r.disagg = "2:2";
  double steps = 0;
  for (auto _ : state) {
    forget_shared_memos();
    steps += api::run_serve(r)["steps"]["count"].get<double>();
  }
  state.SetLabel(disagg ? "disagg 2P:2D" : "aggregated tp8");
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["steps/s"] = benchmark::Counter(steps, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ServeRun)->ArgName("disagg")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// `sweep serve` (docs/model.md section 13.18): LLaMA-3.1-70B on ring8 at tp 8 over SIPs, 1,000
// requests each (as BM_ServeRun's), over 4 arrival rates x 3 max-num-seqs: 12 configs a sweep
// of one mapping, its step model shared by the runs of a thread. Cold: the kernel memos
// forgotten before each sweep. sweep serve's target is 10^4 configs/s.
void BM_SweepServe(benchmark::State& state) {
  api::ServeSweepRequest q;
  api::ServeRequest& r = q.serve;
  r.llm.family = &family("llm");
  r.llm.presets["--model"] = "llama-3.1-70b";
  r.llm.axes["tp"] = "8";
  r.llm.axes["tp_level"] = "sip";
  r.llm.topology.path = data_dir() + "/topologies/ring8.yaml";
  r.arrivals = "poisson:0.5,poisson:1,poisson:2,poisson:3", r.max_num_seqs = "64,128,256";
  r.isl = "lognormal:1024:0.6", r.osl = "128", r.requests = "1000", r.recheck = "0";
  double configs = 0;
  for (auto _ : state) {
    forget_shared_memos();
    configs += api::sweep_serve(q)["counts"]["configs"].get<double>();
  }
  state.counters["configs/s"] = benchmark::Counter(configs, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepServe)->UseRealTime()->Unit(benchmark::kMillisecond);

// Allreduce: the 891 milestone-1h-ccl allreduce points (every level, algorithm, 2-8 ranks per
// level, hier on 16 and 64 PEs, both buffer kinds, 1 KiB - 1 GiB), repeated.
std::vector<AllreduceConfig> ccl_configs(std::size_t copies) {
  std::vector<AllreduceConfig> points;
  for (const AllreduceConfig& p : ccl_milestone_configs(topo(), load_topology(data_dir() + "/topologies/ring8.yaml")))
    if (p.op == static_cast<std::int64_t>(CollOp::allreduce)) points.push_back(p);
  std::vector<AllreduceConfig> c;
  while (c.size() < copies) c.insert(c.end(), points.begin(), points.end());
  c.resize(copies);
  return c;
}

void run_batched_ccl(benchmark::State& state, BackendKind b, std::vector<AllreduceConfig> configs, int threads) {
  std::vector<AllreduceResult> out(configs.size());
  for (auto _ : state) {
    eval_batch(b, batched::Family::allreduce, configs.data(), configs.size(), out.data(), threads);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}

void BM_BatchedCclMilestoneOmp(benchmark::State& state) {
  run_batched_ccl(state, BackendKind::omp, ccl_configs(1 << 14), static_cast<int>(state.range(0)));
}
BENCHMARK(BM_BatchedCclMilestoneOmp)->ArgName("threads")->Arg(1)->Arg(2)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

// A shuffled random mix of valid collective configs: every op, level (hier too), algorithm
// that runs the op, buffer and 1-64 chunks, 2-64 ranks, sizes log-uniform from 2 B to 1 GiB,
// on the default topology and ring8 (a fixed seed: the same mix at every run). Its configs/s
// against the GEMM milestone's (BM_BatchedMilestoneOmp) is the communication model's speed on
// any mix.
std::vector<AllreduceConfig> collective_mix(std::size_t n) {
  const HwConfig hws[] = {topo().hw(), load_topology(data_dir() + "/topologies/ring8.yaml").hw()};
  std::uint64_t x = 20261206;
  auto pick = [&](std::int64_t lo, std::int64_t hi) {  // splitmix64
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull, z = (z ^ (z >> 27)) * 0x94d049bb133111ebull, z ^= z >> 31;
    return lo + static_cast<std::int64_t>(z % static_cast<std::uint64_t>(hi - lo + 1));
  };
  std::vector<AllreduceConfig> c;
  while (c.size() < n) {
    AllreduceConfig a{};
    a.hw = hws[pick(0, 1)];
    a.op = pick(0, kCollOps - 1), a.level = pick(0, kCollLevels - 1), a.algo = pick(0, kCollAlgos - 1);
    a.buffer = pick(0, 1), a.chunks = pick(0, 1) ? 1 : pick(1, 64);
    a.ranks = a.level == static_cast<std::int64_t>(CollLevel::hier) ? INT64_C(8) << pick(0, 3) : pick(2, 8);
    a.bytes = 2 * (INT64_C(1) << pick(0, 29)) + 2 * pick(0, 1) * pick(0, 1 << 10);
    if (a.op == static_cast<std::int64_t>(CollOp::alltoall)) a.bytes = (a.bytes / (2 * a.chunks * a.ranks) + 1) * 2 * a.chunks * a.ranks;
    if (allreduce_check(a) == kArOk) c.push_back(a);
  }
  return c;
}

void BM_BatchedCollectiveMixOmp(benchmark::State& state) {
  run_batched_ccl(state, BackendKind::omp, collective_mix(1 << 14), static_cast<int>(state.range(0)));
}
BENCHMARK(BM_BatchedCollectiveMixOmp)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// Each evaluator of a collective level against the others (docs/model.md section 11.13): the
// model on one thread, with only the evaluators the scratch's `Paths` names, on the
// milestone mix (mix 0) or the random mix (mix 1). paths: 0 every one, 1 no replay, 2 no
// ring closed form, 3 the general walk with depths only, 4 no general walk (nor replay),
// 5 the simulator alone (its certificate passes, else events), 6 its events alone, 7 neither
// replay nor ring (what a GPU has, less the ring). Every variant's results are checked
// against the first's.
template <int P>
void eval_paths(const std::vector<AllreduceConfig>& configs, std::vector<AllreduceResult>& out) {
  static thread_local auto sim = std::make_unique<ar_detail::SimWith<P>>();
  for (std::size_t i = 0; i < configs.size(); ++i) out[i] = allreduce_model(configs[i], *sim);
}

void BM_CollectivePaths(benchmark::State& state) {
  const std::vector<AllreduceConfig> configs = state.range(0) == 0 ? ccl_configs(1 << 13) : collective_mix(1 << 13);
  using Eval = void (*)(const std::vector<AllreduceConfig>&, std::vector<AllreduceResult>&);
  const Eval evals[] = {eval_paths<kArAllPaths>, eval_paths<kArNoReplay>, eval_paths<kArAllPaths & ~kArPathRing>,
                        eval_paths<kArAllPaths & ~kArPathFlat>, eval_paths<kArSimulatorOnly>, eval_paths<kArPathFast>,
                        eval_paths<kArEventsOnly>, eval_paths<kArNoReplay & ~kArPathRing>};
  std::vector<AllreduceResult> want(configs.size()), out(configs.size());
  evals[0](configs, want);
  const Eval eval = evals[state.range(1)];
  for (auto _ : state) {
    eval(configs, out);
    benchmark::DoNotOptimize(out.data());
  }
  if (std::memcmp(want.data(), out.data(), out.size() * sizeof out[0]) != 0) state.SkipWithError("results differ");
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CollectivePaths)
    ->ArgNames({"mix", "paths"})
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3, 4, 5, 6, 7}})
    ->Unit(benchmark::kMillisecond);

void BM_BatchedCclMilestoneCuda(benchmark::State& state) {
  std::string why;
  if (batched::cuda_device_count(&why) == 0) {
    state.SkipWithError(why.c_str());
    return;
  }
  run_batched_ccl(state, BackendKind::cuda, ccl_configs(1 << 18), 0);
}
BENCHMARK(BM_BatchedCclMilestoneCuda)->UseRealTime()->Unit(benchmark::kMillisecond);

// Reference engine on every milestone-1h-ccl point, one after another.
void BM_ReferenceCclMilestone(benchmark::State& state) {
  std::vector<AllreduceConfig> points;  // the allreduce points, as BM_BatchedCclMilestoneOmp
  for (const AllreduceConfig& p : ccl_milestone_configs(topo(), load_topology(data_dir() + "/topologies/ring8.yaml")))
    if (p.op == static_cast<std::int64_t>(CollOp::allreduce)) points.push_back(p);
  std::int64_t configs = 0;
  for (auto _ : state)
    for (const AllreduceConfig& c : points) {
      benchmark::DoNotOptimize(allreduce_reference(c, nullptr));
      ++configs;
    }
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReferenceCclMilestone)->Unit(benchmark::kMillisecond);

// Decode: the 77 milestone-gqa-decode-4cases points (four cases at the headline shape, case 4
// with allreduce, S_kv 1K-1M and batch 1-64 per case), repeated.
std::vector<DecodeConfig> decode_configs(std::size_t copies) {
  const std::vector<DecodeConfig> points = decode_milestone_configs(topo());
  std::vector<DecodeConfig> c;
  while (c.size() < copies) c.insert(c.end(), points.begin(), points.end());
  c.resize(copies);
  return c;
}

void run_batched_decode(benchmark::State& state, BackendKind b, std::vector<DecodeConfig> configs, int threads) {
  std::vector<DecodeResult> out(configs.size());
  for (auto _ : state) {
    eval_batch(b, batched::Family::decode, configs.data(), configs.size(), out.data(), threads);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}

void BM_BatchedDecodeMilestoneOmp(benchmark::State& state) {
  run_batched_decode(state, BackendKind::omp, decode_configs(1 << 16), static_cast<int>(state.range(0)));
}
BENCHMARK(BM_BatchedDecodeMilestoneOmp)->ArgName("threads")->Arg(1)->Arg(2)->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_BatchedDecodeMilestoneCuda(benchmark::State& state) {
  std::string why;
  if (batched::cuda_device_count(&why) == 0) {
    state.SkipWithError(why.c_str());
    return;
  }
  run_batched_decode(state, BackendKind::cuda, decode_configs(1 << 20), 0);
}
BENCHMARK(BM_BatchedDecodeMilestoneCuda)->UseRealTime()->Unit(benchmark::kMillisecond);

// Reference engine on each case's headline panel (range(0) = the case).
void BM_ReferenceDecodeCase(benchmark::State& state) {
  const DecodeConfig c = decode_headline(topo(), state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(decode_reference(c, nullptr));
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ReferenceDecodeCase)->ArgName("case")->DenseRange(1, 4)->Unit(benchmark::kMillisecond);

// Whole models: LLaMA-3.1-70B decode steps on ring8 (8 SIPs), every config distinct, in the
// order a sweep walks them (the shape outside, the mapping inside): batch 1-256 and context
// 4K and 32K, then every allreduce algorithm and attention case at tp 8 over SIPs; 10,240
// configs, each evaluated once a pass. (A mapping search repeats kernels across configs: a
// layer's GEMMs do not depend on the algorithm or the case; the kernel memo keeps them.)
std::vector<LlmConfig> llm_configs() {
  const TopologySpec ring = load_topology(data_dir() + "/topologies/ring8.yaml");
  const LlmShape m = load_llm_model("llama-3.1-70b").shape;
  std::vector<LlmConfig> points;
  for (std::int64_t batch = 1; batch <= 256; ++batch)
    for (std::int64_t context : {4096, 32768})
      for (std::int64_t algo = 0; algo < kCollAlgos; ++algo)
        for (std::int64_t kase = 1; kase <= 4; ++kase) {
          LlmConfig c{};
          c.hw = ring.hw();
          c.hidden = m.hidden, c.intermediate = m.intermediate, c.heads = m.heads, c.kv_heads = m.kv_heads;
          c.head_dim = m.head_dim, c.layers = m.layers, c.vocab = m.vocab, c.tied = m.tied;
          c.weight_bytes = c.kv_bytes = 2;
          c.phase = static_cast<std::int64_t>(LlmPhase::decode), c.batch = batch, c.context = context, c.prompt = 1;
          c.tp = 8, c.tp_level = static_cast<std::int64_t>(CollLevel::sip), c.pp = 1, c.microbatches = 1;
          c.tp_algo = algo, c.attention_case = kase, c.layers_run = 0;
          // The model's own cost, as before tuning existed; BM_SweepLlmTuning measures tuning.
          c.kernel_tuning = static_cast<std::int64_t>(LlmKernelTuning::automatic);
          points.push_back(c);
        }
  return points;
}

void BM_BatchedLlmDecodeOmp(benchmark::State& state) {
  const std::vector<LlmConfig> configs = llm_configs();
  std::vector<LlmResult> out(configs.size());
  for (auto _ : state) {
    eval_batch(BackendKind::omp, batched::Family::llm, configs.data(), configs.size(), out.data(), static_cast<int>(state.range(0)));
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BatchedLlmDecodeOmp)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

// Sweep: configs generated from a flat index and reduced to the best per shape.
batched::Space sweep_space() {
  const Family& f = family("gemm");
  batched::Space s = make_space<GemmModel>(gemm_config(topo(), gemm_request()));
  const std::pair<const char*, std::vector<std::int64_t>> axes[] = {
      {"m", {8, 32, 2048}}, {"n", {1024, 10240}}, {"k", {8192}}, {"tile_m", {8, 32, 64, 128}}, {"tile_n", {64, 128, 256}},
      {"tile_k", {64, 128, 256, 512}}, {"pes", {1, 2, 4, 8}}, {"cubes", {1, 2, 4, 8}}, {"buffers", {1, 2}}};
  for (const auto& [name, values] : axes) s.axes.push_back({static_cast<std::int64_t>(f.axis(name)->offset), values});
  s.axes.push_back({static_cast<std::int64_t>(offsetof(GemmConfig, hw) + offsetof(HwConfig, dataflow)), {0, 1, 2}});
  s.group_axes = 3;
  return s;
}

// range(0) = 1 adds every optional reduction: top 100, a Pareto front per group over PEs
// used, and the latency histogram.
batched::Reductions reductions(std::int64_t all) {
  return all ? batched::Reductions{100, kGemmCostPes, true, {}} : batched::Reductions{};
}

void BM_SweepOmp(benchmark::State& state) {
  const batched::Space s = sweep_space();
  const batched::Reductions red = reductions(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(sweep(BackendKind::omp, s, 1 << 16, 2, red));
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(s.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepOmp)->ArgName("reductions")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// The same space 256 times over (a leading axis of 256 shapes): 14 M configs, generated and
// reduced on the device in chunks of 2^22.
void BM_SweepCuda(benchmark::State& state) {
  std::string why;
  if (batched::cuda_device_count(&why) == 0) {
    state.SkipWithError(why.c_str());
    return;
  }
  batched::Space s = sweep_space();
  s.axes[2].values.clear();
  for (std::int64_t k = 32; k <= 32 * 256; k += 32) s.axes[2].values.push_back(k);
  const batched::Reductions red = reductions(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(sweep(BackendKind::cuda, s, 1 << 22, 0, red));
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(s.size()) * state.iterations(),
                                                   benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SweepCuda)->ArgName("reductions")->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);

// What the barrier between a step's kernels costs (docs/adr/0019-whole-models.md, item 7):
// one layer of LLaMA-3.1-8B on one SIP rank of the default topology, context 4096, attention
// case 1, as timed and composed without barriers; arg 0: decode at batch 1 or 64 (1, 64), or
// prefill of 1 or 4 prompts of 512 tokens (-1, -4). The counters are the layer's picoseconds.
void BM_LlmBarrierCost(benchmark::State& state) {
  const LlmShape m = load_llm_model("llama-3.1-8b").shape;
  LlmConfig c{};
  c.hw = load_topology(data_dir() + "/topologies/default.yaml").hw();
  c.hidden = m.hidden, c.intermediate = m.intermediate, c.heads = m.heads, c.kv_heads = m.kv_heads;
  c.head_dim = m.head_dim, c.layers = m.layers, c.vocab = m.vocab, c.tied = m.tied;
  c.weight_bytes = c.kv_bytes = 2;
  const bool prefill = state.range(0) < 0;
  c.phase = static_cast<std::int64_t>(prefill ? LlmPhase::prefill : LlmPhase::decode);
  c.batch = prefill ? -state.range(0) : state.range(0), c.context = 4096, c.prompt = prefill ? 512 : 1;
  c.tp = 1, c.tp_level = static_cast<std::int64_t>(CollLevel::sip), c.pp = 1, c.microbatches = 1, c.attention_case = 1;
  LlmBarrierCost b;
  for (auto _ : state) b = llm_barrier_cost(c);
  state.counters["with_barrier_ps"] = static_cast<double>(b.with_barrier);
  state.counters["tensor_order_ps"] = static_cast<double>(b.tensor_order);
  state.counters["pe_order_ps"] = static_cast<double>(b.pe_order);
}
BENCHMARK(BM_LlmBarrierCost)->ArgName("batch")->Arg(1)->Arg(64)->Arg(-1)->Arg(-4)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kb

BENCHMARK_MAIN();

