// Random valid allreduce configs for the parity and simulator tests: every level,
// algorithm, buffer kind, op and chunking, on machine shapes that vary SIP topologies, grids,
// link figures (zero latencies included), HBM and DMA rates.
#pragma once

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "energy_check.h"
#include "wide_ranges.h"
#include "host/families/collective/allreduce_program.h"
#include "host/topology/load.h"

namespace kb::testing {

inline std::string describe(const AllreduceConfig& c) {
  std::ostringstream o;
  o << to_string(static_cast<CollLevel>(c.level)) << "/" << to_string(static_cast<CollAlgo>(c.algo)) << " ranks=" << c.ranks
    << " bytes=" << c.bytes << " buffer=" << (c.buffer ? "hbm" : "sram") << " op=" << kCollOpNames[c.op]
    << " chunks=" << c.chunks << " channels=" << c.channels << " sips=" << c.hw.sips << "(" << static_cast<int>(c.hw.sip_topology) << ") cubes="
    << c.hw.cube_rows << "x" << c.hw.cube_cols << " pes=" << c.hw.pe_rows << "x" << c.hw.pe_cols;
  return o.str();
}

// A random machine shape for the communication tests: SIP topologies, grids, link figures
// (zero latencies included), HBM and DMA rates, clocks and vector lanes. `pick(lo, hi)`
// draws an integer in [lo, hi].
template <class Pick>
void random_machine(HwConfig& h, Pick& pick) {
  h.sips = pick(1, 8);
  h.sip_topology = static_cast<SipTopology>(pick(0, 2));
  h.cube_rows = pick(1, 3), h.cube_cols = pick(1, 4);
  h.pe_rows = pick(1, 3), h.pe_cols = pick(1, 4);
  auto link = [&](LinkSpec& l) {
    l.bandwidth_gbps = pick(1, 400);
    l.latency_ns = pick(0, 3) ? pick(0, 1500) : 0;
  };
  link(h.sip_link), link(h.cube_link), link(h.ipcq);
  h.hbm_bandwidth_gbps = pick(1, 1500);
  h.hbm_latency_ns = pick(0, 300);
  h.dma_engines = pick(1, 4);
  h.dma_bandwidth_gbps = pick(1, 400);
  h.clock_mhz = pick(100, 3000);
  h.vector_lanes = pick(1, 128);
  random_energy(h, pick);
}

// A hier launch's ranks: part of a cube, whole cubes of SIP 0, or whole SIPs (as many as
// keep it under `most_pes` PEs, and at least two).
template <class Pick>
std::int64_t random_hier_ranks(const HwConfig& h, Pick& pick, std::int64_t most_pes) {
  const std::int64_t ppc = h.pes_per_cube(), pps = ppc * h.cubes_per_sip();
  const int kind = static_cast<int>(pick(0, 2));
  return kind == 0   ? pick(2, std::max<std::int64_t>(2, ppc))
         : kind == 1 ? ppc * pick(2, std::max<std::int64_t>(2, h.cubes_per_sip()))
                     : pps * pick(2, std::max<std::int64_t>(2, std::min<std::int64_t>(h.sips, most_pes / pps)));
}

// A generator's draws: pick(lo, hi), an integer in [lo, hi] from the seeded engine, and a
// config on default.yaml's machine made random (random_machine).
struct Draw {
  TopologySpec base = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  std::mt19937_64 rng;
  explicit Draw(std::uint64_t seed) : rng(seed) {}
  std::int64_t operator()(std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); }
  AllreduceConfig machine() {
    AllreduceConfig c{};
    c.hw = base.hw();
    random_machine(c.hw, *this);
    return c;
  }
};

// Random valid configs; `counts` tallies them per (level, algo, buffer).
inline std::vector<AllreduceConfig> random_allreduce_configs(int count, std::uint64_t seed, std::vector<int>* counts) {
  Draw pick(seed);
  std::vector<AllreduceConfig> out;
  counts->assign(kCollLevels * kCollAlgos * kCollBuffers, 0);
  while (static_cast<int>(out.size()) < count) {
    AllreduceConfig c = pick.machine();
    HwConfig& h = c.hw;
    h.sram_kib = pick(1, 64);
    h.hbm_capacity_mib = pick(1, 4);
    c.level = pick(0, 3);
    c.algo = pick(0, 4);
    if (c.level == static_cast<std::int64_t>(CollLevel::hier)) {
      c.ranks = random_hier_ranks(h, pick, 100);
    } else {
      if (coll_level_size(h, c.level) < 2) continue;  // a level of one rank (and pick(lo, hi) needs lo <= hi)
      c.ranks = pick(2, std::min<std::int64_t>(12, coll_level_size(h, c.level)));
    }
    c.buffer = pick(0, 1);
    c.op = pick(0, 1);
    c.chunks = pick(0, 2) ? 1 : pick(2, 4);
    const std::int64_t least = c.chunks * c.ranks, most = pick(0, 1) ? 4096 : 64;
    if (least > most) continue;  // no size fits (and pick(lo, hi) needs lo <= hi)
    c.bytes = 2 * pick(least, most);
    if (allreduce_check(c) != kArOk) continue;
    ++(*counts)[static_cast<std::size_t>((c.level * kCollAlgos + c.algo) * kCollBuffers + c.buffer)];
    out.push_back(c);
  }
  return out;
}

