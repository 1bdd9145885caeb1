// The collective family's descriptor (also named allreduce, its first op): a collective
// (allreduce, reduce, allgather, reducescatter or alltoall) over the ranks of one level, by one
// algorithm, on SRAM or HBM buffers.
#include <cstddef>
#include <cstdio>

#include "../../analytical/collectives.h"
#include "allreduce_program.h"
#include "allreduce_figures.h"
#include "../family.h"

namespace kb {

namespace {

using C = AllreduceConfig;
using R = AllreduceResult;

template <class F>
std::function<nlohmann::json(const void*, const void*)> col(F f) {
  return typed_getter<C, R>(f);
}


Family make() {
  Family f;
  f.name = "collective";
  f.aliases = {"allreduce"};
  f.description =
      "a collective (allreduce, reduce, allgather, reducescatter or alltoall of f16 values) over the ranks of one level "
      "(PEs, cubes or SIPs), or allreduce and reduce over every PE level by level (hier)";
  f.id = batched::Family::allreduce;
  f.hw_offset = offsetof(C, hw);
  f.axes = {
      axis("bytes", "--bytes", "bytes per rank (f16 values: bytes / 2)", offsetof(C, bytes))
          .range(2, kCollMaxBytes).defines_problem(),
      axis("level", "--level",
           "what a rank is: pe (PEs of cube 0), cube (cubes of SIP 0), sip (SIPs), hier (every PE of the launch, level by "
           "level)",
           offsetof(C, level))
          .choices(name_list(kCollLevelNames)).defines_problem(),
      axis("algo", "--algo",
           "ring, hd (halving-doubling), tree (binomial), mesh2d, root (chains to the grid's centre): allreduce and reduce; "
           "ring and hd: allgather and reducescatter; pairwise (exchange): alltoall",
           offsetof(C, algo))
          .choices(name_list(kCollAlgoNames)),
      axis("ranks", "--ranks", "ranks (2..the level's count, at most 64; hier: PEs, up to 4096)", offsetof(C, ranks))
          .range(2, kCollMaxHierRanks)
          .defines_problem()
          .max_given("level",
                     [](const HwConfig& h, std::int64_t level) {
                       return level == static_cast<std::int64_t>(CollLevel::hier)
                                  ? imin(kCollMaxHierRanks, h.total_pes())
                                  : imin(kCollMaxRanks, coll_level_size(h, level));
                     }),
      axis("buffer", "--buffer", "where the values live: sram or hbm", offsetof(C, buffer)).choices(name_list(kCollBufferNames)),
      axis("op", "--op",
           "allreduce (every rank ends with the sum), reduce (the root does), allgather (every rank ends with every rank's "
           "piece), reducescatter (each rank with the sum of its own piece), alltoall (piece j of each rank to rank j)",
           offsetof(C, op))
          .choices(name_list(kCollOpNames)).default_to("allreduce").defines_problem(),
      axis("chunks", "--chunks", "chunks per rank's buffer, pipelined", offsetof(C, chunks))
          .range(1, kCollMaxChunks).default_to("1"),
      axis("channels", "--channels",
           "channels (cube and sip levels): copies of the collective side by side, each over its own PE of every rank "
           "(cube: PE g of each cube; sip: cube g of each SIP, then further PEs) and its share of every chunk, sharing "
           "the links; auto: the count of least latency",
           offsetof(C, channels))
          .range(1, kCollMaxChannels).default_to("1").auto_means(0),
  };
  f.hw_axes = {
      {"sip_link_gbps", "--sip-link-gbps", "system.sip_link.bandwidth_gbps", "SIP link bandwidth per direction, GB/s"},
      {"cube_link_gbps", "--cube-link-gbps", "sip.cube_link.bandwidth_gbps", "cube mesh link bandwidth, GB/s"},
      {"ipcq_gbps", "--ipcq-gbps", "cube.ipcq.bandwidth_gbps", "PE copy-queue bandwidth, GB/s"},
  };
  f.default_group = "bytes,level,ranks,op";
  f.statuses = name_list(kArStatusNames);
  f.status_message = [](std::int32_t s, const void* c) { return allreduce_status_message(s, *static_cast<const C*>(c)); };
  f.costs = {{"ranks", "ranks taking part"},
             {"link_bytes", "bytes over links, every level"},
             {"hbm", "HBM bytes read and written"}};
  f.default_cost = "ranks";
  auto figure = [](const char* name, const char* unit, const char* help, std::int64_t R::*m, bool terminal = false) {
    return parity_figure<C, R>(name, unit, help, m, terminal);
  };
  f.columns = {
      figure("latency_ps", "ps", "end-to-end time", &R::latency_ps, true),
      {"analytical_ps", "ps", "the alpha-beta-gamma model's time (docs/model.md section 11)", ColType::integer,
       col([](const C& c, const R&) { return collective_analytical_ps(c); }), false, true},
      {"x_analytical", "", "latency / analytical", ColType::real, col([](const C& c, const R& r) {
         const std::int64_t a = collective_analytical_ps(c);
         return a > 0 ? static_cast<double>(r.latency_ps) / static_cast<double>(a) : 0.0;
       }), false, true},
      {"algbw_gbps", "GB/s", "bytes / latency (nccl-tests)", ColType::real,
       col([](const C& c, const R& r) { return analytical::algbw_gbps(c.bytes, r.latency_ps); }), false, true},
      {"busbw_gbps", "GB/s",
       "nccl-tests' bus bandwidth: algbw x 2(ranks-1)/ranks for allreduce, x (ranks-1)/ranks for allgather, reducescatter "
       "and alltoall, algbw for reduce",
       ColType::real, col([](const C& c, const R& r) {
         return analytical::busbw_gbps(static_cast<CollOp>(c.op), c.bytes, r.latency_ps, c.ranks);
       }), false, true},
      figure("link_bytes_pe", "bytes", "bytes over PE copy queues", &R::link_bytes_pe),
      figure("link_bytes_cube", "bytes", "bytes over cube mesh links (each hop)", &R::link_bytes_cube),
      figure("link_bytes_sip", "bytes", "bytes over SIP links (each hop)", &R::link_bytes_sip),
      figure("copies_pe", "", "copies over PE copy queues", &R::copies_pe),
      figure("copies_cube", "", "cube mesh link traversals", &R::copies_cube),
      figure("copies_sip", "", "SIP link traversals", &R::copies_sip),
      figure("hbm_read_bytes", "bytes", "HBM bytes read", &R::hbm_read_bytes),
      figure("hbm_write_bytes", "bytes", "HBM bytes written", &R::hbm_write_bytes),
      figure("vector_busy_ps", "ps", "vector engines' busy time, summed", &R::vector_busy_ps),
      figure("transfers", "", "messages between ranks", &R::transfers),
      {"sram_bytes", "bytes", "SRAM one rank's PE needs", ColType::integer,
       col([](const C& c, const R&) { return coll_sram_bytes(c); })},
      {"inboxes", "", "copies of the buffer a rank keeps for values to add", ColType::integer,
       col([](const C& c, const R&) { return coll_total_inboxes(c); })},
  };
  set_engines<C, R>(
      f, [](const C& c) { return allreduce_check(c); },
      [](const C& c, const std::string* trace_path) { return allreduce_reference(c, trace_path); },
      [](const C& c) { return allreduce_reference_ops(c); });
  f.data_refusal = [](const void* c) { return collective_data_refusal(*static_cast<const C*>(c)); };
  f.data_run = [](const void* cfg, std::uint64_t seed, std::string* line) {
    const C& c = *static_cast<const C*>(cfg);
    const CollectiveDataCheck d = collective_data_check(c, run_collective(c, true, seed));
    char text[320];
    std::snprintf(text, sizeof text,
                  "%s of %lld ranks' random f16 values (seed %llu) against float64: %lld values compared, %lld outside "
                  "the f16 rounding of the adds, max |error| %.3g, max |expected| %.3g",
                  kCollOpNames[c.op], static_cast<long long>(c.ranks), static_cast<unsigned long long>(seed),
                  static_cast<long long>(d.values), static_cast<long long>(d.wrong), d.max_abs_error, d.max_abs_expected);
    *line = text;
    return nlohmann::json{{"seed", seed},
                          {"values", d.values},
                          {"wrong", d.wrong},
                          {"ok", d.wrong == 0},
                          {"max_abs_error", d.max_abs_error},
                          {"max_abs_expected", d.max_abs_expected}};
  };
  add_energy<AllreduceModel>(f);
  return f;
}

}  // namespace

const Family& allreduce_family() {
  static const Family f = make();
  return f;
}

}  // namespace kb
