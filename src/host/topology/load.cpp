#include "load.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "../common/error.h"

namespace kb {
namespace {

constexpr std::int64_t kMaxBandwidthGbps = 1000000;    // 1 PB/s: beyond any real link
constexpr std::int64_t kMaxLatencyNs = 1000000000;     // 1 s
constexpr std::int64_t kMaxGrid = 1024;

struct IntField {
  const char* path;
  std::int64_t& (*ref)(TopologySpec&);
  std::int64_t lo, hi;
  bool required;
  std::int64_t fallback;
  const char* meaning;
};

#define KB_REF(expr) [](TopologySpec& s) -> std::int64_t& { return s.expr; }

const std::vector<IntField>& int_fields() {
  static const std::vector<IntField> f = {
      {"schema_version", KB_REF(schema_version), 1, 1, true, 0, "format version of this file; must be 1"},
      {"system.sips", KB_REF(sips), 1, 4096, true, 0, "number of packages (SIPs); a collective rank is one SIP"},
      {"system.sip_link.bandwidth_gbps", KB_REF(sip_link.bandwidth_gbps), 1, kMaxBandwidthGbps, true, 0,
       "SIP-to-SIP link bandwidth per direction, GB/s (10^9 bytes/s)"},
      {"system.sip_link.latency_ns", KB_REF(sip_link.latency_ns), 0, kMaxLatencyNs, true, 0,
       "SIP-to-SIP link latency, ns"},
      {"sip.cube_rows", KB_REF(cube_rows), 1, kMaxGrid, true, 0, "rows of the cube grid in one SIP"},
      {"sip.cube_cols", KB_REF(cube_cols), 1, kMaxGrid, true, 0, "columns of the cube grid in one SIP"},
      {"sip.cube_link.bandwidth_gbps", KB_REF(cube_link.bandwidth_gbps), 1, kMaxBandwidthGbps, true, 0,
       "cube-to-cube mesh link bandwidth per direction, GB/s"},
      {"sip.cube_link.latency_ns", KB_REF(cube_link.latency_ns), 0, kMaxLatencyNs, true, 0,
       "cube-to-cube mesh link latency per hop, ns"},
      {"cube.pe_rows", KB_REF(pe_rows), 1, kMaxGrid, true, 0, "rows of the PE grid in one cube"},
      {"cube.pe_cols", KB_REF(pe_cols), 1, kMaxGrid, true, 0, "columns of the PE grid in one cube"},
      {"cube.hbm.bandwidth_gbps", KB_REF(hbm_bandwidth_gbps), 1, kMaxBandwidthGbps, true, 0,
       "HBM stack bandwidth, split evenly over the PEs a launch uses in the cube, GB/s"},
      {"cube.hbm.latency_ns", KB_REF(hbm_latency_ns), 0, kMaxLatencyNs, true, 0, "HBM access latency, ns"},
      {"cube.hbm.capacity_mib", KB_REF(hbm_capacity_mib), 1, INT64_C(1) << 30, true, 0,
       "HBM stack capacity, MiB"},
      {"cube.ipcq.bandwidth_gbps", KB_REF(ipcq.bandwidth_gbps), 1, kMaxBandwidthGbps, true, 0,
       "PE-to-PE copy queue bandwidth per direction, GB/s"},
      {"cube.ipcq.latency_ns", KB_REF(ipcq.latency_ns), 0, kMaxLatencyNs, true, 0, "PE-to-PE copy latency, ns"},
      {"pe.clock_mhz", KB_REF(clock_mhz), 1, 100000, true, 0, "PE clock, MHz"},
      {"pe.matrix.rows", KB_REF(matrix_rows), 1, 4096, true, 0, "systolic array rows (fp16 MACs)"},
      {"pe.matrix.cols", KB_REF(matrix_cols), 1, 4096, true, 0, "systolic array columns (fp16 MACs)"},
      {"pe.vector.lanes", KB_REF(vector_lanes), 1, 65536, true, 0, "vector engine lanes (elements per cycle)"},
      {"pe.sram_kib", KB_REF(sram_kib), 1, INT64_C(1) << 30, true, 0, "local SRAM per PE, KiB"},
      {"pe.dma.engines", KB_REF(dma_engines), 1, 64, false, 1, "DMA engines per PE; their rates add up"},
      {"pe.dma.bandwidth_gbps", KB_REF(dma_bandwidth_gbps), 1, kMaxBandwidthGbps, true, 0,
       "bandwidth of one DMA engine, GB/s"},
  };
  return f;
}

const char* kName = "name";
const char* kSipTopology = "system.sip_link.topology";
const char* kDataflow = "pe.matrix.dataflow";

std::string where(const std::string& file, const YAML::Mark& m) {
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

[[noreturn]] void fail(const std::string& loc, const std::string& path, const std::string& what) {
  throw InputError(loc + ": " + path + ": " + what);
}

std::int64_t parse_int(const std::string& text, const std::string& loc, const std::string& path) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (text.empty() || end == s || *end != '\0') fail(loc, path, "expected an integer (got '" + text + "')");
  if (errno == ERANGE) fail(loc, path, "value out of range (got '" + text + "')");
  return v;
}

// Set of every section prefix ("system", "system.sip_link", ...) and every leaf path.
struct Schema {
  std::map<std::string, bool> nodes;  // path -> is_leaf
  Schema() {
    auto add = [&](const std::string& p) {
      nodes[p] = true;
      for (std::size_t i = p.find('.'); i != std::string::npos; i = p.find('.', i + 1)) nodes.emplace(p.substr(0, i), false);
    };
    for (const auto& f : int_fields()) add(f.path);
    add(kName);
    add(kSipTopology);
    add(kDataflow);
  }
};

const Schema& schema() {
  static const Schema s;
  return s;
}

// Rejects unknown keys and non-mapping sections, recursively.
void check_keys(const YAML::Node& node, const std::string& prefix, const std::string& file) {
  if (!node.IsMap()) fail(where(file, node.Mark()), prefix.empty() ? "(document)" : prefix, "expected a mapping");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    auto it = schema().nodes.find(path);
    if (it == schema().nodes.end()) fail(where(file, kv.first.Mark()), path, "unknown key");
    if (!it->second) {
      check_keys(kv.second, path, file);
    } else if (!kv.second.IsScalar()) {
      fail(where(file, kv.second.Mark()), path, "expected a scalar value");
    }
  }
}

struct Source {
  const YAML::Node& root;
  const std::string& file;
  const std::map<std::string, std::string>& overrides;  // path -> value

