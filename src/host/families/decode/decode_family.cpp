// The decode family's descriptor: GQA decode attention of one token against a KV cache
// sharded over the cubes and PEs of SIP 0 by one of four cases.
#include <cstddef>

#include "decode_program.h"
#include "../family.h"

namespace kb {

namespace {

using C = DecodeConfig;
using R = DecodeResult;

template <class F>
std::function<nlohmann::json(const void*, const void*)> col(F f) {
  return typed_getter<C, R>(f);
}
double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

Family make() {
  Family f;
  f.name = "decode";
  f.description =
      "GQA decode attention (flash decoding, one token) against a KV cache sharded over SIP 0's cubes and PEs by case "
      "1-4";
  f.id = batched::Family::decode;
  f.hw_offset = offsetof(C, hw);
  f.axes = {
      axis("case", "--case",
           "KV sharding: 1 cube-SP / PE-TP, 2 cube-replicate / PE-TP, 3 cube-replicate / PE-SP, 4 cube-SP / PE-SP",
           offsetof(C, decode_case))
          .range(1, 4),
      axis("s_kv", "--s-kv", "KV positions (context length)", offsetof(C, s_kv))
          .range(1, kDecMaxSkv).default_to("131072").defines_problem(),
      axis("batch", "--batch", "sequences decoded together", offsetof(C, batch))
          .range(1, kDecMaxBatch).default_to("1").defines_problem(),
      axis("h_q", "--h-q", "query heads", offsetof(C, h_q)).range(1, kDecMaxHeads).default_to("8").defines_problem(),
      axis("h_kv", "--h-kv", "KV heads (h_q a multiple of it)", offsetof(C, h_kv))
          .range(1, kDecMaxHeads).default_to("1").defines_problem(),
      axis("d_head", "--d-head", "head dimension", offsetof(C, d_head))
          .range(1, kDecMaxDHead).default_to("128").defines_problem(),
      axis("kv_chunk", "--kv-chunk",
           "KV positions per step; auto: the longest power of two from 512 down whose buffers fit the SRAM",
           offsetof(C, chunk))
          .range(1, kDecMaxSkv).default_to("auto").auto_means(0),
      axis("allreduce", "--allreduce", "case 4: every cube ends with the answer (off, on; the bare flag: on)",
           offsetof(C, allreduce))
          .choices({"off", "on"}).default_to("off"),
  };
  f.bare = {{"allreduce", "on"}};
  f.hw_axes = {
      {"hbm_gbps", "--hbm-gbps", "cube.hbm.bandwidth_gbps", "HBM bandwidth per cube, GB/s"},
      {"cube_link_gbps", "--cube-link-gbps", "sip.cube_link.bandwidth_gbps", "cube mesh link bandwidth, GB/s"},
      {"ipcq_gbps", "--ipcq-gbps", "cube.ipcq.bandwidth_gbps", "PE copy-queue bandwidth, GB/s"},
  };
  f.default_group = "s_kv,batch,h_q,h_kv,d_head";
  f.statuses = name_list(kDecStatusNames);
  f.status_message = [](std::int32_t s, const void* c) { return decode_status_message(s, *static_cast<const C*>(c)); };
  f.costs = {{"footprint", "KV cache bytes in HBM, every cube"},
             {"link_bytes", "bytes over links, every level"},
             {"pes", "PEs that read a KV shard"}};
  f.default_cost = "footprint";
  auto figure = [](const char* name, const char* unit, const char* help, std::int64_t R::*m, bool terminal = false) {
    return parity_figure<C, R>(name, unit, help, m, terminal);
  };
  f.columns = {
      figure("latency_ps", "ps", "end-to-end time", &R::latency_ps, true),
      {"lower_bound_ps", "ps", "the KV cache's bytes over every cube's HBM bandwidth: the best any sharding could do",
       ColType::integer, col([](const C& c, const R&) { return dec_lower_bound_ps(c); }), false, true},
      {"case_bound_ps", "ps", "the busiest cube's KV reads over its HBM bandwidth: the best this placement could do",
       ColType::integer, col([](const C& c, const R&) { return dec_case_bound_ps(c); }), false, true},
      {"x_lower_bound", "", "latency / lower bound", ColType::real, col([](const C& c, const R& r) {
         return ratio(static_cast<double>(r.latency_ps), static_cast<double>(dec_lower_bound_ps(c)));
       }), false, true},
      {"mac_util", "", "MACs / (array MACs per cycle x the SIP's PEs x latency in cycles)", ColType::real,
       col([](const C& c, const R& r) {
         const double cycles = static_cast<double>(r.latency_ps) * static_cast<double>(c.hw.clock_mhz) / 1e6;
         return ratio(static_cast<double>(r.macs), static_cast<double>(c.hw.matrix_rows * c.hw.matrix_cols) *
                                                       static_cast<double>(c.hw.cubes_per_sip() * c.hw.pes_per_cube()) * cycles);
       }), false, true},
      figure("mac_cycles", "cycles", "matrix-engine cycles, summed over PEs", &R::mac_cycles),
      figure("macs", "", "multiply-accumulates (q K^T and P V)", &R::macs),
      figure("matrix_busy_ps", "ps", "matrix engines' busy time, summed", &R::matrix_busy_ps),
      figure("vector_busy_ps", "ps", "vector engines' busy time, summed", &R::vector_busy_ps),
      figure("dma_busy_ps", "ps", "DMA queues' busy time, summed", &R::dma_busy_ps),
      figure("hbm_read_bytes", "bytes", "HBM bytes read (q, K, V)", &R::hbm_read_bytes),
      figure("hbm_write_bytes", "bytes", "HBM bytes written (the answer)", &R::hbm_write_bytes),
      figure("copies_pe", "", "PE-to-PE copies (copy queues)", &R::copies_pe),
      figure("copies_cube", "", "cube mesh link traversals", &R::copies_cube),
      figure("copies_sip", "", "SIP link traversals", &R::copies_sip),
      figure("link_bytes_pe", "bytes", "bytes over PE copy queues", &R::link_bytes_pe),
      figure("link_bytes_cube", "bytes", "bytes over cube mesh links (each hop)", &R::link_bytes_cube, true),
      figure("link_bytes_sip", "bytes", "bytes over SIP links (each hop)", &R::link_bytes_sip),
      figure("kv_footprint_bytes", "bytes", "K and V in HBM, every cube", &R::kv_footprint_bytes, true),
      figure("kv_max_cube_bytes", "bytes", "K and V in the fullest cube's HBM", &R::kv_max_cube_bytes),
      {"kv_cube_bytes", "bytes", "K and V in each cube's HBM", ColType::any, col([](const C& c, const R&) {
         nlohmann::json a = nlohmann::json::array();
         for (std::int64_t q = 0; q < c.hw.cubes_per_sip(); ++q) a.push_back(dec_kv_cube_bytes(c, q));
         return a;
       })},
      figure("working_pes", "", "PEs that read a KV shard", &R::working_pes),
      {"root_cube", "", "the cube a cross-cube reduce leaves the answer on (-1: none)", ColType::integer,
       col([](const C& c, const R&) { return dec_root_cube(c); })},
      {"sram_bytes", "bytes", "SRAM the busiest PE needs", ColType::integer, col([](const C& c, const R&) {
         return dec_sram_bytes(c, dec_max_rows(c), std::min(c.chunk, dec_max_shard(c)));
       })},
  };
  set_engines<C, R>(
      f, [](const C& c) { return decode_check(c); },
      [](const C& c, const std::string* trace_path) { return decode_reference(c, trace_path); },
      [](const C& c) { return decode_reference_ops(c); });
  add_energy<DecodeModel>(f);
  return f;
}

}  // namespace

const Family& decode_family() {
  static const Family f = make();
  return f;
}

}  // namespace kb
