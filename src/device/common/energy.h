// Energy from counted actions (docs/model.md section 14, ADR 0022): what a run did, counted by
// either engine, times the topology's energy per action, plus the machine's static power over
// the run's latency. Integer femtojoules, summed in 128 bits; a total past int64 is the
// `energy_overflow` status, never a wrapped value.
#pragma once

#include <cstdint>

#include "hw.h"
#include "kb_hd.h"
#include "units.h"

namespace kb {

// The actions of one run, every rank together. A count at kTimeLimitPs (2^61) is saturated
// (the model's sums stop there) and makes the energy an overflow.
struct Actions {
  std::int64_t macs;
  std::int64_t vector_ops;                         // element-ops of the vector engines (vector_element_ops)
  std::int64_t sram_read_bytes, sram_write_bytes;  // every PE's SRAM
  std::int64_t hbm_read_bytes, hbm_write_bytes;
  std::int64_t link_bytes_pe, link_bytes_cube, link_bytes_sip;  // per hop, as the link_bytes figures
};

// a + k·b, count by count, saturating at kTimeLimitPs (an overflow, to energy_of).
KB_HD inline Actions actions_add(const Actions& a, const Actions& b, std::int64_t k = 1) {
  auto f = [k](std::int64_t x, std::int64_t y) { return sat_add(x, sat_mul(k, y)); };
  return Actions{f(a.macs, b.macs),
                 f(a.vector_ops, b.vector_ops),
                 f(a.sram_read_bytes, b.sram_read_bytes),
                 f(a.sram_write_bytes, b.sram_write_bytes),
                 f(a.hbm_read_bytes, b.hbm_read_bytes),
                 f(a.hbm_write_bytes, b.hbm_write_bytes),
                 f(a.link_bytes_pe, b.link_bytes_pe),
                 f(a.link_bytes_cube, b.link_bytes_cube),
                 f(a.link_bytes_sip, b.link_bytes_sip)};
}

enum EnergyStatus : std::int32_t { kEnergyOk = 0, kEnergyOverflow = 1 };
constexpr const char* kEnergyStatusNames[] = {"ok", "energy_overflow"};

// Femtojoules, by component; all 0 unless status is kEnergyOk. latency_ps: the time static
// power was charged over.
struct Energy {
  std::int32_t status;
  std::int64_t total, matrix, vector, sram, hbm, links, static_;
  ps_t latency_ps;
};

// The machine's static power in mW: every PE, every cube (its HBM stack) and every SIP of the
// topology, whatever part of it a run uses; saturated at 2^61 (energy_of sums it exactly).
KB_HD constexpr std::int64_t hw_static_mw(const HwConfig& h) {
  return sat_mul(h.sips, sat_add(h.sip_static_mw, sat_mul(h.cubes_per_sip(),
                                                          sat_add(h.cube_static_mw, sat_mul(h.pes_per_cube(), h.pe_static_mw)))));
}

#if defined(__SIZEOF_INT128__) || defined(__CUDACC__)
using u128 = unsigned __int128;  // every operand is a checked non-negative count or figure
#else
#error "energy sums need a 128-bit integer (__int128)"
#endif

// Energy of `a` on `h` over `latency_ps`. A mW over a ps is exactly a fJ. A count's product is
// below 2^61 · 10^9 < 2^91. The machine's static power is below 2^82 mW (4096 SIPs of 2^20
// cubes of 2^20 PEs at 10^9 mW each); past 2^63 mW any run that lasts is an overflow before it
// is multiplied, so the static part stays below 2^124 and the sum below 2^125: 128 bits never
// wrap.
KB_HD inline Energy energy_of(const HwConfig& h, const Actions& a, ps_t latency_ps) {
  Energy e{kEnergyOverflow, 0, 0, 0, 0, 0, 0, 0, latency_ps};
  const std::int64_t counts[] = {a.macs,           a.vector_ops,      a.sram_read_bytes,
                                 a.sram_write_bytes, a.hbm_read_bytes, a.hbm_write_bytes,
                                 a.link_bytes_pe,  a.link_bytes_cube, a.link_bytes_sip};
  for (std::int64_t n : counts)
    if (n < 0 || n >= kTimeLimitPs) return e;
  if (latency_ps < 0 || latency_ps >= kTimeLimitPs) return e;
  const std::int64_t figures[] = {h.mac_fj, h.vector_op_fj, h.sram_read_fj_per_byte, h.sram_write_fj_per_byte,
                                  h.hbm_read_fj_per_byte, h.hbm_write_fj_per_byte, h.ipcq.energy_fj_per_byte,
                                  h.cube_link.energy_fj_per_byte, h.sip_link.energy_fj_per_byte, h.pe_static_mw,
                                  h.cube_static_mw, h.sip_static_mw, h.sips, h.cubes_per_sip(), h.pes_per_cube()};
  for (std::int64_t f : figures)
    if (f < 0) return e;
  auto u = [](std::int64_t v) { return static_cast<u128>(v); };
  const u128 matrix = u(a.macs) * u(h.mac_fj);
  const u128 vector = u(a.vector_ops) * u(h.vector_op_fj);
  const u128 sram = u(a.sram_read_bytes) * u(h.sram_read_fj_per_byte) + u(a.sram_write_bytes) * u(h.sram_write_fj_per_byte);
  const u128 hbm = u(a.hbm_read_bytes) * u(h.hbm_read_fj_per_byte) + u(a.hbm_write_bytes) * u(h.hbm_write_fj_per_byte);
  const u128 links = u(a.link_bytes_pe) * u(h.ipcq.energy_fj_per_byte) + u(a.link_bytes_cube) * u(h.cube_link.energy_fj_per_byte) +
                     u(a.link_bytes_sip) * u(h.sip_link.energy_fj_per_byte);
  const u128 mw = u(h.sips) * (u(h.sip_static_mw) + u(h.cubes_per_sip()) * (u(h.cube_static_mw) + u(h.pes_per_cube()) * u(h.pe_static_mw)));
  const u128 max = static_cast<u128>(INT64_MAX);
  if (latency_ps > 0 && mw > max) return e;
  const u128 stat = mw * u(latency_ps);
  const u128 total = matrix + vector + sram + hbm + links + stat;
  if (total > max) return e;  // every part is no larger than the total
  e.status = kEnergyOk;
  e.total = static_cast<std::int64_t>(total);
  e.matrix = static_cast<std::int64_t>(matrix), e.vector = static_cast<std::int64_t>(vector);
  e.sram = static_cast<std::int64_t>(sram), e.hbm = static_cast<std::int64_t>(hbm);
  e.links = static_cast<std::int64_t>(links), e.static_ = static_cast<std::int64_t>(stat);
  return e;
}

// The Pareto cost every family with counted actions has (`--pareto energy`): energy_fj, or
// INT64_MAX on an overflow (behind every config whose energy is known).
constexpr std::int32_t kCostEnergy = 1001;

}  // namespace kb
