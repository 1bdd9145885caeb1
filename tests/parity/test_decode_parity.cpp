// Parity of the decode family: for every backend, the batched model (exec) and the reference
// engine (ref) agree exactly on every parity figure of the family's table, on every point of
// milestone-gqa-decode-4cases and on random configs covering every case, ragged splits,
// batches, head groupings, chunking, grids and hardware figures (zero latencies included).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>

#include "backend_param.h"
#include "benches/milestone_gqa_decode.h"
#include "energy_check.h"
#include "wide_ranges.h"
#include "host/families/family.h"
#include "host/families/decode/decode_program.h"
#include "host/parity/figures.h"
#include "host/sweep/backend.h"
#include "host/topology/load.h"

namespace kb {

namespace {

std::string describe(const DecodeConfig& c) {
  std::ostringstream o;
  o << "case " << c.decode_case << " s_kv=" << c.s_kv << " batch=" << c.batch << " h_q=" << c.h_q << " h_kv=" << c.h_kv
    << " d=" << c.d_head << " chunk=" << c.chunk << " allreduce=" << c.allreduce << " cubes=" << c.hw.cube_rows << "x"
    << c.hw.cube_cols << " pes=" << c.hw.pe_rows << "x" << c.hw.pe_cols << " array=" << c.hw.matrix_rows << "x"
    << c.hw.matrix_cols << " df=" << static_cast<int>(c.hw.dataflow) << " lanes=" << c.hw.vector_lanes;
  return o.str();
}

// Random valid configs whose reference run stays small; `counts` tallies them per case and
// whether a PE works through more than one chunk.
std::vector<DecodeConfig> random_configs(int count, std::uint64_t seed, std::vector<int>* counts) {
  const TopologySpec base = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const std::int64_t arrays[] = {1, 2, 3, 4, 8, 16, 32};
  const std::int64_t heads[] = {1, 2, 3, 8, 16, 32, 64, 128};
  std::vector<DecodeConfig> out;
  counts->assign(10, 0);
  while (static_cast<int>(out.size()) < count) {
    DecodeConfig c{};
    c.hw = base.hw();
    HwConfig& h = c.hw;
    h.cube_rows = pick(1, 3), h.cube_cols = pick(1, 4);
    h.pe_rows = pick(1, 3), h.pe_cols = pick(1, 4);
    auto link = [&](LinkSpec& l) {
      l.bandwidth_gbps = pick(1, 400);
      l.latency_ns = pick(0, 3) ? pick(0, 800) : 0;
    };
    link(h.cube_link), link(h.ipcq);
    h.hbm_bandwidth_gbps = pick(1, 1500);
    h.hbm_latency_ns = pick(0, 3) ? pick(0, 300) : 0;
    h.dma_engines = pick(1, 4);
    h.dma_bandwidth_gbps = pick(1, 400);
    h.clock_mhz = pick(100, 3000);
    h.vector_lanes = pick(1, 128);
    h.matrix_rows = arrays[pick(0, 6)], h.matrix_cols = arrays[pick(0, 6)];
    h.dataflow = static_cast<Dataflow>(pick(0, 2));
    h.sram_kib = pick(0, 3) ? 2048 : pick(16, 512);
    h.hbm_capacity_mib = pick(1, 64);
    testing::random_energy(h, pick);
    c.decode_case = pick(1, 4);
    c.batch = pick(0, 2) ? 1 : pick(2, 6);
    c.h_kv = pick(0, 2) ? 1 : pick(2, 3);
    c.h_q = c.h_kv * pick(1, 8);
    c.d_head = heads[pick(0, 7)];
    DecodeConfig probe = c;
    probe.s_kv = 1, probe.chunk = 1;
    const std::int64_t parts = dec_kv_parts(probe);
    c.s_kv = parts * pick(1, pick(0, 3) ? 12 : 200) + pick(0, parts - 1);
    c.chunk = pick(0, 1) ? 0 : pick(1, std::min<std::int64_t>(c.s_kv, 64));
    c.allreduce = c.decode_case == 4 ? pick(0, 1) : 0;
    c.kv_bytes = pick(1, 2);  // an 8-bit or fp16 KV cache
    decode_complete(c);
    if (decode_check(c) != kDecOk) continue;
    // Keep the reference small: the busiest PE's steps times the PEs.
    const std::int64_t steps = ceil_div(dec_max_rows(c), dec_group(c)) * ceil_div(dec_max_shard(c), c.chunk);
    if (steps * h.cubes_per_sip() * h.pes_per_cube() > 6000) continue;
    ++(*counts)[static_cast<std::size_t>((c.decode_case - 1) * 2 + (ceil_div(dec_max_shard(c), c.chunk) > 1))];
    ++(*counts)[8 + static_cast<std::size_t>(c.allreduce)];
    out.push_back(c);
  }
  return out;
}

// Random configs over wider ranges than random_configs: grids up to 8 in a line or 4 x 8,
// HBM shared by up to 8 tenants, batch up to 64, up to 8 KV heads of groups up to 8, heads of
// up to 256 values, link latencies up to 10 us, SRAM and HBM sized just enough (or one KiB,
// one MiB short) for a third of them, and for a third every figure equal and round (ties in
// the merge queues). Valid configs whose reference stays small go to the result; `rejected`
// gets as many of the others as it has room for (its capacity).
std::vector<DecodeConfig> random_wide_configs(int count, std::uint64_t seed, std::vector<DecodeConfig>* rejected) {
  const TopologySpec base = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const std::int64_t arrays[] = {1, 2, 3, 4, 7, 8, 16, 32, 64, 128};
  std::vector<DecodeConfig> out;
  while (static_cast<int>(out.size()) < count) {
    DecodeConfig c{};
    c.hw = base.hw();
    HwConfig& h = c.hw;
    testing::random_grid(h.cube_rows, h.cube_cols, pick, 8);
    testing::random_grid(h.pe_rows, h.pe_cols, pick, 8);
    for (LinkSpec* l : {&h.cube_link, &h.ipcq}) {
      l->bandwidth_gbps = pick(0, 3) ? pick(1, 4000) : pick(1, 10);
      l->latency_ns = pick(0, 3) ? pick(0, 10000) : pick(0, 5);
    }
    h.hbm_bandwidth_gbps = pick(0, 1) ? pick(1, 4000) : pick(1, 50);
    h.hbm_latency_ns = pick(0, 4) ? pick(0, 1000) : 0;
    h.hbm_tenants = pick(0, 3) ? 0 : pick(1, 8);
    h.dma_engines = pick(1, 8);
    h.dma_bandwidth_gbps = pick(1, 4000);
    h.clock_mhz = pick(1, 5000);
    h.vector_lanes = pick(1, 512);
    h.matrix_rows = arrays[pick(0, 9)], h.matrix_cols = arrays[pick(0, 9)];
    h.dataflow = static_cast<Dataflow>(pick(0, 2));
    testing::random_energy(h, pick);
    if (pick(0, 2) == 0) testing::round_figures(h, pick, {&h.cube_link, &h.ipcq});
    h.sram_kib = 8192, h.hbm_capacity_mib = 1 << 14;
    c.decode_case = pick(1, 4);
    c.batch = pick(0, 2) ? pick(1, 8) : pick(9, 64);
    c.h_kv = pick(0, 1) ? 1 : pick(2, 8);
    c.h_q = c.h_kv * pick(1, 8);
    c.d_head = pick(0, 1) ? std::int64_t(1) << pick(0, 8) : pick(1, 256);
    DecodeConfig probe = c;
    probe.s_kv = 1, probe.chunk = 1;
    const std::int64_t parts = dec_kv_parts(probe);
    c.s_kv = parts * pick(1, pick(0, 3) ? 8 : 100) + pick(0, parts - 1);
    c.chunk = pick(0, 1) ? 0 : pick(1, std::min<std::int64_t>(c.s_kv, 256));
    c.allreduce = c.decode_case == 4 ? pick(0, 1) : 0;
    c.kv_bytes = pick(1, 2);
    decode_complete(c);
    if (pick(0, 2) == 0 && decode_check(c) == kDecOk) {  // memory just enough (or a KiB, a MiB short)
      const std::int64_t sram = dec_sram_bytes(c, dec_max_rows(c), std::min<std::int64_t>(c.chunk, dec_max_shard(c)));
      h.sram_kib = std::max<std::int64_t>(1, (sram + 1023) / 1024 - pick(0, 3) / 3);
      const std::int64_t hbm = dec_kv_max_cube_bytes(c) + dec_qo_cube_bytes(c);
      h.hbm_capacity_mib = std::max<std::int64_t>(1, ((hbm + (1 << 20) - 1) >> 20) - pick(0, 3) / 3);
    }
    if (decode_check(c) != kDecOk) {
      if (rejected && rejected->size() < rejected->capacity()) rejected->push_back(c);
      continue;
    }
    const std::int64_t steps = ceil_div(dec_max_rows(c), dec_group(c)) * ceil_div(dec_max_shard(c), c.chunk);
    if (steps * h.cubes_per_sip() * h.pes_per_cube() > 20000) continue;  // keep the reference small
    out.push_back(c);
  }
  return out;
}

class DecodeParity : public testing::BackendTest {};

KB_BACKEND_SUITE(DecodeParity);

TEST_P(DecodeParity, TenThousandRandomConfigs) {
  std::vector<int> counts;
  const std::vector<DecodeConfig> configs = random_configs(10000, 20261130, &counts);
  for (std::size_t i = 0; i < counts.size(); ++i) EXPECT_GT(counts[i], 100) << "combination " << i << " barely covered";
  const std::vector<DecodeResult> exec = eval<DecodeModel>(GetParam(), configs);
  ASSERT_EQ(exec.size(), configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kDecOk) << describe(configs[i]);
    const DecodeResult ref = decode_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("decode"), configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
    ASSERT_EQ(testing::energy_recompute_diff(family("decode"), &configs[i], &exec[i]), "") << describe(configs[i]);
  }
}

// Value heads narrower or wider than the key heads, and K and V one tensor (multi-head latent
// attention's absorbed decode: V the first d_v values of each key, no V load).
TEST_P(DecodeParity, ValueHeadsAndSharedKv) {
  std::vector<int> counts;
  const std::vector<DecodeConfig> base = random_configs(2500, 20261207, &counts);
  std::mt19937_64 rng(7);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<DecodeConfig> configs;
  int shared = 0, narrow = 0;
  for (DecodeConfig c : base) {
    c.d_v = pick(0, 1) ? -pick(1, c.d_head) : pick(1, 160);  // V in K's first values, or a tensor of its own
    if (decode_check(c) != kDecOk) continue;
    shared += dec_kv_shared(c), narrow += dec_dv(c) < c.d_head;
    configs.push_back(c);
  }
  EXPECT_GT(shared, 500);
  EXPECT_GT(narrow, 500);
  const std::vector<DecodeResult> exec = eval<DecodeModel>(GetParam(), configs);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kDecOk) << describe(configs[i]);
    const DecodeResult ref = decode_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("decode"), configs[i], ref, exec[i]), "")
        << "config " << i << ": " << describe(configs[i]) << " d_v=" << configs[i].d_v << " shared=" << dec_kv_shared(configs[i]);
    ASSERT_EQ(testing::energy_recompute_diff(family("decode"), &configs[i], &exec[i]), "") << describe(configs[i]);
  }
}

