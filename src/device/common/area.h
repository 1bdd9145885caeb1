// The area of a machine's parts, from the topology's area fields (docs/topology.md, "Energy,
// static power and area"), in square micrometres. Sums and products saturate at 2^61
// (kAreaCap) rather than wrap: no real design comes near it.
#pragma once

#include <cstdint>

#include "hw.h"
#include "kb_hd.h"
#include "units.h"

namespace kb {

constexpr std::int64_t kAreaCap = kTimeLimitPs;  // 2^61 µm²: saturated

// The Pareto cost every family has besides its own (`--pareto area`): the machine's area,
// hw_area(c.hw).machine. Above any family's own cost kinds (1, 2, ...).
constexpr std::int32_t kCostArea = 1000;

// SIP link directions per SIP (network.h's links over the SIPs): ring, the links to the next
// and the previous SIP; fully connected, one to each other SIP; switch, its uplink and its
// downlink. None with one SIP.
KB_HD constexpr std::int64_t hw_sip_links_out(const HwConfig& h) {
  if (h.sips < 2) return 0;
  return h.sip_topology == SipTopology::fully_connected ? h.sips - 1 : 2;
}
// Mesh link directions of one SIP's cube grid: every pair of neighbouring cubes, both ways.
KB_HD constexpr std::int64_t hw_cube_links(const HwConfig& h) {
  return 2 * (h.cube_rows * (h.cube_cols - 1) + h.cube_cols * (h.cube_rows - 1));
}

struct HwArea {
  std::int64_t pe_matrix, pe_vector, pe_sram, pe;  // one PE and its parts
  std::int64_t cube_pes, hbm_phy, cube;            // one cube: its PEs, its HBM PHY, all of it
  std::int64_t sip_cubes, cube_link_phys, sip_link_phys, sip;  // one SIP
  std::int64_t machine;                            // every SIP
};

// A PE: its array's MACs, its vector lanes and its SRAM. A cube: its PEs and its HBM PHY.
// A SIP: its cubes, the PHYs of its mesh links (per direction) and of the SIP links leaving
// it. The machine: its SIPs.
KB_HD constexpr HwArea hw_area(const HwConfig& h) {
  HwArea a{};
  a.pe_matrix = sat_mul(h.matrix_rows * h.matrix_cols, h.mac_area_um2);
  a.pe_vector = sat_mul(h.vector_lanes, h.vector_lane_area_um2);
  // sram_kib / 1024 MiB, rounded down to a whole µm², without passing 2^61 on the way.
  const std::int64_t whole = sat_mul(h.sram_kib / 1024, h.sram_area_um2_per_mib);
  a.pe_sram = sat_add(whole, sat_mul(h.sram_kib % 1024, h.sram_area_um2_per_mib) / 1024);
  a.pe = sat_add(sat_add(a.pe_matrix, a.pe_vector), a.pe_sram);
  a.cube_pes = sat_mul(h.pes_per_cube(), a.pe);
  a.hbm_phy = h.hbm_phy_area_um2;
  a.cube = sat_add(a.cube_pes, a.hbm_phy);
  a.sip_cubes = sat_mul(h.cubes_per_sip(), a.cube);
  a.cube_link_phys = sat_mul(hw_cube_links(h), h.cube_link_phy_area_um2);
  a.sip_link_phys = sat_mul(hw_sip_links_out(h), h.sip_link_phy_area_um2);
  a.sip = sat_add(sat_add(a.sip_cubes, a.cube_link_phys), a.sip_link_phys);
  a.machine = sat_mul(h.sips, a.sip);
  return a;
}

}  // namespace kb
