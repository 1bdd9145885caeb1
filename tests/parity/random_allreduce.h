// Random valid allreduce configs for the parity and simulator tests: every level,
// algorithm, buffer kind, op and chunking, on machine shapes that vary SIP topologies, grids,
// link figures (zero latencies included), HBM and DMA rates.
#pragma once

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "energy_check.h"
#include "host/kernels/allreduce_program.h"
#include "host/topology/load.h"

namespace kb::testing {

inline std::string describe(const AllreduceConfig& c) {
  std::ostringstream o;
  o << to_string(static_cast<CollLevel>(c.level)) << "/" << to_string(static_cast<CollAlgo>(c.algo)) << " ranks=" << c.ranks
    << " bytes=" << c.bytes << " buffer=" << (c.buffer ? "hbm" : "sram") << " op=" << (c.op ? "reduce" : "allreduce")
    << " chunks=" << c.chunks << " sips=" << c.hw.sips << "(" << static_cast<int>(c.hw.sip_topology) << ") cubes="
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

// Random valid configs; `counts` tallies them per (level, algo, buffer).
inline std::vector<AllreduceConfig> random_allreduce_configs(int count, std::uint64_t seed, std::vector<int>* counts) {
  const TopologySpec base = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  std::vector<AllreduceConfig> out;
  counts->assign(kCollLevels * kCollAlgos * kCollBuffers, 0);
  while (static_cast<int>(out.size()) < count) {
    AllreduceConfig c{};
    c.hw = base.hw();
    HwConfig& h = c.hw;
    random_machine(h, pick);
    h.sram_kib = pick(1, 64);
    h.hbm_capacity_mib = pick(1, 4);
    c.level = pick(0, 3);
    c.algo = pick(0, 4);
    if (c.level == static_cast<std::int64_t>(CollLevel::hier)) {
      // Part of a cube, whole cubes of SIP 0, or whole SIPs (as many as keep it under 100 PEs).
      const std::int64_t ppc = h.pes_per_cube(), pps = ppc * h.cubes_per_sip();
      const int kind = static_cast<int>(pick(0, 2));
      c.ranks = kind == 0 ? pick(2, std::max<std::int64_t>(2, ppc))
                : kind == 1 ? ppc * pick(2, std::max<std::int64_t>(2, h.cubes_per_sip()))
                            : pps * pick(2, std::max<std::int64_t>(2, std::min<std::int64_t>(h.sips, 100 / pps)));
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

}  // namespace kb::testing
