// The hardware as plain integers: every field of a topology file, flattened once. Every
// family's config embeds it, so any topology field can be a sweep axis (an axis sets an
// int64 at an offset of the config). Enums are stored as int64 so that holds for them too.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kb_hd.h"

namespace kb {

enum class Dataflow : std::int64_t { os = 0, ws = 1, is = 2 };
enum class SipTopology : std::int64_t { ring = 0, fully_connected = 1, switch_ = 2 };

struct LinkSpec {
  std::int64_t bandwidth_gbps = 0;
  std::int64_t latency_ns = 0;
  std::int64_t energy_fj_per_byte = 0;  // energy of moving one byte over one hop
};

// Field names carry their units; the table that documents, loads and overrides them is
// src/host/topology/fields.cpp (and docs/topology.md).
struct HwConfig {
  // system
  std::int64_t sips = 0;
  SipTopology sip_topology = SipTopology::ring;
  LinkSpec sip_link;
  // sip
  std::int64_t cube_rows = 0, cube_cols = 0;
  LinkSpec cube_link;
  // cube
  std::int64_t pe_rows = 0, pe_cols = 0;
  std::int64_t hbm_bandwidth_gbps = 0, hbm_latency_ns = 0, hbm_capacity_mib = 0;
  LinkSpec ipcq;
  // pe
  std::int64_t clock_mhz = 0;
  std::int64_t matrix_rows = 0, matrix_cols = 0;
  Dataflow dataflow = Dataflow::os;
  std::int64_t vector_lanes = 0;
  std::int64_t sram_kib = 0;
  std::int64_t dma_engines = 0, dma_bandwidth_gbps = 0;
  // energy per action (fJ), static power (mW) and area (square micrometres): what a design
  // costs (docs/topology.md gives each default and its source)
  std::int64_t mac_fj = 0, vector_op_fj = 0, sram_read_fj_per_byte = 0, sram_write_fj_per_byte = 0;
  std::int64_t hbm_read_fj_per_byte = 0, hbm_write_fj_per_byte = 0;
  std::int64_t pe_static_mw = 0, cube_static_mw = 0, sip_static_mw = 0;
  std::int64_t mac_area_um2 = 0, vector_lane_area_um2 = 0, sram_area_um2_per_mib = 0;
  std::int64_t hbm_phy_area_um2 = 0, cube_link_phy_area_um2 = 0, sip_link_phy_area_um2 = 0;
  // Not a topology field: how many identical launches share each cube's HBM at once, this
  // one included (0 or 1: none but this one). A tensor-parallel rank of one PE runs its
  // kernels on one PE while the other ranks of its cube run theirs alike, so every HBM port
  // a launch uses counts that many times in the cube's share (ADR 0002, docs/model.md
  // section 13.5).
  std::int64_t hbm_tenants = 0;

