#include "fields.h"

#include <algorithm>
#include <iterator>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "../common/error.h"

namespace kb {
namespace {

#define KB_HW(member) offsetof(HwConfig, member)
#define KB_LINK(link, member) (offsetof(HwConfig, link) + offsetof(LinkSpec, member))

}  // namespace

namespace {
// The table without ranges: each field's range is kHwRanges's (src/device/common/hw.h), the
// one list the device's checks read too.
std::vector<HwField> fields_without_ranges() {
  return {
      {"system.sips", KB_HW(sips), true, 0, {}, "count",
       "number of packages (SIPs); a collective rank is one SIP"},
      {"system.sip_link.topology", KB_HW(sip_topology), true, 0, {"ring", "fully_connected", "switch"}, "",
       "how SIPs are joined"},
      {"system.sip_link.bandwidth_gbps", KB_LINK(sip_link, bandwidth_gbps), true, 0, {}, "GB/s",
       "SIP-to-SIP link bandwidth per direction, GB/s (10^9 bytes/s)"},
      {"system.sip_link.latency_ns", KB_LINK(sip_link, latency_ns), true, 0, {}, "ns",
       "SIP-to-SIP link latency, ns"},
      {"sip.cube_rows", KB_HW(cube_rows), true, 0, {}, "count", "rows of the cube grid in one SIP"},
      {"sip.cube_cols", KB_HW(cube_cols), true, 0, {}, "count", "columns of the cube grid in one SIP"},
      {"sip.cube_link.bandwidth_gbps", KB_LINK(cube_link, bandwidth_gbps), true, 0, {}, "GB/s",
       "cube-to-cube mesh link bandwidth per direction, GB/s"},
      {"sip.cube_link.latency_ns", KB_LINK(cube_link, latency_ns), true, 0, {}, "ns",
       "cube-to-cube mesh link latency per hop, ns"},
      {"cube.pe_rows", KB_HW(pe_rows), true, 0, {}, "count", "rows of the PE grid in one cube"},
      {"cube.pe_cols", KB_HW(pe_cols), true, 0, {}, "count", "columns of the PE grid in one cube"},
      {"cube.hbm.bandwidth_gbps", KB_HW(hbm_bandwidth_gbps), true, 0, {}, "GB/s",
       "HBM stack bandwidth, split evenly over the PEs a launch uses in the cube, GB/s"},
      {"cube.hbm.latency_ns", KB_HW(hbm_latency_ns), true, 0, {}, "ns", "HBM access latency, ns"},
      {"cube.hbm.capacity_mib", KB_HW(hbm_capacity_mib), true, 0, {}, "MiB",
       "HBM stack capacity, MiB"},
      {"cube.ipcq.bandwidth_gbps", KB_LINK(ipcq, bandwidth_gbps), true, 0, {}, "GB/s",
       "PE-to-PE copy queue bandwidth per direction, GB/s"},
      {"cube.ipcq.latency_ns", KB_LINK(ipcq, latency_ns), true, 0, {}, "ns",
       "PE-to-PE copy latency, ns"},
      {"pe.clock_mhz", KB_HW(clock_mhz), true, 0, {}, "MHz", "PE clock, MHz"},
      {"pe.matrix.rows", KB_HW(matrix_rows), true, 0, {}, "MACs", "systolic array rows (fp16 MACs)"},
      {"pe.matrix.cols", KB_HW(matrix_cols), true, 0, {}, "MACs", "systolic array columns (fp16 MACs)"},
      {"pe.matrix.dataflow", KB_HW(dataflow), false, 0, {"os", "ws", "is"}, "",
       "systolic dataflow: output, weight or input stationary"},
      {"pe.vector.lanes", KB_HW(vector_lanes), true, 0, {}, "elements/cycle",
       "vector engine lanes (elements per cycle)"},
      {"pe.sram_kib", KB_HW(sram_kib), true, 0, {}, "KiB", "local SRAM per PE, KiB"},
      {"pe.dma.engines", KB_HW(dma_engines), false, 1, {}, "count", "DMA engines per PE; their rates add up"},
      {"pe.dma.bandwidth_gbps", KB_HW(dma_bandwidth_gbps), true, 0, {}, "GB/s",
       "bandwidth of one DMA engine, GB/s"},
      // What a design costs: energy per action, static power, area. Optional, each default
      // sourced in docs/topology.md (7 nm).
      {"system.sip_link.energy_fj_per_byte", KB_LINK(sip_link, energy_fj_per_byte), false, 44000, {}, "fJ/byte",
       "energy of one byte over one SIP-to-SIP link hop"},
      {"system.sip_link.phy_area_um2", KB_HW(sip_link_phy_area_um2), false, 1760000, {}, "um^2",
       "PHY area of one SIP link direction (both ends)"},
      {"sip.static_mw", KB_HW(sip_static_mw), false, 0, {}, "mW",
       "static power of a SIP beyond its cubes and PEs"},
      {"sip.cube_link.energy_fj_per_byte", KB_LINK(cube_link, energy_fj_per_byte), false, 2376, {}, "fJ/byte",
       "energy of one byte over one cube-to-cube mesh link hop"},
      {"sip.cube_link.phy_area_um2", KB_HW(cube_link_phy_area_um2), false, 379000, {}, "um^2",
       "PHY area of one mesh link direction (both ends)"},
      {"cube.static_mw", KB_HW(cube_static_mw), false, 384, {}, "mW",
       "static power of a cube beyond its PEs (its HBM stack in standby)"},
      {"cube.hbm.read_fj_per_byte", KB_HW(hbm_read_fj_per_byte), false, 31200, {}, "fJ/byte",
       "energy of reading one byte from HBM (device and interface)"},
      {"cube.hbm.write_fj_per_byte", KB_HW(hbm_write_fj_per_byte), false, 31200, {}, "fJ/byte",
       "energy of writing one byte to HBM (device and interface)"},
      {"cube.hbm.phy_area_um2", KB_HW(hbm_phy_area_um2), false, 10450000, {}, "um^2",
       "area of the HBM PHY on the cube's die"},
      {"cube.ipcq.energy_fj_per_byte", KB_LINK(ipcq, energy_fj_per_byte), false, 323, {}, "fJ/byte",
       "energy of one byte copied PE to PE inside a cube"},
      {"pe.static_mw", KB_HW(pe_static_mw), false, 11, {}, "mW", "static power of one PE"},
      {"pe.matrix.mac_fj", KB_HW(mac_fj), false, 500, {}, "fJ", "energy of one fp16 multiply-accumulate"},
      {"pe.matrix.mac_area_um2", KB_HW(mac_area_um2), false, 263, {}, "um^2", "area of one fp16 MAC of the array"},
      {"pe.vector.op_fj", KB_HW(vector_op_fj), false, 160, {}, "fJ", "energy of one vector operation on one element"},
      {"pe.vector.lane_area_um2", KB_HW(vector_lane_area_um2), false, 263, {}, "um^2", "area of one vector lane"},
      {"pe.sram_read_fj_per_byte", KB_HW(sram_read_fj_per_byte), false, 1750, {}, "fJ/byte",
       "energy of reading one byte of the PE's SRAM"},
      {"pe.sram_write_fj_per_byte", KB_HW(sram_write_fj_per_byte), false, 1750, {}, "fJ/byte",
       "energy of writing one byte of the PE's SRAM"},
      {"pe.sram_area_um2_per_mib", KB_HW(sram_area_um2_per_mib), false, 323450, {}, "um^2/MiB",
       "area of 1 MiB of the PE's SRAM, periphery included"},
  };
}

std::vector<HwField> with_ranges(std::vector<HwField> fields) {
  KB_INTERNAL_CHECK(fields.size() == std::size(kHwRanges), "the topology fields and kHwRanges differ in number");
  for (HwField& f : fields) {
    const HwRange* r = std::find_if(std::begin(kHwRanges), std::end(kHwRanges), [&](const HwRange& x) { return x.offset == f.offset; });
    KB_INTERNAL_CHECK(r != std::end(kHwRanges), std::string("topology field ") + f.path + " has no range in kHwRanges");
    f.lo = r->lo, f.hi = r->hi;
    KB_INTERNAL_CHECK(!f.is_enum() || (f.lo == 0 && f.hi == static_cast<std::int64_t>(f.names.size()) - 1),
                      std::string("topology field ") + f.path + ": its names and its range differ");
  }
  return fields;
}
}  // namespace

const std::vector<HwField>& hw_fields() {
  static const std::vector<HwField> f = with_ranges(fields_without_ranges());
  return f;
}

const HwField* find_hw_field(const std::string& path) {
  for (const HwField& f : hw_fields())
    if (path == f.path) return &f;
  return nullptr;
}

std::int64_t HwField::get(const HwConfig& h) const {
  std::int64_t v;
  std::memcpy(&v, reinterpret_cast<const char*>(&h) + offset, sizeof v);
  return v;
}

void HwField::set(HwConfig& h, std::int64_t v) const { std::memcpy(reinterpret_cast<char*>(&h) + offset, &v, sizeof v); }

std::string HwField::text(std::int64_t v) const {
  if (is_enum()) return v >= 0 && v < static_cast<std::int64_t>(names.size()) ? names[static_cast<std::size_t>(v)] : "?";
  return std::to_string(v);
}

nlohmann::json HwField::json(std::int64_t v) const {
  if (is_enum()) return text(v);
  return v;
}

std::string HwField::range_text() const {
  if (!is_enum()) return std::to_string(lo) + ".." + std::to_string(hi);
  std::string r;
  for (const auto& n : names) r += (r.empty() ? "" : "|") + n;
  return r;
}

bool HwField::parse(const std::string& s, std::int64_t* v, std::string* why) const {
  if (is_enum()) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (s == names[i]) {
        *v = static_cast<std::int64_t>(i);
        return true;
      }
    *why = "expected one of " + range_text() + " (got '" + s + "')";
    return false;
  }
  return parse_int_in(s, lo, hi, v, why);
}