// Random configs over wider ranges than random_allreduce_configs: grids up to 16 in a line
// or 4 x 8, up to 64 SIPs and 4096 PEs, ranks up to 64 on a level (the whole level, powers of
// two, multiples of a grid row), hier up to about 600 PEs, up to 16 chunks, sizes up to 6 MiB
// (and just above the least), SRAM and HBM sized just enough for a third of them, link
// latencies up to 10 us, and for a third every figure equal and round (ties in arbitration).
// Valid configs go to the result; `rejected` gets as many of the others as it is given room
// for (its capacity), for their statuses.
inline std::vector<AllreduceConfig> random_wide_allreduce_configs(int count, std::uint64_t seed,
                                                                  std::vector<AllreduceConfig>* rejected) {
  Draw pick(seed);
  std::vector<AllreduceConfig> out;
  while (static_cast<int>(out.size()) < count) {
    AllreduceConfig c = pick.machine();
    HwConfig& h = c.hw;
    h.sips = pick(0, 3) ? pick(1, 8) : pick(9, 64);
    random_grid(h.cube_rows, h.cube_cols, pick, 16);
    random_grid(h.pe_rows, h.pe_cols, pick, 16);
    if (h.total_pes() > 4096) continue;
    for (LinkSpec* l : {&h.sip_link, &h.cube_link, &h.ipcq}) {
      const int k = static_cast<int>(pick(0, 3));
      l->bandwidth_gbps = k == 0 ? pick(1, 10) : k == 1 ? pick(1, 4000) : pick(1, 400);
      l->latency_ns = pick(0, 3) ? pick(0, 10000) : pick(0, 5);
    }
    h.hbm_bandwidth_gbps = pick(0, 1) ? pick(1, 4000) : pick(1, 50);
    h.hbm_latency_ns = pick(0, 4) ? pick(0, 1000) : 0;
    h.dma_engines = pick(1, 8);
    if (pick(0, 2) == 0) round_figures(h, pick, {&h.sip_link, &h.cube_link, &h.ipcq});
    h.sram_kib = pick(0, 2) ? pick(1, 8192) : pick(1, 64);
    h.hbm_capacity_mib = pick(0, 2) ? pick(1, 256) : pick(1, 16384);
    c.level = pick(0, 3);
    c.algo = pick(0, 4);
    if (c.level == static_cast<std::int64_t>(CollLevel::hier)) {
      c.ranks = random_hier_ranks(h, pick, 600);
    } else {
      const std::int64_t most = std::min<std::int64_t>(64, coll_level_size(h, c.level));
      if (most < 2) continue;
      const int k = static_cast<int>(pick(0, 3));
      std::int64_t p = 2;
      if (k == 0) p = most;
      else if (k == 1) while (p * 2 <= most && pick(0, 2)) p *= 2;
      else if (k == 2) p = std::min(most, std::max<std::int64_t>(2, (c.level == 0 ? h.pe_cols : h.cube_cols) * pick(1, 4)));
      else p = pick(2, most);
      c.ranks = p;
    }
    c.buffer = pick(0, 1);
    c.op = pick(0, 1);
    c.chunks = pick(0, 2) ? pick(1, 4) : pick(5, 16);
    const std::int64_t least = c.chunks * c.ranks;
    const int size = static_cast<int>(pick(0, 3));
    const std::int64_t values = size == 0 ? least * pick(1, 3) + pick(0, least) : size == 1 ? pick(1, 4096)
                                : size == 2 ? pick(4096, 1 << 20) : pick(1 << 20, 3 << 20);
    c.bytes = 2 * values;
    if (pick(0, 2) == 0) {  // memory just enough (or a KiB, a MiB short)
      h.sram_kib = std::max<std::int64_t>(1, (coll_sram_bytes(c) + 1023) / 1024 - pick(0, 3) / 3);
      const std::int64_t hbm = coll_ranks_per_cube(c) * coll_hbm_bytes_per_rank(c);
      h.hbm_capacity_mib = std::max<std::int64_t>(1, ((hbm + (1 << 20) - 1) >> 20) - pick(0, 3) / 3);
    }
    if (allreduce_check(c) == kArOk) out.push_back(c);
    else if (rejected && rejected->size() < rejected->capacity()) rejected->push_back(c);
  }
  return out;
}

