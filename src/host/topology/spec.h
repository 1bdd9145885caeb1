// The validated, plain hardware description. Field names carry their units.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../device/models/systolic.h"

namespace kb {

enum class SipTopology : std::int32_t { ring = 0, fully_connected = 1, switch_ = 2 };

struct LinkSpec {
  std::int64_t bandwidth_gbps = 0;
  std::int64_t latency_ns = 0;
};

struct TopologySpec {
  std::int64_t schema_version = 0;
  std::string name;

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

  // Where it came from (not part of the hardware).
  std::string source;  // file path
  std::uint64_t hash = 0;  // FNV-1a over every resolved field, overrides included

  std::int64_t cubes_per_sip() const { return cube_rows * cube_cols; }
  std::int64_t pes_per_cube() const { return pe_rows * pe_cols; }
  std::int64_t total_cubes() const { return sips * cubes_per_sip(); }
  std::int64_t total_pes() const { return total_cubes() * pes_per_cube(); }
  std::int64_t hbm_capacity_bytes() const { return hbm_capacity_mib << 20; }
  std::int64_t sram_bytes() const { return sram_kib << 10; }
  // Aggregate DMA rate of one PE.
  std::int64_t dma_gbps() const { return dma_engines * dma_bandwidth_gbps; }
};

const char* to_string(Dataflow d);
// "os", "ws" or "is"; false for anything else.
bool parse_dataflow(const std::string& text, Dataflow* d);
const char* to_string(SipTopology t);
std::string hash_hex(std::uint64_t h);

// One documented field of the schema (used by the loader, --set and docs/topology.md).
struct FieldDoc {
  std::string path;
  std::string type;     // "int", "string", "enum"
  std::string range;    // e.g. "1..1000000" or "os|ws|is"
  std::string meaning;
};
const std::vector<FieldDoc>& topology_fields();

}  // namespace kb
