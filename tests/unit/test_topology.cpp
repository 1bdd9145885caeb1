#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <fstream>
#include <set>
#include <string>

#include "device/common/area.h"
#include "host/common/error.h"
#include "host/topology/fields.h"
#include "host/topology/load.h"

namespace kb {
namespace {

const std::string kTopo = KB_TEST_TOPOLOGIES;

std::string write_tmp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// A topology file (default.yaml unless `base` is given) with one line replaced, or with
// `to` appended when `from` is empty.
std::string variant(const std::string& name, const std::string& from, const std::string& to,
                    const std::string& base = kTopo + "/default.yaml") {
  std::ifstream in(base);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  if (from.empty()) text += to;
  else {
    const auto pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    text.replace(pos, from.size(), to);
  }
  return write_tmp(name, text);
}

std::string error_of(const std::string& path, const std::vector<std::string>& sets = {}) {
  try {
    load_topology(path, sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Topology, ShippedFilesLoad) {
  const TopologySpec d = load_topology(kTopo + "/default.yaml");
  EXPECT_EQ(d.name, "default");
  EXPECT_EQ(d.total_pes(), 64);
  EXPECT_EQ(d.matrix_rows, 32);
  EXPECT_EQ(d.dataflow, Dataflow::os);
  EXPECT_EQ(d.dma_gbps(), 256);
  EXPECT_EQ(load_topology(kTopo + "/ring8.yaml").sips, 8);
  EXPECT_EQ(load_topology(kTopo + "/tiny.yaml").total_pes(), 8);
}

TEST(Topology, OverrideChangesValueAndHash) {
  const TopologySpec a = load_topology(kTopo + "/default.yaml");
  const TopologySpec b = load_topology(kTopo + "/default.yaml", {"cube.hbm.bandwidth_gbps=1600", "pe.matrix.dataflow=ws"});
  EXPECT_EQ(b.hbm_bandwidth_gbps, 1600);
  EXPECT_EQ(b.dataflow, Dataflow::ws);
  EXPECT_NE(a.hash, b.hash);
  EXPECT_EQ(a.hash, load_topology(kTopo + "/default.yaml").hash);
}

TEST(Topology, MissingFile) {
  EXPECT_EQ(error_of("/nonexistent/x.yaml"), "/nonexistent/x.yaml:1:1: (file): cannot open file (No such file or directory)");
}

TEST(Topology, NotYaml) {
  const std::string p = write_tmp("bad.yaml", "schema_version: 1\nsystem: [1, 2\n");
  EXPECT_NE(error_of(p).find("not valid YAML"), std::string::npos) << error_of(p);
  EXPECT_EQ(error_of(p).rfind(p + ":", 0), 0u);
}

// Each case edits one line of default.yaml; the error names the file, line, column and field.
TEST(Topology, OneBadLine) {
  struct Case {
    const char *file, *from, *to, *error;
  };
  const Case cases[] = {
      {"type.yaml", "bandwidth_gbps: 819", "bandwidth_gbps: fast",
       ":21:21: cube.hbm.bandwidth_gbps: expected an integer (got 'fast')"},
      {"neg.yaml", "bandwidth_gbps: 819", "bandwidth_gbps: -3", ":21:21: cube.hbm.bandwidth_gbps: must be > 0 (got -3)"},
      {"zero.yaml", "bandwidth_gbps: 819", "bandwidth_gbps: 0", ":21:21: cube.hbm.bandwidth_gbps: must be > 0 (got 0)"},
      {"unknown.yaml", "    capacity_mib: 16384", "    capacity_mib: 16384\n    channels: 16",
       ":24:5: cube.hbm.channels: unknown key"},
      {"missing.yaml", "  clock_mhz: 1500\n", "", ":3:1: pe.clock_mhz: required field is missing"},
      {"grid.yaml", "  pe_rows: 2", "  pe_rows: 0", ":18:12: cube.pe_rows: must be > 0 (got 0)"},
      {"big.yaml", "latency_ns: 120", "latency_ns: 9223372036854775",
       ":22:17: cube.hbm.latency_ns: must be <= 1000000000 (got 9223372036854775)"},
      {"version2.yaml", "schema_version: 1", "schema_version: 2", ":3:17: schema_version: must be <= 1 (got 2)"},
      {"version0.yaml", "schema_version: 1", "schema_version: 0", ":3:17: schema_version: must be > 0 (got 0)"},
      {"versionx.yaml", "schema_version: 1", "schema_version: one",
       ":3:17: schema_version: expected an integer (got 'one')"},
  };
  for (const Case& c : cases) {
    const std::string p = variant(c.file, c.from, c.to);
    EXPECT_EQ(error_of(p), p + c.error) << c.file;
  }
}

// The cost fields: sourced defaults when absent, read from a file or --set like any
// field, and a bad value is one clear line naming the field.
TEST(Topology, CostFieldsDefaultAndValidate) {
  const TopologySpec d = load_topology(kTopo + "/default.yaml");
  EXPECT_EQ(d.mac_fj, 500);
  EXPECT_EQ(d.hbm_read_fj_per_byte, 31200);
  EXPECT_EQ(d.cube_link.energy_fj_per_byte, 2376);
  EXPECT_EQ(d.sip_link.energy_fj_per_byte, 44000);
  EXPECT_EQ(d.ipcq.energy_fj_per_byte, 323);
  EXPECT_EQ(d.pe_static_mw, 11);
  EXPECT_EQ(d.sram_area_um2_per_mib, 323450);
  const std::string p = variant("mac.yaml", "    dataflow: os", "    dataflow: os\n    mac_fj: 321\n    mac_area_um2: 0");
  const TopologySpec f = load_topology(p);
  EXPECT_EQ(f.mac_fj, 321);
  EXPECT_EQ(f.mac_area_um2, 0);
  EXPECT_NE(f.hash, d.hash);
  EXPECT_EQ(load_topology(kTopo + "/default.yaml", {"cube.hbm.write_fj_per_byte=7"}).hbm_write_fj_per_byte, 7);
  EXPECT_EQ(error_of(variant("macneg.yaml", "    dataflow: os", "    dataflow: os\n    mac_fj: -1")),
            ::testing::TempDir() + "macneg.yaml:33:13: pe.matrix.mac_fj: must be >= 0 (got -1)");
  EXPECT_EQ(error_of(kTopo + "/default.yaml", {"pe.static_mw=1000000001"}),
            "--set pe.static_mw=1000000001: pe.static_mw: must be <= 1000000000 (got 1000000001)");
  EXPECT_EQ(error_of(kTopo + "/default.yaml", {"sip.cube_link.phy_area_um2=1.5"}),
            "--set sip.cube_link.phy_area_um2=1.5: sip.cube_link.phy_area_um2: expected an integer (got '1.5')");
}

// Areas by hand on the default machine and on ring8, and saturation at 2^61 where a sum or
// product would pass it.
TEST(Topology, AreaAddsUpItsParts) {
  const TopologySpec d = load_topology(kTopo + "/default.yaml");
  const HwArea a = hw_area(d);
  EXPECT_EQ(a.pe_matrix, 32 * 32 * 263);
  EXPECT_EQ(a.pe_vector, 64 * 263);
  EXPECT_EQ(a.pe_sram, 2 * 323450);
  EXPECT_EQ(a.pe, 933044);
  EXPECT_EQ(a.cube, 8 * 933044 + 10450000);
  EXPECT_EQ(a.cube_link_phys, 20 * 379000);  // a 2x4 mesh: 10 links, both ways
  EXPECT_EQ(a.sip_link_phys, 0);             // one SIP: no SIP links
  EXPECT_EQ(a.machine, 8 * (8 * 933044 + 10450000) + 20 * 379000);
  const HwArea r = hw_area(load_topology(kTopo + "/ring8.yaml"));
  EXPECT_EQ(r.sip_link_phys, 2 * 1760000);
  EXPECT_EQ(r.machine, 8 * (a.machine + 2 * 1760000));
  HwConfig fc = load_topology(kTopo + "/ring8.yaml", {"system.sip_link.topology=fully_connected"}).hw();
  EXPECT_EQ(hw_area(fc).sip_link_phys, 7 * 1760000);
  fc.sip_topology = SipTopology::switch_;  // its uplink and its downlink
  EXPECT_EQ(hw_area(fc).sip_link_phys, 2 * 1760000);
  fc.sips = 1;
  EXPECT_EQ(hw_area(fc).sip_link_phys, 0);
  HwConfig odd = d.hw();
  odd.sram_kib = 1000, odd.sram_area_um2_per_mib = 1025;  // 1000 KiB of 1025 µm²/MiB: 1000.97 µm², rounded down
  EXPECT_EQ(hw_area(odd).pe_sram, 1000);
  odd.sram_kib = INT64_C(1) << 30, odd.sram_area_um2_per_mib = 1000000000000;  // 2^20 MiB of 1 m²: 1.05e18, below 2^61
  EXPECT_EQ(hw_area(odd).pe_sram, (INT64_C(1) << 20) * 1000000000000);
  odd.sram_kib = (INT64_C(1) << 30) - 1;  // and the rest of a MiB rounded down
  EXPECT_EQ(hw_area(odd).pe_sram, ((INT64_C(1) << 20) - 1) * 1000000000000 + 1023 * 1000000000000 / 1024);
  HwConfig huge = load_topology(kTopo + "/default.yaml", {"pe.matrix.rows=4096", "pe.matrix.cols=4096",
                                                          "pe.matrix.mac_area_um2=1000000000000", "system.sips=4096"})
                      .hw();
  const HwArea h = hw_area(huge);
  EXPECT_EQ(h.pe_matrix, kAreaCap);
  EXPECT_EQ(h.machine, kAreaCap);
}

TEST(Topology, ValueBeyondInt64) {
  const std::string huge = variant("huge.yaml", "latency_ns: 120", "latency_ns: 99999999999999999999999");
  EXPECT_NE(error_of(huge).find("cube.hbm.latency_ns: value out of range"), std::string::npos) << error_of(huge);
}

// Too many PEs in all: the error names one of the counts behind the total, a --set one
// when there is one, else the largest, at its place in the file.
TEST(Topology, MachineTooLarge) {
  const std::string many = variant("many_sips.yaml", "sips: 1", "sips: 4096");
  const std::string too_many = "the machine has 134217728 PEs; at most 16777216 are supported";
  EXPECT_EQ(error_of(many, {"cube.pe_rows=1024"}), "--set cube.pe_rows=1024: cube.pe_rows: " + too_many);
  const std::string d = kTopo + "/default.yaml";
  EXPECT_EQ(error_of(d, {"system.sips=4096", "sip.cube_rows=1024"}), "--set system.sips=4096: system.sips: " + too_many);
  const std::string file = variant("many_pes.yaml", "pe_rows: 2", "pe_rows: 1024", many);
  EXPECT_EQ(error_of(file), file + ":6:9: system.sips: " + too_many);
  EXPECT_EQ(error_of(d, {"system.sips=4096", "sip.cube_rows=64"}), "");  // 8,388,608 PEs are fine
}

TEST(Topology, SectionMustBeMapping) {
  const std::string p = variant("section.yaml", "  hbm:\n", "  hbm: 5\n  hbm_stack:\n");
  EXPECT_NE(error_of(p).find("cube.hbm: expected a mapping"), std::string::npos) << error_of(p);
}

TEST(Topology, BadEnum) {
  const std::string p = variant("enum.yaml", "dataflow: os", "dataflow: diagonal");
  EXPECT_NE(error_of(p).find("pe.matrix.dataflow: expected one of os|ws|is (got 'diagonal')"), std::string::npos);
}

TEST(Topology, BadSetPathAndValue) {
  const std::string d = kTopo + "/default.yaml";
  EXPECT_EQ(error_of(d, {"cube.hbm.speed=3"}), "--set cube.hbm.speed=3: cube.hbm.speed: unknown topology field (see docs/topology.md)");
  EXPECT_EQ(error_of(d, {"cube.hbm=3"}), "--set cube.hbm=3: cube.hbm: unknown topology field (see docs/topology.md)");
  EXPECT_EQ(error_of(d, {"cube.hbm.bandwidth_gbps=abc"}),
            "--set cube.hbm.bandwidth_gbps=abc: cube.hbm.bandwidth_gbps: expected an integer (got 'abc')");
  EXPECT_EQ(error_of(d, {"pe.sram_kib=0"}), "--set pe.sram_kib=0: pe.sram_kib: must be > 0 (got 0)");
  EXPECT_NE(error_of(d, {"novalue"}).find("expected PATH=VALUE"), std::string::npos);
}

// The field table is the single source: docs/topology.md must list every field of it, with
// its range, and every field must reach the flattened hardware at its own offset.
TEST(Topology, EveryFieldDocumented) {
  const auto& fields = hw_fields();
  EXPECT_GE(fields.size(), 23u);
  std::ifstream in(std::string(KB_TEST_TOPOLOGIES) + "/../docs/topology.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), {});
  ASSERT_FALSE(doc.empty());
  std::set<std::size_t> offsets;
  for (const HwField& f : fields) {
    // Its row: "| `path` | type | unit | range | default | meaning |".
    const std::size_t at = doc.find(std::string("| `") + f.path + "` |");
    ASSERT_NE(at, std::string::npos) << f.path << " is not in docs/topology.md";
    const std::string row = doc.substr(at, doc.find('\n', at) - at);
    std::string range = f.range_text();
    if (f.is_enum()) {
      range.clear();
      for (const auto& n : f.names) range += (range.empty() ? "`" : ", `") + n + "`";
    }
    EXPECT_NE(row.find("| " + range + " "), std::string::npos) << f.path << ": range " << range << " in " << row;
    if (*f.unit) {
      EXPECT_NE(row.find(std::string("| ") + f.unit + " |"), std::string::npos) << f.path << ": unit " << f.unit;
    }
    EXPECT_NE(row.find(f.required ? "| required |" : "| "), std::string::npos) << row;
    EXPECT_TRUE(offsets.insert(f.offset).second) << f.path;
    EXPECT_FALSE(std::string(f.meaning).empty()) << f.path;
  }
  // Every field of HwConfig is in the table but hbm_tenants (a launch's, not the hardware's).
  EXPECT_EQ(offsets.size() * sizeof(std::int64_t) + sizeof(HwConfig::hbm_tenants), sizeof(HwConfig));
  EXPECT_EQ(offsets.count(offsetof(HwConfig, hbm_tenants)), 0u);
  for (const char* other : {"schema_version", "name"}) EXPECT_NE(doc.find(std::string("| `") + other + "` |"), std::string::npos);
}

// The record every result document carries: each field's resolved value, overrides applied.
TEST(Topology, RecordHoldsEveryFieldsValue) {
  const TopologySpec t = load_topology(kTopo + "/default.yaml", {"pe.matrix.dataflow=ws", "cube.hbm.bandwidth_gbps=410"});
  const nlohmann::json r = topology_record(t);
  EXPECT_EQ(r["fields"].size(), hw_fields().size());
  EXPECT_EQ(r["fields"]["pe.matrix.dataflow"], "ws");
  EXPECT_EQ(r["fields"]["cube.hbm.bandwidth_gbps"], 410);
  EXPECT_EQ(r["fields"]["system.sip_link.topology"], "ring");
  EXPECT_EQ(r["overrides"].size(), 2u);
  for (const HwField& f : hw_fields()) {
    std::int64_t v = 0;
    std::string why;
    ASSERT_TRUE(f.parse(r["fields"][f.path].is_string() ? r["fields"][f.path].get<std::string>() : r["fields"][f.path].dump(), &v, &why)) << why;
    EXPECT_EQ(v, f.get(t)) << f.path;
  }
}

}  // namespace
}  // namespace kb

#include <cstring>

#include "benches/milestone_gqa_decode.h"
#include "device/models/families.h"

namespace kb {
namespace {

// One list of hardware ranges (kHwRanges) serves the loader, hw_fits and every model's
// check: a field just outside its range is refused by all of them, at its ends by none.
TEST(Topology, OneRangeTableServesTheLoaderAndEveryCheck) {
  const TopologySpec topo = load_topology(std::string(KB_TEST_TOPOLOGIES) + "/default.yaml");
  ASSERT_EQ(hw_fields().size(), std::size(kHwRanges));
  for (const HwField& f : hw_fields()) {
    const auto* r = std::find_if(std::begin(kHwRanges), std::end(kHwRanges), [&](const HwRange& x) { return x.offset == f.offset; });
    ASSERT_NE(r, std::end(kHwRanges)) << f.path;
    EXPECT_EQ(f.lo, r->lo) << f.path;
    EXPECT_EQ(f.hi, r->hi) << f.path;
  }
  GemmConfig g{};
  g.m = g.n = g.k = 64, g.tile_m = g.tile_n = g.tile_k = 64, g.pes = 1, g.cubes = 1, g.buffers = 2;
  AllreduceConfig a{};
  a.bytes = 4096, a.ranks = 2, a.chunks = 1, a.op = static_cast<std::int64_t>(CollOp::allreduce);
  for (const HwRange& r : kHwRanges) {
    for (const std::int64_t v : {r.lo - 1, r.hi + 1, r.lo, r.hi}) {
      const bool inside = v >= r.lo && v <= r.hi;
      HwConfig h = topo.hw();
      std::memcpy(reinterpret_cast<char*>(&h) + r.offset, &v, sizeof v);
      SCOPED_TRACE("field at offset " + std::to_string(r.offset) + " = " + std::to_string(v));
      EXPECT_EQ(hw_in_range(h), inside);
      if (inside) continue;
      EXPECT_FALSE(hw_fits(h));
      std::string why;
      std::int64_t parsed = 0;
      const HwField* field = nullptr;
      for (const HwField& f : hw_fields())
        if (f.offset == r.offset) field = &f;
      ASSERT_NE(field, nullptr);
      if (!field->is_enum()) {
        EXPECT_FALSE(field->parse(std::to_string(v), &parsed, &why));  // the loader refuses it
      }
      g.hw = h, a.hw = h;
      DecodeConfig d = decode_headline(topo, 1);
      d.hw = h;
      EXPECT_EQ(gemm_check(g), kGemmBadHardware);
      EXPECT_EQ(allreduce_check(a), kArBadHardware);
      EXPECT_EQ(decode_check(d), kDecBadHardware);
    }
  }
  g.hw = topo.hw(), a.hw = topo.hw();
  EXPECT_EQ(gemm_check(g), kGemmOk);
  EXPECT_EQ(allreduce_check(a), kArOk);
}

}  // namespace
}  // namespace kb
