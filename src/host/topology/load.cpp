#include "load.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "../common/error.h"
#include "../common/output.h"
#include "fields.h"

namespace kb {
namespace {

const char* kName = "name";
const char* kSchemaVersion = "schema_version";

std::string where(const std::string& file, const YAML::Mark& m) {
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

[[noreturn]] void fail(const std::string& loc, const std::string& path, const std::string& what) {
  throw InputError(loc + ": " + path + ": " + what);
}

// Set of every section prefix ("system", "system.sip_link", ...) and every leaf path.
struct Schema {
  std::map<std::string, bool> nodes;  // path -> is_leaf
  Schema() {
    auto add = [&](const std::string& p) {
      nodes[p] = true;
      for (std::size_t i = p.find('.'); i != std::string::npos; i = p.find('.', i + 1)) nodes.emplace(p.substr(0, i), false);
    };
    for (const auto& f : hw_fields()) add(f.path);
    add(kName);
    add(kSchemaVersion);
  }
};

const Schema& schema() {
  static const Schema s;
  return s;
}

// Rejects unknown keys and non-mapping sections, recursively.
void check_keys(const YAML::Node& node, const std::string& prefix, const std::string& file) {
  if (!node.IsMap()) fail(where(file, node.Mark()), prefix.empty() ? "(document)" : prefix, "expected a mapping");
  std::map<std::string, YAML::Mark> seen;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    // A key is one name: `system.sips: 4` at the top is not `system: {sips: 4}`.
    if (key.empty() || key.find('.') != std::string::npos)
      fail(where(file, kv.first.Mark()), path, "unknown key (nest it: a key is one name, not a path)");
    if (!seen.emplace(key, kv.first.Mark()).second)
      fail(where(file, kv.first.Mark()), path,
           "given twice (first at line " + std::to_string(seen[key].line + 1) + ")");
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
const char* to_string(SipTopology t) {
  return t == SipTopology::ring ? "ring" : t == SipTopology::fully_connected ? "fully_connected" : "switch";
}
std::string hash_hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// The --set overrides by field (InputError for a malformed or unknown one).
std::map<std::string, std::string> parse_overrides(const std::vector<std::string>& override_args) {
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
  return overrides;
}

// The topology in `file_text` (read from `path`) with the overrides applied, validated.
TopologySpec parse_topology(const std::string& path, const std::string& file_text,
                            const std::map<std::string, std::string>& overrides,
                            const std::vector<std::string>& override_args) {
  check_utf8(path, file_text);
  YAML::Node root;
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(file_text);
    if (docs.size() > 1)
      throw InputError(where(path, docs[1].Mark()) + ": (document): a second YAML document (after '---'); a topology is one document");
    if (!docs.empty()) root = docs.front();
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
  std::string text, loc;
  if (!src.get(kSchemaVersion, text, loc)) fail(src.missing_loc(), kSchemaVersion, "required field is missing");
  {
    std::int64_t v = 0;
    std::string why;
    if (!parse_int_in(text, 1, 1, &v, &why)) fail(loc, kSchemaVersion, why);
    spec.schema_version = v;
  }
  // The hash's text lists integer fields first, then enums, each in table order.
  std::string canon = std::string(kSchemaVersion) + "=" + std::to_string(spec.schema_version) + ";", enums;
  for (const HwField& f : hw_fields()) {
    std::int64_t v = f.fallback;
    if (src.get(f.path, text, loc)) {
      std::string why;
      if (!f.parse(text, &v, &why)) fail(loc, f.path, why);
    } else if (f.required) {
      fail(src.missing_loc(), f.path, "required field is missing");
    }
    f.set(spec, v);
    (f.is_enum() ? enums : canon) += std::string(f.path) + "=" + f.text(v) + ";";
  }
  canon += enums;

  spec.name = src.get(kName, text, loc) ? text : file_stem(path);
  if (spec.name.empty()) fail(loc, kName, "must not be empty");

  // Whole-machine totals must stay far from overflow. The error points at one of the five
  // counts behind the total: a --set one if any (the likely cause), else the largest.
  if (!hw_fits(spec)) {
    const char* counts[] = {"system.sips", "sip.cube_rows", "sip.cube_cols", "cube.pe_rows", "cube.pe_cols"};
    std::string blame = counts[0], blame_loc;
    std::int64_t blame_value = -1;
    bool blame_set = false;
    for (const char* c : counts) {
      if (!src.get(c, text, loc)) continue;
      const bool from_set = overrides.count(c) != 0;
      const std::int64_t v = find_hw_field(c)->get(spec);
      if ((from_set && !blame_set) || (from_set == blame_set && v > blame_value)) {
        blame = c, blame_loc = loc, blame_value = v, blame_set = from_set;
      }
    }
    fail(blame_loc, blame, "the machine has " + std::to_string(spec.total_pes()) +
                               " PEs; at most 16777216 are supported");
  }

  spec.source = path;
  spec.hash = fnv1a(canon);
  spec.overrides = override_args;
  return spec;
}

}  // namespace

TopologySpec load_topology(const std::string& path, const std::vector<std::string>& override_args) {
  // Overrides first: a malformed --set is reported even if the file is fine.
  const std::map<std::string, std::string> overrides = parse_overrides(override_args);
  const std::string file_text = read_file(path);  // capped: an endless device is an error, not a hang
  // The last few topologies read, by their path, text and overrides: a program that evaluates
  // config after config (Python's kb.eval) parses its topology once. The file is read each
  // time, so an edited file is parsed again; only valid topologies are kept.
  static std::mutex mutex;
  static std::map<std::string, TopologySpec> recent;
  std::string key = path;
  key.append(1, '\0').append(file_text);
  for (const std::string& a : override_args) key.append(1, '\0').append(a);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto it = recent.find(key);
    if (it != recent.end()) return it->second;
  }
  TopologySpec spec = parse_topology(path, file_text, overrides, override_args);
  const std::lock_guard<std::mutex> lock(mutex);
  if (recent.size() >= 16) recent.clear();
  recent.emplace(std::move(key), spec);
  return spec;
}

}  // namespace kb
