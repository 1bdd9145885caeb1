#include "topology_summary.h"

#include <cstdio>

namespace kb {

nlohmann::json topology_summary(const TopologySpec& t) {
  const double pe_tflops = 2.0 * static_cast<double>(t.matrix_rows * t.matrix_cols) * static_cast<double>(t.clock_mhz) / 1e6;
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
      {"peak_fp16_tflops", pe_tflops * static_cast<double>(t.total_pes())},
      {"hbm_bandwidth_gbps", t.hbm_bandwidth_gbps * t.total_cubes()},
      {"hbm_capacity_gib", static_cast<double>(t.hbm_capacity_mib * t.total_cubes()) / 1024.0},
      {"sram_total_mib", static_cast<double>(t.sram_kib * t.total_pes()) / 1024.0},
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
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "topology %s (%s, hash %s)\n"
                "  SIPs               %lld (%s)\n"
                "  cubes              %lld (%lldx%lld per SIP)\n"
                "  PEs                %lld (%lldx%lld per cube)\n"
                "  matrix engine      %lldx%lld fp16 MACs, %s, %lld MHz\n"
                "  peak fp16          %.1f TFLOP/s (%.3f per PE)\n"
                "  HBM                %lld GB/s, %.1f GiB in all (%lld GB/s per cube)\n"
                "  SRAM               %.1f MiB in all (%lld KiB per PE)\n"
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
                (long long)t.ipcq.bandwidth_gbps, (long long)t.ipcq.latency_ns, (long long)t.cube_link.bandwidth_gbps,
                (long long)t.cube_link.latency_ns, (long long)t.sip_link.bandwidth_gbps,
                (long long)t.sip_link.latency_ns);
  return buf;
}

}  // namespace kb