// Random valid configs of one of the ops of their own (allgather, reducescatter, alltoall):
// random machines as above, every level (hier: up to 32 PEs of a cube, of whole cubes or of
// whole SIPs, as one level), every algorithm that runs the op, both buffers, 1-8 chunks,
// sizes from the least to 2 MiB (an alltoall's: whole pieces). `counts` tallies them per
// (level, algo, buffer).
inline std::vector<AllreduceConfig> random_op_configs(CollOp op, int count, std::uint64_t seed, std::vector<int>* counts) {
  Draw pick(seed);
  std::vector<std::int64_t> algos;
  for (std::int64_t a = 0; a < kCollAlgos; ++a)
    if (coll_algo_runs(a, static_cast<std::int64_t>(op))) algos.push_back(a);
  std::vector<AllreduceConfig> out;
  counts->assign(kCollLevels * kCollAlgos * kCollBuffers, 0);
  while (static_cast<int>(out.size()) < count) {
    AllreduceConfig c = pick.machine();
    HwConfig& h = c.hw;
    h.sram_kib = pick(0, 1) ? pick(1, 64) : pick(64, 8192);
    h.hbm_capacity_mib = pick(1, 64);
    c.level = pick(0, 3);
    c.op = static_cast<std::int64_t>(op);
    c.algo = algos[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(algos.size()) - 1))];
    const std::int64_t most = std::min<std::int64_t>(16, coll_level_size(h, c.level));
    if (most < 2) continue;
    c.ranks = c.level == static_cast<std::int64_t>(CollLevel::hier) ? random_hier_ranks(h, pick, 32) : pick(2, most);
    if (c.algo == static_cast<std::int64_t>(CollAlgo::hd) && c.level < 3 && pick(0, 1)) c.ranks = std::int64_t{1} << pick(1, ceil_log2(most + 1) - 1);
    c.buffer = pick(0, 1);
    c.chunks = pick(0, 2) ? 1 : pick(2, 8);
    const std::int64_t least = c.chunks * c.ranks;
    const int size = static_cast<int>(pick(0, 2));
    std::int64_t values = size == 0 ? least + pick(0, 3 * least) : size == 1 ? pick(least, 4096) : pick(4096, 1 << 20);
    if (op == CollOp::alltoall) values = std::max<std::int64_t>(least, values / least * least);
    c.bytes = 2 * values;
    if (allreduce_check(c) != kArOk) continue;
    ++(*counts)[static_cast<std::size_t>((c.level * kCollAlgos + c.algo) * kCollBuffers + c.buffer)];
    out.push_back(c);
  }
  return out;
}

// Random valid configs with channels: random machines, the cube and sip levels, every op
// with every algorithm that runs it, both buffers, 1-4 chunks, 2 up to the level's channels
// (16 at most), sizes from the least (chunks x ranks x channels values) to 1 MiB. `counts`
// tallies them per (level, op, buffer); `large` counts those beyond kCollMaxOps ops (the
// host's larger state).
inline std::vector<AllreduceConfig> random_channel_configs(int count, std::uint64_t seed, std::vector<int>* counts,
                                                           int* large) {
  Draw pick(seed);
  std::vector<AllreduceConfig> out;
  counts->assign(2 * kCollOps * kCollBuffers, 0);
  *large = 0;
  while (static_cast<int>(out.size()) < count) {
    AllreduceConfig c = pick.machine();
    HwConfig& h = c.hw;
    h.sram_kib = pick(64, 8192);
    h.hbm_capacity_mib = pick(1, 64);
    c.level = pick(1, 2);
    c.op = pick(0, kCollOps - 1);
    std::vector<std::int64_t> algos;
    for (std::int64_t a = 0; a < kCollAlgos; ++a)
      if (coll_algo_runs(a, c.op)) algos.push_back(a);
    c.algo = algos[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(algos.size()) - 1))];
    const std::int64_t most = std::min<std::int64_t>(8, coll_level_size(h, c.level));
    if (most < 2) continue;
    c.ranks = pick(2, most);
    if (c.algo == static_cast<std::int64_t>(CollAlgo::hd) && pick(0, 1)) c.ranks = std::int64_t{1} << pick(1, ceil_log2(most + 1) - 1);
    std::vector<std::int64_t> fit;
    for (std::int64_t g = 2; g <= kCollMaxChannels; ++g)
      if (coll_channels_fit(h, c.level, g) && g * c.ranks <= kCollMaxRanks) fit.push_back(g);
    if (fit.empty()) continue;
    c.channels = fit[static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(fit.size()) - 1))];
    c.buffer = pick(0, 1);
    c.chunks = pick(0, 2) ? 1 : pick(2, 4);
    const std::int64_t least = c.chunks * c.ranks * c.channels;
    const int size = static_cast<int>(pick(0, 2));
    std::int64_t values = size == 0 ? least + pick(0, 3 * least) : size == 1 ? pick(least, 8192) : pick(8192, 1 << 19);
    if (c.op == static_cast<std::int64_t>(CollOp::alltoall)) values = std::max<std::int64_t>(least, values / least * least);
    c.bytes = 2 * values;
    if (allreduce_check(c) != kArOk) continue;
    std::int64_t ops = 0;
    allreduce_check(c, &ops);
    *large += ops > kCollMaxOps;
    ++(*counts)[static_cast<std::size_t>(((c.level - 1) * kCollOps + c.op) * kCollBuffers + c.buffer)];
    out.push_back(c);
  }
  return out;
}

}  // namespace kb::testing
