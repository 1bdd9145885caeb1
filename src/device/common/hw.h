// The hardware as plain integers: every field of a topology file, flattened once. Every
// family's config embeds it, so any topology field can be a sweep axis (an axis sets an
// int64 at an offset of the config). Enums are stored as int64 so that holds for them too.
#pragma once

#include <cstdint>

#include "kb_hd.h"

namespace kb {

enum class Dataflow : std::int64_t { os = 0, ws = 1, is = 2 };
enum class SipTopology : std::int64_t { ring = 0, fully_connected = 1, switch_ = 2 };

struct LinkSpec {
  std::int64_t bandwidth_gbps = 0;
  std::int64_t latency_ns = 0;
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

  KB_HD constexpr std::int64_t cubes_per_sip() const { return cube_rows * cube_cols; }
  KB_HD constexpr std::int64_t pes_per_cube() const { return pe_rows * pe_cols; }
  KB_HD constexpr std::int64_t total_cubes() const { return sips * cubes_per_sip(); }
  KB_HD constexpr std::int64_t total_pes() const { return total_cubes() * pes_per_cube(); }
  KB_HD constexpr std::int64_t hbm_capacity_bytes() const { return hbm_capacity_mib << 20; }
  KB_HD constexpr std::int64_t sram_bytes() const { return sram_kib << 10; }
  // Aggregate DMA rate of one PE.
  KB_HD constexpr std::int64_t dma_gbps() const { return dma_engines * dma_bandwidth_gbps; }
};

// The ranges a topology file allows, one per kind of field (the field table,
// src/host/topology/fields.cpp, is made of them; a model checks the fields it reads).
constexpr std::int64_t kMaxSips = 4096;
constexpr std::int64_t kMaxGrid = 1024;                  // rows or columns of cubes or of PEs
constexpr std::int64_t kMaxBandwidthGbps = 1000000;      // 1 PB/s: beyond any real link
constexpr std::int64_t kMaxLatencyNs = 1000000000;       // 1 s
constexpr std::int64_t kMaxCapacity = INT64_C(1) << 30;  // HBM MiB, SRAM KiB
constexpr std::int64_t kMaxClockMhz = 100000;
constexpr std::int64_t kMaxArray = 4096;  // systolic array rows or columns
constexpr std::int64_t kMaxLanes = 65536;
constexpr std::int64_t kMaxDmaEngines = 64;

// The whole machine has at most this many PEs; with every field in its range, products of
// counts and rates then stay far from int64 overflow.
constexpr std::int64_t kMaxMachinePes = INT64_C(1) << 24;

// The checks that span fields (each field's own range is the topology table's): a hardware
// config a topology file could hold. Computed without overflow for fields in range.
KB_HD constexpr bool hw_fits(const HwConfig& h) { return h.total_pes() <= kMaxMachinePes; }

}  // namespace kb