  // The raw text of a leaf and where it came from; false when absent.
  bool get(const std::string& path, std::string& text, std::string& loc) const {
    auto o = overrides.find(path);
    if (o != overrides.end()) {
      text = o->second;
      loc = "--set " + path + "=" + o->second;
      return true;
    }
    // reset() rebinds the handle; plain assignment would overwrite the tree node.
    YAML::Node n;
    n.reset(root);
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = path.find('.', start);
      const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!n.IsMap()) return false;
      const YAML::Node& cn = n;
      YAML::Node child = cn[key];
      if (!child.IsDefined()) return false;
      n.reset(child);
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    text = n.Scalar();
    loc = where(file, n.Mark());
    return true;
  }

  std::string missing_loc() const { return where(file, root.Mark()); }
};

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string file_stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  const auto dot = base.rfind('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

}  // namespace

const char* to_string(Dataflow d) { return d == Dataflow::os ? "os" : d == Dataflow::ws ? "ws" : "is"; }
bool parse_dataflow(const std::string& text, Dataflow* d) {
  for (Dataflow x : {Dataflow::os, Dataflow::ws, Dataflow::is})
    if (text == to_string(x)) {
      *d = x;
      return true;
    }
  return false;
}
const char* to_string(SipTopology t) {
  return t == SipTopology::ring ? "ring" : t == SipTopology::fully_connected ? "fully_connected" : "switch";
}
std::string hash_hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

const std::vector<FieldDoc>& topology_fields() {
  static const std::vector<FieldDoc> docs = [] {
    std::vector<FieldDoc> d;
    d.push_back({kName, "string", "any", "a name for reports; defaults to the file name without extension"});
    d.push_back({kSipTopology, "enum", "ring|fully_connected|switch", "how SIPs are joined"});
    d.push_back({kDataflow, "enum", "os|ws|is", "systolic dataflow: output, weight or input stationary; default os"});
    for (const auto& f : int_fields()) {
      std::string range = std::to_string(f.lo) + ".." + std::to_string(f.hi);
      std::string meaning = f.meaning;
      if (!f.required) meaning += "; default " + std::to_string(f.fallback);
      d.push_back({f.path, "int", range, meaning});
    }
    return d;
  }();
  return docs;
}

