#include "topology_summary.h"

#include <cstdio>

#include "../../device/common/area.h"

namespace kb {

namespace {
double mm2(std::int64_t um2) { return static_cast<double>(um2) / 1e6; }
double pe_peak_fp16_tflops(const HwConfig& h) {
  return 2.0 * static_cast<double>(h.matrix_rows * h.matrix_cols) * static_cast<double>(h.clock_mhz) / 1e6;
}
}  // namespace

double peak_fp16_tflops(const HwConfig& h) { return pe_peak_fp16_tflops(h) * static_cast<double>(h.total_pes()); }

nlohmann::json topology_summary(const TopologySpec& t) {
  const double pe_tflops = pe_peak_fp16_tflops(t);
  const HwArea a = hw_area(t);
  const double peak = peak_fp16_tflops(t);
  // Static power: every PE, cube and SIP of the machine (mW).
  const double static_mw = static_cast<double>(t.pe_static_mw) * static_cast<double>(t.total_pes()) +
                           static_cast<double>(t.cube_static_mw) * static_cast<double>(t.total_cubes()) +
                           static_cast<double>(t.sip_static_mw) * static_cast<double>(t.sips);
  return {
      {"name", t.name},
      {"source", t.source},
      {"hash", hash_hex(t.hash)},
      {"sips", t.sips},
      {"cubes", t.total_cubes()},
      {"cubes_per_sip", t.cubes_per_sip()},
      {"pes", t.total_pes()},
      {"pes_per_cube", t.pes_per_cube()},
      {"pe_peak_fp16_tflops", pe_tflops},
      {"peak_fp16_tflops", peak},
      {"hbm_bandwidth_gbps", t.hbm_bandwidth_gbps * t.total_cubes()},
      {"hbm_capacity_gib", static_cast<double>(t.hbm_capacity_mib * t.total_cubes()) / 1024.0},
      {"sram_total_mib", static_cast<double>(t.sram_kib * t.total_pes()) / 1024.0},
      {"area_mm2",
       {{"pe", mm2(a.pe)}, {"pe_matrix", mm2(a.pe_matrix)}, {"pe_vector", mm2(a.pe_vector)}, {"pe_sram", mm2(a.pe_sram)},
        {"cube", mm2(a.cube)}, {"hbm_phy", mm2(a.hbm_phy)}, {"sip", mm2(a.sip)},
        {"sip_cube_link_phys", mm2(a.cube_link_phys)}, {"sip_link_phys", mm2(a.sip_link_phys)},
        {"total", mm2(a.machine)}}},
      {"peak_fp16_tflops_per_mm2", a.machine > 0 ? peak / mm2(a.machine) : 0.0},
      {"static_power_w", static_mw / 1e3},
      {"matrix", {{"rows", t.matrix_rows}, {"cols", t.matrix_cols}, {"dataflow", to_string(t.dataflow)}}},
      {"links",
       {{"pe_ipcq", {{"bandwidth_gbps", t.ipcq.bandwidth_gbps}, {"latency_ns", t.ipcq.latency_ns}}},
        {"cube_mesh", {{"bandwidth_gbps", t.cube_link.bandwidth_gbps}, {"latency_ns", t.cube_link.latency_ns}}},
        {"sip", {{"topology", to_string(t.sip_topology)}, {"bandwidth_gbps", t.sip_link.bandwidth_gbps},
                 {"latency_ns", t.sip_link.latency_ns}}}}},
  };
}

std::string topology_summary_text(const TopologySpec& t) {
  const auto j = topology_summary(t);
  const auto& area = j["area_mm2"];
  char buf[4096];
  std::snprintf(buf, sizeof buf,
                "topology %s (%s, hash %s)\n"
                "  SIPs               %lld (%s)\n"
                "  cubes              %lld (%lldx%lld per SIP)\n"
                "  PEs                %lld (%lldx%lld per cube)\n"
                "  matrix engine      %lldx%lld fp16 MACs, %s, %lld MHz\n"
                "  peak fp16          %.1f TFLOP/s (%.3f per PE)\n"
                "  HBM                %lld GB/s, %.1f GiB in all (%lld GB/s per cube)\n"
                "  SRAM               %.1f MiB in all (%lld KiB per PE)\n"
                "  area               %.1f mm2 (%.3f TFLOP/s per mm2); a PE %.3f mm2 (matrix %.3f, vector %.3f,\n"
                "                     SRAM %.3f), a cube %.2f mm2 with %.2f of HBM PHY, a SIP %.1f mm2 with\n"
                "                     %.2f of mesh link PHYs and %.2f of SIP link PHYs\n"
                "  static power       %.2f W (%lld mW per PE, %lld per cube, %lld per SIP)\n"
                "  energy per action  MAC %lld fJ, vector op %lld fJ; per byte: SRAM read %lld fJ, write %lld,\n"
                "                     HBM read %lld, write %lld, PE copy %lld, mesh hop %lld, SIP hop %lld\n"
                "  links, per direction:\n"
                "    PE-to-PE ipcq    %lld GB/s, %lld ns\n"
                "    cube mesh        %lld GB/s, %lld ns\n"
                "    SIP-to-SIP       %lld GB/s, %lld ns\n",
                t.name.c_str(), t.source.c_str(), hash_hex(t.hash).c_str(), (long long)t.sips,
                to_string(t.sip_topology), (long long)t.total_cubes(), (long long)t.cube_rows, (long long)t.cube_cols,
                (long long)t.total_pes(), (long long)t.pe_rows, (long long)t.pe_cols, (long long)t.matrix_rows,
                (long long)t.matrix_cols, to_string(t.dataflow), (long long)t.clock_mhz,
                j["peak_fp16_tflops"].get<double>(), j["pe_peak_fp16_tflops"].get<double>(),
                (long long)(t.hbm_bandwidth_gbps * t.total_cubes()), j["hbm_capacity_gib"].get<double>(),
                (long long)t.hbm_bandwidth_gbps, j["sram_total_mib"].get<double>(), (long long)t.sram_kib,
                area["total"].get<double>(), j["peak_fp16_tflops_per_mm2"].get<double>(), area["pe"].get<double>(),
                area["pe_matrix"].get<double>(), area["pe_vector"].get<double>(), area["pe_sram"].get<double>(),
                area["cube"].get<double>(), area["hbm_phy"].get<double>(), area["sip"].get<double>(),
                area["sip_cube_link_phys"].get<double>(), area["sip_link_phys"].get<double>(),
                j["static_power_w"].get<double>(), (long long)t.pe_static_mw, (long long)t.cube_static_mw,
                (long long)t.sip_static_mw, (long long)t.mac_fj, (long long)t.vector_op_fj,
                (long long)t.sram_read_fj_per_byte, (long long)t.sram_write_fj_per_byte,
                (long long)t.hbm_read_fj_per_byte, (long long)t.hbm_write_fj_per_byte,
                (long long)t.ipcq.energy_fj_per_byte, (long long)t.cube_link.energy_fj_per_byte,
                (long long)t.sip_link.energy_fj_per_byte,
                (long long)t.ipcq.bandwidth_gbps, (long long)t.ipcq.latency_ns, (long long)t.cube_link.bandwidth_gbps,
                (long long)t.cube_link.latency_ns, (long long)t.sip_link.bandwidth_gbps,
                (long long)t.sip_link.latency_ns);
  return buf;
}

}  // namespace kb
