// Two-stage evaluation (docs/adr/0023-two-stage-evaluation.md): the allreduce model's small
// state gives the full state's result or defers the config, and the generic two stages
// (src/device/sweep/two_stage.h), which the CUDA backend runs, equal one-stage evaluation.
// Here they run on Thrust's OpenMP system with one config per work item, as on the GPU.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "../parity/random_allreduce.h"
#include "../parity/sweep_space.h"
#include "benches/milestone_1h_ccl.h"
#include "device/backends/omp_family.h"
#include "device/models/collective/allreduce_model.h"
#include "device/models/decode/decode_model.h"
#include "device/models/gemm/gemm_model.h"
#include "host/families/family.h"
#include "host/sweep/backend.h"

namespace kb {
namespace {

// Thrust's OpenMP system with the CUDA backend's shape: one config per work item, so the
// sweep takes the path with EvalIndex and the two stages.
struct OneConfigSys {
  template <class T>
  using vec = thrust::omp::vector<T>;
  static void check() {}
  static constexpr std::int64_t kEvalBlock = 1;
};

bool same(const AllreduceResult& a, const AllreduceResult& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Whether the full state ran the simulator's ops for some level of the config it evaluated
// last: the small state, which has no simulator, defers those.
bool simulated(const ar_detail::SimWith<kArNoReplay>& full) { return full.levels > full.walked_levels + full.general_levels; }

struct Deferred {
  std::int64_t all = 0;
  std::int64_t walkable = 0;  // of them, configs the full state walked at every level: beyond the small tables
};

// The small state's result against the full state's: equal, or deferred.
template <class Caps>
Deferred compare_small(const std::vector<AllreduceConfig>& configs, ar_detail::SimT<Caps>& small,
                      ar_detail::SimWith<kArNoReplay>& full) {
  Deferred d;
  for (const AllreduceConfig& c : configs) {
    const AllreduceResult a = allreduce_model(c, small), b = allreduce_model(c, full);
    if (a.status == kStatusDeferred) {
      ++d.all;
      d.walkable += !simulated(full);
      AllreduceResult z{};
      z.status = kStatusDeferred;
      EXPECT_TRUE(same(a, z)) << "a deferred result carries figures: " << testing::describe(c);
      continue;
    }
    EXPECT_TRUE(same(a, b)) << testing::describe(c) << ": small " << a.status << " " << a.latency_ps << ", full "
                            << b.status << " " << b.latency_ps;
  }
  return d;
}

TEST(AllreduceSmallState, FitsSixteenKiB) {
  EXPECT_LE(sizeof(ar_detail::SmallSim), 15u * 1024u);  // the rest of 16 KiB: the config and the frame
  // The nested states share the llm first stage's 16 KiB with its own state (about 4.7 KB on
  // the device, docs/PERFORMANCE.md) and the frames ptxas adds.
  EXPECT_LE(sizeof(ar_detail::NestedSim), 7u * 1024u);
  EXPECT_LE(sizeof(dec_detail::DecodeEvalT<dec_detail::kDecSmallPes>), 5u * 1024u);
}

TEST(AllreduceSmallState, GivesTheFullResultOrDefers) {
  auto small = std::make_unique<ar_detail::SmallSim>();
  auto full = std::make_unique<ar_detail::SimWith<kArNoReplay>>();  // the walks and the simulator: what the small state has
  std::vector<int> counts;
  std::vector<AllreduceConfig> rejected;
  rejected.reserve(200);
  const std::vector<AllreduceConfig> narrow = testing::random_allreduce_configs(20000, 20261204, &counts);
  const std::vector<AllreduceConfig> wide = testing::random_wide_allreduce_configs(3000, 20261205, &rejected);
  const Deferred n = compare_small(narrow, *small, *full), w = compare_small(wide, *small, *full);
  // Refused configs: the same status, never deferred.
  EXPECT_EQ(compare_small(rejected, *small, *full).all, 0);
  std::printf("deferred: %lld of %zu narrow configs (%lld beyond the small tables), %lld of %zu wide ones (%lld)\n",
              static_cast<long long>(n.all), narrow.size(), static_cast<long long>(n.walkable),
              static_cast<long long>(w.all), wide.size(), static_cast<long long>(w.walkable));
  // Configs the full state walks at every level fit the small one, but for a few on the
  // narrow ranges; on the wide ranges (up to 64 ranks a level, 16 chunks) some do not.
  EXPECT_LT(n.walkable * 100, static_cast<std::int64_t>(narrow.size())) << "the small tables hold too few configs";
  EXPECT_GT(w.walkable, 0) << "no config was beyond the small tables: that deferral is untested";
  EXPECT_LT(w.all, static_cast<std::int64_t>(wide.size()));
}

// The nested state (another model's first stage: llm's) likewise, with smaller tables.
TEST(AllreduceNestedState, GivesTheFullResultOrDefers) {
  auto nested = std::make_unique<ar_detail::NestedSim>();
  auto full = std::make_unique<ar_detail::SimWith<kArNoReplay>>();  // the walks and the simulator: what the small state has
  std::vector<int> counts;
  std::vector<AllreduceConfig> rejected;
  rejected.reserve(200);
  const std::vector<AllreduceConfig> narrow = testing::random_allreduce_configs(10000, 20261206, &counts);
  const std::vector<AllreduceConfig> wide = testing::random_wide_allreduce_configs(2000, 20261207, &rejected);
  const Deferred n = compare_small(narrow, *nested, *full), w = compare_small(wide, *nested, *full);
  EXPECT_EQ(compare_small(rejected, *nested, *full).all, 0);
  std::printf("nested state, deferred: %lld of %zu narrow configs, %lld of %zu wide ones\n",
              static_cast<long long>(n.all), narrow.size(), static_cast<long long>(w.all), wide.size());
  EXPECT_GT(n.all + w.all, 0);
  EXPECT_LT(n.all * 2, static_cast<std::int64_t>(narrow.size())) << "the nested tables hold too few configs";
  for (const AllreduceConfig& c : narrow)  // the model's entry point gives the same
    if (c.ranks <= 4) {
      const AllreduceResult a = AllreduceModel::evaluate_nested(c), b = allreduce_model(c, *nested);
      ASSERT_TRUE(same(a, b)) << testing::describe(c);
    }
}

TEST(AllreduceSmallState, HoldsTheMilestoneMixButItsEventSimulations) {
  const std::vector<AllreduceConfig> mix = ccl_milestone_configs(
      load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml"),
      load_topology(std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml"));
  auto small = std::make_unique<ar_detail::SmallSim>();
  auto full = std::make_unique<ar_detail::SimWith<kArNoReplay>>();  // the walks and the simulator: what the small state has
  std::int64_t deferred = 0, with_events = 0;
  for (const AllreduceConfig& c : mix) {
    const AllreduceResult a = allreduce_model(c, *small), b = allreduce_model(c, *full);
    const bool events = simulated(*full);
    with_events += events;
    if (a.status == kStatusDeferred) {
      ++deferred;
      EXPECT_TRUE(events) << "deferred, though the full state walked every level: " << testing::describe(c);
    } else {
      EXPECT_TRUE(same(a, b)) << testing::describe(c);
    }
  }
  std::printf("milestone mix: %lld of %zu points deferred, %lld with a level of simulated ops\n",
              static_cast<long long>(deferred), mix.size(), static_cast<long long>(with_events));
  EXPECT_EQ(deferred, with_events);
}

// The list evaluation in two stages equals evaluate() config for config, deferred ones included.
TEST(TwoStage, EvaluationEqualsOneStage) {
  std::vector<AllreduceConfig> rejected;
  std::vector<AllreduceConfig> configs = testing::random_wide_allreduce_configs(1500, 7, &rejected);
  configs.insert(configs.end(), rejected.begin(), rejected.end());
  std::vector<AllreduceResult> two(configs.size());
  batched::detail::eval_configs<OneConfigSys, AllreduceModel>(
      thrust::omp::par, configs.data(), static_cast<std::int64_t>(configs.size()), two.data(),
      batched::detail::EvalOne<AllreduceModel>{});
  std::int64_t deferred = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    deferred += AllreduceModel::evaluate_small(configs[i]).status == kStatusDeferred;
    ASSERT_TRUE(same(two[i], AllreduceModel::evaluate(configs[i]))) << i << ": " << testing::describe(configs[i]);
  }
  EXPECT_GT(deferred, 0) << "no config took the second stage";
}

// The sweep of `space` as the GPU runs it (one config per work item, the two stages, chunks
// of `chunk`), held to the OpenMP backend's one stage in every reduction; and the configs of
// the space whose small evaluation defers, counted one by one, which the sweep counts too.
template <class Model>
batched::SweepSummary two_stage_sweep(const batched::Space& space, const batched::Reductions& red, std::int64_t chunk) {
  const std::vector<std::int64_t> flat = batched::detail::flatten_values(space);
  batched::detail::BestByKey<OneConfigSys> best(space.size(), space.size() / space.groups());
  const batched::SweepSummary two = batched::detail::sweep_chunks<OneConfigSys, Model>(
      thrust::omp::par, space, flat.data(), red, chunk,
      [&](auto keyed, std::int64_t, std::int64_t len) { return best(thrust::omp::par, keyed, len); });
  const batched::SweepSummary one = sweep(BackendKind::omp, space, 1 << 20, 0, red);
  testing::expect_same_summary(two, one);
  EXPECT_EQ(one.deferred, 0);  // the OpenMP blocks take one stage
  std::int64_t deferred = 0;
  const batched::SpaceDecoder decode(space);
  for (std::int64_t i = 0; i < space.size(); ++i)
    deferred += Model::evaluate_small(decode_config<Model>(decode, i)).status == kStatusDeferred;
  EXPECT_GT(deferred, 0) << "no config of the space took the second stage";
  EXPECT_GT(two.valid, deferred);
  EXPECT_EQ(two.deferred, deferred);  // sweep --json's backend.deferred
  return two;
}

// A sweep whose configs partly defer: the two-stage path (one config per work item) and the
// OpenMP backend's one-stage blocks agree in every reduction.
TEST(TwoStage, SweepEqualsOneStage) {
  const Family& f = family("allreduce");
  AllreduceConfig base{};
  base.hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml").hw();
  base.level = static_cast<std::int64_t>(CollLevel::cube);
  base.op = static_cast<std::int64_t>(CollOp::allreduce);
  base.chunks = 1;
  base.ranks = 4;
  base.bytes = 1 << 20;
  batched::Space space = make_space<AllreduceModel>(base);
  auto axis = [&](const char* name, std::vector<std::int64_t> values) {
    const AxisDesc* a = f.axis(name);
    ASSERT_NE(a, nullptr) << name;
    space.axes.push_back({static_cast<std::int64_t>(a->offset), std::move(values)});
  };
  axis("level", {0, 1, 2, 3});
  axis("algo", {0, 1, 2, 3, 4});
  axis("buffer", {0, 1});
  axis("ranks", {2, 8, 16, 32});
  axis("chunks", {1, 3, 16});
  axis("bytes", {4096, 1 << 20});
  space.group_axes = 2;
  batched::Reductions red;
  red.top_k = 5, red.pareto = kArCostLinkBytes, red.histogram = true;
  EXPECT_EQ(two_stage_sweep<AllreduceModel>(space, red, 100).on_host, 0);
}

// Decode's two stages as the GPU runs them: SIPs of 64 PEs (2 x 4 cubes) in the first, of 128
// and 256 (4 x 4, 8 x 4 cubes) deferred to the full state; every reduction equals the OpenMP
// backend's one stage, and the sweep counts the deferred configs.
TEST(TwoStage, DecodeSweepDefersTheLargerSips) {
  DecodeConfig base{};
  base.hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml").hw();
  base.decode_case = 1, base.s_kv = 8192, base.batch = 4, base.h_q = 64, base.h_kv = 8, base.d_head = 128;
  batched::Space space = make_space<DecodeModel>(base);
  auto at = [](auto DecodeConfig::*field) {
    DecodeConfig c{};
    return static_cast<std::int64_t>(reinterpret_cast<const char*>(&(c.*field)) - reinterpret_cast<const char*>(&c));
  };
  const std::int64_t rows = at(&DecodeConfig::hw) + static_cast<std::int64_t>(offsetof(HwConfig, cube_rows));
  space.axes.push_back({rows, {2, 4, 8}});
  space.axes.push_back({at(&DecodeConfig::decode_case), {1, 2, 3, 4}});
  space.axes.push_back({at(&DecodeConfig::batch), {1, 3, 32}});
  space.axes.push_back({at(&DecodeConfig::s_kv), {1024, 65536}});
  space.group_axes = 1;
  batched::Reductions red;
  red.top_k = 5, red.pareto = kDecCostPes, red.histogram = true;
  EXPECT_EQ(two_stage_sweep<DecodeModel>(space, red, 10).on_host, 0);
}

// The collective as a device runs it: its full state (1,024 ops a level) defers a config of
// channels beyond it, which the third stage evaluates on the host (evaluate_host).
struct DeviceShapedCollective : AllreduceModel {
  static Result evaluate(const Config& c) { return AllreduceModel::evaluate_full(c); }
};

// Three stages (small, full, host) equal the host's one evaluation, config for config: a list,
// and a sweep over channels (auto among them) whose larger counts exceed the full state.
TEST(TwoStage, TheHostEvaluatesWhatTheFullStateDefers) {
  std::vector<int> counts;
  int large = 0;
  std::vector<AllreduceConfig> configs = testing::random_channel_configs(300, 31, &counts, &large);
  ASSERT_GT(large, 0);
  std::vector<AllreduceResult> three(configs.size());
  batched::detail::eval_configs<OneConfigSys, DeviceShapedCollective>(
      thrust::omp::par, configs.data(), static_cast<std::int64_t>(configs.size()), three.data(),
      batched::detail::EvalOne<DeviceShapedCollective>{});
  std::int64_t deferred = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    deferred += DeviceShapedCollective::evaluate(configs[i]).status == kStatusDeferred;
    ASSERT_TRUE(same(three[i], AllreduceModel::evaluate(configs[i]))) << i << ": " << testing::describe(configs[i]);
  }
  EXPECT_GT(deferred, 0) << "no config took the third stage";

  const Family& f = family("collective");
  AllreduceConfig base{};
  base.hw = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml").hw();
  base.level = static_cast<std::int64_t>(CollLevel::sip);
  base.ranks = 8, base.chunks = 1, base.channels = 1;
  batched::Space space = make_space<AllreduceModel>(base);
  auto axis = [&](const char* name, std::vector<std::int64_t> values) {
    const AxisDesc* a = f.axis(name);
    ASSERT_NE(a, nullptr) << name;
    space.axes.push_back({static_cast<std::int64_t>(a->offset), std::move(values)});
  };
  axis("op", {0, 2, 3});
  axis("algo", {0, 1});
  axis("buffer", {0, 1});
  axis("channels", {0, 1, 2, 8});
  axis("bytes", {1 << 16, 1 << 22});
  space.group_axes = 1;
  batched::Reductions red;
  red.top_k = 5, red.pareto = kArCostLinkBytes, red.histogram = true;
  const batched::SweepSummary dev = two_stage_sweep<DeviceShapedCollective>(space, red, 17);
  std::int64_t full = 0;
  const batched::SpaceDecoder decode(space);
  for (std::int64_t i = 0; i < space.size(); ++i) {
    const AllreduceConfig c = decode_config<AllreduceModel>(decode, i);
    full += DeviceShapedCollective::evaluate_small(c).status == kStatusDeferred &&
            DeviceShapedCollective::evaluate(c).status == kStatusDeferred;
  }
  EXPECT_GT(full, 0) << "no config of the sweep took the third stage";
  EXPECT_EQ(dev.on_host, full);
}

// The OpenMP blocks keep one GEMM config and put back what gemm_complete wrote
// (GemmModel::uncomplete) instead of copying the whole config per config: over a space whose
// tiles and split are partly automatic, every reduction equals the one-config-per-item path,
// which completes a fresh copy each time.
TEST(SweepBlocks, GemmOdometerEqualsAFreshConfigPerItem) {
  const TopologySpec topo = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  batched::Space space = testing::gemm_space(
      topo,
      {{"m", {32, 200, 2048}}, {"n", {96, 4096}}, {"k", {64, 2048}}, {"tile_m", {0, 32, 128}},
       {"tile_n", {0, 64}}, {"tile_k", {0, 128, 512}}, {"split", {0, 1, 2, 3, 4}}, {"pes", {1, 4}}, {"cubes", {1, 8}}},
      2);
  batched::Reductions red;
  red.top_k = 7, red.pareto = kGemmCostPes, red.histogram = true;
  const std::vector<std::int64_t> flat = batched::detail::flatten_values(space);
  batched::detail::BestByKey<OneConfigSys> best(space.size(), space.size() / space.groups());
  const batched::SweepSummary fresh = batched::detail::sweep_chunks<OneConfigSys, GemmModel>(
      thrust::omp::par, space, flat.data(), red, 1000,
      [&](auto keyed, std::int64_t, std::int64_t len) { return best(thrust::omp::par, keyed, len); });
  for (int threads : {1, 2}) {
    const batched::SweepSummary blocks = sweep(BackendKind::omp, space, 1 << 20, threads, red);
    testing::expect_same_summary(fresh, blocks);
  }
  // And directly: completing then putting back gives the raw config, byte for byte.
  for (std::int64_t i = 0; i < space.size(); i += 7) {
    const GemmConfig raw = batched::detail::decode_raw(batched::detail::make_view<GemmConfig>(space, flat.data()), i);
    GemmConfig c = raw;
    GemmModel::complete(c);
    GemmModel::uncomplete(c, raw);
    ASSERT_EQ(std::memcmp(&c, &raw, sizeof c), 0) << i;
  }
}

}  // namespace
}  // namespace kb