bool integer_text_ok(const std::string& s, bool negative, std::string* why) {
  // Decimal digits only, an optional '-' first: no spaces, signs, prefixes or NULs.
  bool digits = !s.empty() && s != "-";
  for (std::size_t i = 0; i < s.size() && digits; ++i)
    digits = (s[i] >= '0' && s[i] <= '9') || (i == 0 && s[i] == '-' && negative);
  if (!digits) {
    *why = std::string(negative ? "expected an integer" : "expected a non-negative integer") + " (got '" + s + "')";
    return false;
  }
  const std::size_t first = s[0] == '-' ? 1 : 0;
  if (s.size() > first + 1 && s[first] == '0') {
    *why = "a leading zero (got '" + s + "'); write the number without it";
    return false;
  }
  return true;
}

bool parse_int_in(const std::string& s, std::int64_t lo, std::int64_t hi, std::int64_t* v, std::string* why) {
  if (!integer_text_ok(s, true, why)) return false;
  errno = 0;
  const long long x = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) {
    *why = "value out of range (got '" + s + "')";
    return false;
  }
  if (x < lo) {
    *why = std::string("must be ") + (lo == 1 ? "> 0" : ">= " + std::to_string(lo)) + " (got " + s + ")";
    return false;
  }
  if (x > hi) {
    *why = "must be <= " + std::to_string(hi) + " (got " + s + ")";
    return false;
  }
  *v = x;
  return true;
}

std::int64_t parse_int_flag(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  std::string why;
  if (!parse_int_in(text, lo, hi, &v, &why)) throw InputError(flag + " " + (text.empty() ? "''" : text) + ": " + why);
  return v;
}

nlohmann::json hw_json(const HwConfig& h) {
  nlohmann::json j = nlohmann::json::object();
  for (const HwField& f : hw_fields()) j[f.path] = f.json(f.get(h));
  return j;
}

nlohmann::json topology_record(const TopologySpec& t) {
  return {{"name", t.name}, {"source", t.source}, {"hash", hash_hex(t.hash)}, {"overrides", t.overrides},
          {"schema_version", t.schema_version}, {"fields", hw_json(t)}};
}

}  // namespace kb