TopologySpec load_topology(const std::string& path, const std::vector<std::string>& override_args) {
  // Overrides first: a malformed --set is reported even if the file is fine.
  std::map<std::string, std::string> overrides;
  for (const auto& arg : override_args) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--set " + arg + ": expected PATH=VALUE, e.g. cube.hbm.bandwidth_gbps=1600");
    const std::string key = arg.substr(0, eq);
    auto it = schema().nodes.find(key);
    if (it == schema().nodes.end() || !it->second)
      throw InputError("--set " + arg + ": " + key + ": unknown topology field (see docs/topology.md)");
    overrides[key] = arg.substr(eq + 1);
  }

  std::ifstream in(path);
  if (!in) throw InputError(path + ":1:1: (file): cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(buf.str());
  } catch (const YAML::Exception& e) {
    throw InputError(where(path, e.mark) + ": (document): not valid YAML: " + e.msg);
  }
  if (!root.IsDefined() || root.IsNull()) throw InputError(path + ":1:1: (document): empty file, expected a mapping");
  try {
    check_keys(root, "", path);
  } catch (const YAML::Exception& e) {
    throw InputError(where(path, e.mark) + ": (document): " + e.msg);
  }

  TopologySpec spec;
  Source src{root, path, overrides};
  std::string canon;
  std::string text, loc;
  for (const auto& f : int_fields()) {
    std::int64_t v = f.fallback;
    if (src.get(f.path, text, loc)) {
      v = parse_int(text, loc, f.path);
      if (v < f.lo)
        fail(loc, f.path, std::string("must be ") + (f.lo == 1 ? "> 0" : ">= " + std::to_string(f.lo)) + " (got " + text + ")");
      if (v > f.hi) fail(loc, f.path, "must be <= " + std::to_string(f.hi) + " (got " + text + ")");
    } else if (f.required) {
      fail(src.missing_loc(), f.path, "required field is missing");
    }
    f.ref(spec) = v;
    canon += std::string(f.path) + "=" + std::to_string(v) + ";";
  }

  spec.name = src.get(kName, text, loc) ? text : file_stem(path);
  if (spec.name.empty()) fail(loc, kName, "must not be empty");

  if (!src.get(kSipTopology, text, loc)) fail(src.missing_loc(), kSipTopology, "required field is missing");
  if (text == "ring") spec.sip_topology = SipTopology::ring;
  else if (text == "fully_connected") spec.sip_topology = SipTopology::fully_connected;
  else if (text == "switch") spec.sip_topology = SipTopology::switch_;
  else fail(loc, kSipTopology, "expected one of ring|fully_connected|switch (got '" + text + "')");

  spec.dataflow = Dataflow::os;
  if (src.get(kDataflow, text, loc)) {
    if (!parse_dataflow(text, &spec.dataflow)) fail(loc, kDataflow, "expected one of os|ws|is (got '" + text + "')");
  }
  canon += std::string(kSipTopology) + "=" + to_string(spec.sip_topology) + ";" + kDataflow + "=" +
           to_string(spec.dataflow) + ";";

  // Whole-machine totals must stay far from overflow. The error points at one of the five
  // counts behind the total: a --set one if any (the likely cause), else the largest.
  if (spec.total_pes() > (INT64_C(1) << 24)) {
    const char* counts[] = {"system.sips", "sip.cube_rows", "sip.cube_cols", "cube.pe_rows", "cube.pe_cols"};
    std::string blame = counts[0], blame_loc;
    std::int64_t blame_value = -1;
    bool blame_set = false;
    for (const char* c : counts) {
      if (!src.get(c, text, loc)) continue;
      const bool from_set = overrides.count(c) != 0;
      const std::int64_t v = parse_int(text, loc, c);
      if ((from_set && !blame_set) || (from_set == blame_set && v > blame_value)) {
        blame = c, blame_loc = loc, blame_value = v, blame_set = from_set;
      }
    }
    fail(blame_loc, blame, "the machine has " + std::to_string(spec.total_pes()) +
                               " PEs; at most 16777216 are supported");
  }

  spec.source = path;
  spec.hash = fnv1a(canon);
  return spec;
}

}  // namespace kb