// Wider machines and shapes than the test above, shared HBM and ties; configs the check
// refuses are refused alike by the model (the check's status) and the reference.
TEST_P(DecodeParity, WideRangesAndTies) {
  std::vector<DecodeConfig> rejected;
  rejected.reserve(200);
  const std::vector<DecodeConfig> configs = random_wide_configs(1500, 20261204, &rejected);
  const std::vector<DecodeResult> exec = eval<DecodeModel>(GetParam(), configs);
  int cases[5] = {0, 0, 0, 0, 0}, wide = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kDecOk) << describe(configs[i]);
    const DecodeResult ref = decode_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("decode"), configs[i], ref, exec[i]), "") << "config " << i << ": " << describe(configs[i]);
    ASSERT_EQ(testing::energy_recompute_diff(family("decode"), &configs[i], &exec[i]), "") << describe(configs[i]);
    ++cases[configs[i].decode_case];
    const HwConfig& h = configs[i].hw;
    wide += h.cube_rows > 3 || h.cube_cols > 4 || h.pe_rows > 3 || h.pe_cols > 4 || configs[i].batch > 6 ||
            configs[i].h_kv > 3 || h.hbm_tenants > 1;
  }
  for (int k = 1; k <= 4; ++k) EXPECT_GT(cases[k], 150) << "case " << k << " barely covered";
  EXPECT_GT(wide, 500) << "the wide ranges are barely covered";
  ASSERT_GT(rejected.size(), 50u);
  const std::vector<DecodeResult> refused = eval<DecodeModel>(GetParam(), rejected);
  for (std::size_t i = 0; i < rejected.size(); ++i) {
    EXPECT_EQ(refused[i].status, decode_check(rejected[i])) << describe(rejected[i]);
    EXPECT_ANY_THROW(decode_reference(rejected[i], nullptr)) << describe(rejected[i]);
  }
}