  KB_HD constexpr std::int64_t cubes_per_sip() const { return cube_rows * cube_cols; }
  KB_HD constexpr std::int64_t pes_per_cube() const { return pe_rows * pe_cols; }
  KB_HD constexpr std::int64_t total_cubes() const { return sips * cubes_per_sip(); }
  KB_HD constexpr std::int64_t total_pes() const { return total_cubes() * pes_per_cube(); }
  KB_HD constexpr std::int64_t hbm_capacity_bytes() const { return hbm_capacity_mib << 20; }
  KB_HD constexpr std::int64_t sram_bytes() const { return sram_kib << 10; }
  // Aggregate DMA rate of one PE.
  KB_HD constexpr std::int64_t dma_gbps() const { return dma_engines * dma_bandwidth_gbps; }
  // The launches sharing each cube's HBM (hbm_tenants, at least 1).
  KB_HD constexpr std::int64_t tenants() const { return hbm_tenants > 1 ? hbm_tenants : 1; }
};

// The ranges a topology file allows, one per kind of field (KB_HW_RANGES below gives each
// field its own).
constexpr std::int64_t kMaxSips = 4096;
constexpr std::int64_t kMaxGrid = 1024;                  // rows or columns of cubes or of PEs
constexpr std::int64_t kMaxBandwidthGbps = 1000000;      // 1 PB/s: beyond any real link
constexpr std::int64_t kMaxLatencyNs = 1000000000;       // 1 s
constexpr std::int64_t kMaxCapacity = INT64_C(1) << 30;  // HBM MiB, SRAM KiB
constexpr std::int64_t kMaxClockMhz = 100000;
constexpr std::int64_t kMaxArray = 4096;  // systolic array rows or columns
constexpr std::int64_t kMaxLanes = 65536;
constexpr std::int64_t kMaxDmaEngines = 64;
constexpr std::int64_t kMaxEnergyFj = 1000000000;            // 1 µJ per action or byte
constexpr std::int64_t kMaxStaticMw = 1000000000;            // 1 MW per component
constexpr std::int64_t kMaxAreaUm2 = INT64_C(1000000000000);  // 1 m² per component

// Every field's range, once: X(member, lo, hi). The topology loader and --set/--hw
// (src/host/topology/fields.cpp), hw_fits and with it every model's check read this list.
#define KB_HW_RANGES(X)                              \
  X(sips, 1, kMaxSips)                               \
  X(sip_topology, 0, 2)                              \
  X(sip_link.bandwidth_gbps, 1, kMaxBandwidthGbps)   \
  X(sip_link.latency_ns, 0, kMaxLatencyNs)           \
  X(cube_rows, 1, kMaxGrid)                          \
  X(cube_cols, 1, kMaxGrid)                          \
  X(cube_link.bandwidth_gbps, 1, kMaxBandwidthGbps)  \
  X(cube_link.latency_ns, 0, kMaxLatencyNs)          \
  X(pe_rows, 1, kMaxGrid)                            \
  X(pe_cols, 1, kMaxGrid)                            \
  X(hbm_bandwidth_gbps, 1, kMaxBandwidthGbps)        \
  X(hbm_latency_ns, 0, kMaxLatencyNs)                \
  X(hbm_capacity_mib, 1, kMaxCapacity)               \
  X(ipcq.bandwidth_gbps, 1, kMaxBandwidthGbps)       \
  X(ipcq.latency_ns, 0, kMaxLatencyNs)               \
  X(clock_mhz, 1, kMaxClockMhz)                      \
  X(matrix_rows, 1, kMaxArray)                       \
  X(matrix_cols, 1, kMaxArray)                       \
  X(dataflow, 0, 2)                                  \
  X(vector_lanes, 1, kMaxLanes)                      \
  X(sram_kib, 1, kMaxCapacity)                       \
  X(dma_engines, 1, kMaxDmaEngines)                  \
  X(dma_bandwidth_gbps, 1, kMaxBandwidthGbps)        \
  X(sip_link.energy_fj_per_byte, 0, kMaxEnergyFj)    \
  X(cube_link.energy_fj_per_byte, 0, kMaxEnergyFj)   \
  X(ipcq.energy_fj_per_byte, 0, kMaxEnergyFj)        \
  X(mac_fj, 0, kMaxEnergyFj)                         \
  X(vector_op_fj, 0, kMaxEnergyFj)                   \
  X(sram_read_fj_per_byte, 0, kMaxEnergyFj)          \
  X(sram_write_fj_per_byte, 0, kMaxEnergyFj)         \
  X(hbm_read_fj_per_byte, 0, kMaxEnergyFj)           \
  X(hbm_write_fj_per_byte, 0, kMaxEnergyFj)          \
  X(pe_static_mw, 0, kMaxStaticMw)                   \
  X(cube_static_mw, 0, kMaxStaticMw)                 \
  X(sip_static_mw, 0, kMaxStaticMw)                  \
  X(mac_area_um2, 0, kMaxAreaUm2)                    \
  X(vector_lane_area_um2, 0, kMaxAreaUm2)            \
  X(sram_area_um2_per_mib, 0, kMaxAreaUm2)           \
  X(hbm_phy_area_um2, 0, kMaxAreaUm2)                \
  X(cube_link_phy_area_um2, 0, kMaxAreaUm2)          \
  X(sip_link_phy_area_um2, 0, kMaxAreaUm2)

// A field's range by its offset in HwConfig (the host's field table reads them so).
struct HwRange {
  std::size_t offset;
  std::int64_t lo, hi;
};
#define KB_HW_RANGE_ROW(member, lo, hi) HwRange{offsetof(HwConfig, member), lo, hi},
constexpr HwRange kHwRanges[] = {KB_HW_RANGES(KB_HW_RANGE_ROW)};
#undef KB_HW_RANGE_ROW

KB_HD constexpr std::int64_t hw_int(std::int64_t v) { return v; }
KB_HD constexpr std::int64_t hw_int(Dataflow v) { return static_cast<std::int64_t>(v); }
KB_HD constexpr std::int64_t hw_int(SipTopology v) { return static_cast<std::int64_t>(v); }

// Every field in its range.
KB_HD constexpr bool hw_in_range(const HwConfig& h) {
#define KB_HW_IN_RANGE(member, lo, hi) &&hw_int(h.member) >= (lo) && hw_int(h.member) <= (hi)
  return true KB_HW_RANGES(KB_HW_IN_RANGE);
#undef KB_HW_IN_RANGE
}

// The whole machine has at most this many PEs; with every field in its range, products of
// counts and rates then stay far from int64 overflow.
constexpr std::int64_t kMaxMachinePes = INT64_C(1) << 24;

// A hardware config a topology file could hold: every field in its range (kHwRanges), and
// the checks that span fields. Every model's check starts with it. Computed without
// overflow for any field values.
KB_HD constexpr bool hw_fits(const HwConfig& h) {
  return hw_in_range(h) && h.total_pes() <= kMaxMachinePes && h.hbm_tenants >= 0 && h.hbm_tenants <= kMaxGrid;
}

}  // namespace kb
