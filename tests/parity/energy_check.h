// Energy recomputed from a record's JSON counts and its hardware's energy fields, apart from
// the model's own sum (src/device/common/energy.h): unsigned 128-bit products, the parts by
// the table of docs/model.md section 14. The parity tests run it on every random config of
// every family, with random energy figures (random_energy).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <string>

#include "host/families/family.h"

namespace kb::testing {

// Random energy per action and static power: mostly up to 10^6 fJ (mW), sometimes 0 or up
// to the fields' limit of 10^9.
template <class Pick>
void random_energy(HwConfig& h, Pick& pick) {
  auto one = [&]() -> std::int64_t {
    const std::int64_t kind = pick(0, 9);
    return kind == 0 ? 0 : kind == 1 ? pick(0, 1000000000) : pick(0, 1000000);
  };
  for (std::int64_t* f : {&h.mac_fj, &h.vector_op_fj, &h.sram_read_fj_per_byte, &h.sram_write_fj_per_byte,
                          &h.hbm_read_fj_per_byte, &h.hbm_write_fj_per_byte, &h.ipcq.energy_fj_per_byte,
                          &h.cube_link.energy_fj_per_byte, &h.sip_link.energy_fj_per_byte, &h.pe_static_mw,
                          &h.cube_static_mw, &h.sip_static_mw})
    *f = one();
}

// "" when the record's energy columns are the sum of its counts times the hardware's figures
// plus the machine's static power over `latency_column`; else what differs.
inline std::string energy_recompute_diff(const Family& f, const void* config, const void* result,
                                         const char* latency_column = "latency_ps") {
  using u128 = unsigned __int128;
  HwConfig h;
  std::memcpy(&h, static_cast<const unsigned char*>(config) + f.hw_offset, sizeof h);
  const nlohmann::json j = result_json(f, config, result);
  auto n = [&](const char* name) -> u128 { return static_cast<u128>(j.at(name).get<std::int64_t>()); };
  auto fj = [](std::int64_t v) { return static_cast<u128>(v); };
  const u128 matrix = n("macs") * fj(h.mac_fj);
  const u128 vector = n("vector_ops") * fj(h.vector_op_fj);
  const u128 sram = n("sram_read_bytes") * fj(h.sram_read_fj_per_byte) + n("sram_write_bytes") * fj(h.sram_write_fj_per_byte);
  const u128 hbm = n("hbm_read_bytes") * fj(h.hbm_read_fj_per_byte) + n("hbm_write_bytes") * fj(h.hbm_write_fj_per_byte);
  const u128 links = n("link_bytes_pe") * fj(h.ipcq.energy_fj_per_byte) + n("link_bytes_cube") * fj(h.cube_link.energy_fj_per_byte) +
                     n("link_bytes_sip") * fj(h.sip_link.energy_fj_per_byte);
  const u128 pes = fj(h.pe_rows * h.pe_cols), cubes = fj(h.cube_rows * h.cube_cols), sips = fj(h.sips);
  const u128 mw = sips * (fj(h.sip_static_mw) + cubes * (fj(h.cube_static_mw) + pes * fj(h.pe_static_mw)));
  const u128 stat = mw * n(latency_column);
  const u128 total = matrix + vector + sram + hbm + links + stat;
  std::string d;
  if (total > static_cast<u128>(INT64_MAX)) {
    if (!j.at("energy_fj").is_null() || j.at("energy_status") != "energy_overflow") d = "no overflow reported";
    return d;
  }
  auto check = [&](const char* name, u128 v) {
    if (j.at(name).is_null() || static_cast<u128>(j.at(name).get<std::int64_t>()) != v)
      d += (d.empty() ? "" : ", ") + std::string(name) + " " + j.at(name).dump() + " != " +
           std::to_string(static_cast<std::int64_t>(v));
  };
  check("energy_fj", total), check("energy_matrix_fj", matrix), check("energy_vector_fj", vector);
  check("energy_sram_fj", sram), check("energy_hbm_fj", hbm), check("energy_links_fj", links);
  check("energy_static_fj", stat);
  if (j.at("energy_status") != "ok") d += ", energy_status " + j.at("energy_status").dump();
  return d;
}

}  // namespace kb::testing