// The small state nested in another model's first stage (decode_model_small, for llm's): the
// full state's result, bytewise, or deferred where the SIP has more PEs than it holds; a
// config the check refuses keeps the check's status.
TEST(DecodeSmallState, GivesTheFullResultOrDefers) {
  std::vector<DecodeConfig> rejected;
  rejected.reserve(300);
  std::vector<DecodeConfig> configs = random_wide_configs(3000, 20261205, &rejected);
  configs.insert(configs.end(), rejected.begin(), rejected.end());
  std::int64_t deferred = 0, held_large = 0;
  for (const DecodeConfig& c : configs) {
    const DecodeResult a = decode_model_small(c), b = decode_model(c);
    const std::int64_t pes = c.hw.cubes_per_sip() * c.hw.pes_per_cube();
    if (a.status == kStatusDeferred) {
      ++deferred;
      EXPECT_EQ(b.status, kDecOk) << describe(c);
      EXPECT_GT(pes, dec_detail::kDecSmallPes) << describe(c);
      DecodeResult z{};
      z.status = kStatusDeferred;
      EXPECT_EQ(std::memcmp(&a, &z, sizeof a), 0) << "a deferred result carries figures: " << describe(c);
      continue;
    }
    EXPECT_TRUE(b.status != kDecOk || pes <= dec_detail::kDecSmallPes) << describe(c);
    held_large += pes > dec_detail::kDecSmallPes / 2 && a.status == kDecOk;
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << describe(c);
  }
  std::printf("decode small state: %lld of %zu deferred, %lld held with more than %lld PEs\n",
              static_cast<long long>(deferred), configs.size(), static_cast<long long>(held_large),
              static_cast<long long>(dec_detail::kDecSmallPes / 2));
  EXPECT_GT(deferred, 0);
  EXPECT_GT(held_large, 0);
}

TEST_P(DecodeParity, EveryMilestonePoint) {
  const TopologySpec def = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  const std::vector<DecodeConfig> configs = decode_milestone_configs(def);
  ASSERT_GE(configs.size(), 4u);
  const std::vector<DecodeResult> exec = eval<DecodeModel>(GetParam(), configs);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    ASSERT_EQ(exec[i].status, kDecOk) << describe(configs[i]);
    const DecodeResult ref = decode_reference(configs[i], nullptr);
    ASSERT_EQ(figures_diff(family("decode"), configs[i], ref, exec[i]), "") << describe(configs[i]);
  }
}

}  // namespace
}  // namespace kb
