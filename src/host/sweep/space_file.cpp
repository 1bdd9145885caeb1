#include "space_file.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <vector>

#include "../common/error.h"
#include "../common/output.h"

namespace kb {

namespace {

std::string where(const std::string& file, const YAML::Mark& m) {
  return shown_path(file) + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}
[[noreturn]] void fail(const std::string& file, const YAML::Node& n, const std::string& field, const std::string& what) {
  throw InputError(where(file, n.Mark()) + ": " + field + ": " + what);
}

// A space file is small: larger text, or more nodes, is not one.
constexpr std::size_t kMaxSpaceFileBytes = std::size_t{256} << 10;
constexpr std::int64_t kMaxSpaceFileNodes = 65536;

// Every mapping's keys are distinct, and the document holds at most kMaxSpaceFileNodes nodes.
void check_nodes(const std::string& path, const YAML::Node& n, const std::string& at, std::int64_t& count, int depth) {
  if (++count > kMaxSpaceFileNodes)
    throw InputError(where(path, n.Mark()) + ": (document): more than " + std::to_string(kMaxSpaceFileNodes) + " YAML nodes; not a space file");
  if (depth > 32) throw InputError(where(path, n.Mark()) + ": (document): nested more than 32 levels deep");
  if (n.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) fail(path, kv.first, at.empty() ? "(document)" : at, "a key is a name, not a list or mapping");
      const std::string key = kv.first.Scalar(), field = at.empty() ? key : at + "." + key;
      const auto [it, fresh] = seen.emplace(key, kv.first.Mark());
      if (!fresh)
        fail(path, kv.first, field, "given twice (first at line " + std::to_string(it->second.line + 1) + ")");
      check_nodes(path, kv.second, field, count, depth + 1);
    }
  } else if (n.IsSequence()) {
    for (std::size_t i = 0; i < n.size(); ++i) check_nodes(path, n[i], at + "[" + std::to_string(i) + "]", count, depth + 1);
  }
}

// Space files read by the command running (forget_space_files empties it).
std::map<std::string, std::string>& space_texts() {
  static std::map<std::string, std::string> texts;
  return texts;
}

// The file's text, read once per command however often the file is parsed: "-" (standard
// input), a FIFO or a pipe can be read only once.
const std::string& space_text(const std::string& path) {
  std::map<std::string, std::string>& texts = space_texts();
  auto it = texts.find(path);
  if (it != texts.end()) return it->second;
  std::string text = read_stream(path, kMaxSpaceFileBytes);  // a missing file is an input error naming it
  return texts.emplace(path, std::move(text)).first->second;
}

YAML::Node parse(const std::string& path) {
  const std::string& text = space_text(path);
  check_utf8(shown_path(path), text);
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    throw InputError(where(path, e.mark) + ": (document): not valid YAML: " + e.msg);
  }
  if (docs.size() > 1)
    throw InputError(where(path, docs[1].Mark()) + ": (document): a second YAML document (after '---'); a space file is one document");
  const YAML::Node root = docs.empty() ? YAML::Node() : docs.front();
  if (!root.IsDefined() || root.IsNull()) throw InputError(shown_path(path) + ":1:1: (document): empty file, expected a mapping");
  if (!root.IsMap()) fail(path, root, "(document)", "expected a mapping");
  std::int64_t count = 0;
  check_nodes(path, root, "", count, 0);
  return root;
}

std::string scalar(const std::string& file, const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) fail(file, n, field, "expected a single value");
  if (n.Scalar().empty()) fail(file, n, field, "empty value");
  return n.Scalar();
}

// A list of values as the command line writes it: [a, b, c] or "a,b" or "8:4096:*2".
std::string list_text(const std::string& file, const YAML::Node& n, const std::string& field) {
  if (n.IsScalar()) return scalar(file, n, field);
  if (!n.IsSequence() || n.size() == 0) fail(file, n, field, "expected a value, a list [v1, v2, ...] or a range string");
  // Inside a YAML list each item is one value or range: the command line's ',' does not apply.
  std::string out;
  for (const auto& v : n) {
    const std::string item = scalar(file, v, field);
    if (item.find(',') != std::string::npos)
      fail(file, v, field, "'" + item + "': one value or range per list item (a ',' inside an item is not a list here)");
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

std::int64_t integer(const std::string& file, const YAML::Node& n, const std::string& field, std::int64_t lo, std::int64_t hi) {
  const std::string t = scalar(file, n, field);
  std::int64_t v = 0;
  std::string why;
  if (!parse_int_in(t, lo, hi, &v, &why)) fail(file, n, field, why);
  return v;
}

bool boolean(const std::string& file, const YAML::Node& n, const std::string& field) {
  const std::string t = scalar(file, n, field);
  if (t == "true" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "no" || t == "off") return false;
  fail(file, n, field, "expected true or false (got '" + t + "')");
}

}  // namespace

void forget_space_files() { space_texts().clear(); }

static std::string space_file_family_of(const std::string& path);
static SpaceFile load_space_file_of(const std::string& path);

// yaml-cpp's own errors inside a valid document (a key that is not a name, a value of the
// wrong kind) as FILE:LINE:COL input errors.
template <class F>
auto yaml_errors(const std::string& path, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const YAML::Exception& e) {
    throw InputError(where(path, e.mark) + ": (document): " + e.msg);
  }
}

std::string space_file_family(const std::string& path) {
  return yaml_errors(path, [&] { return space_file_family_of(path); });
}

SpaceFile load_space_file(const std::string& path) {
  return yaml_errors(path, [&] { return load_space_file_of(path); });
}

static std::string space_file_family_of(const std::string& path) {
  const YAML::Node root = parse(path);
  const YAML::Node f = root["family"];
  if (!f.IsDefined()) throw InputError(where(path, root.Mark()) + ": family: required field is missing");
  const std::string name = scalar(path, f, "family");
  try {
    family(name);
  } catch (const InputError& e) {
    fail(path, f, "family", e.what());
  }
  return name;
}

// An axis's key: a family axis by name, a hardware axis by its short name, or a topology
// field by path; (kind, name).
static std::pair<std::string, std::string> space_axis_key(const std::string& path, const Family& fam, const YAML::Node& k) {
  const std::string name = k.as<std::string>();
  if (fam.axis(name)) return {"axis", name};
  for (const HwAxisDesc& h : fam.hw_axes)
    if (h.name == name) return {"hw", h.path};
  if (find_hw_field(name)) return {"hw", name};
  std::string known;
  for (const AxisDesc& a : fam.axes) known += a.name + ", ";
  fail(path, k, name, "not an axis of " + fam.name + " (" + known + "or a topology field by its path, docs/topology.md)");
}

// The file's zips, as the command line's --zip texts.
static void read_zips(const std::string& path, const YAML::Node& root, const Family& fam, SpaceFile& s) {
  auto axis_key = [&](const YAML::Node& k) { return space_axis_key(path, fam, k); };
  if (const YAML::Node zips = root["zip"]; zips.IsDefined()) {
    if (!zips.IsSequence()) fail(path, zips, "zip", "expected a list of {names: [...], tuples: ...}");
    for (std::size_t i = 0; i < zips.size(); ++i) {
      const YAML::Node z = zips[i];
      const std::string field = "zip[" + std::to_string(i) + "]";
      if (!z.IsMap() || !z["names"].IsDefined() || !z["tuples"].IsDefined())
        fail(path, z, field, "expected {names: [f1, f2, ...], tuples: [[v1, v2, ...], ...] or {case: [v1, v2, ...], ...}}");
      const std::string names = list_text(path, z["names"], field + ".names");
      for (const auto& n : z["names"].IsSequence() ? z["names"] : YAML::Node()) (void)axis_key(n);
      std::string tuples;
      auto tuple = [&](const YAML::Node& t, const std::string& f) {
        if (!t.IsSequence() || t.size() == 0) fail(path, t, f, "expected a tuple [v1, v2, ...]");
        std::string out;
        for (const auto& v : t) {
          const std::string item = scalar(path, v, f);
          if (item.find_first_of(",/:") != std::string::npos)
            fail(path, v, f, "'" + item + "': a tuple holds single values (no ',', '/' or ':' inside one)");
          out += (out.empty() ? "" : "/") + item;
        }
        return out;
      };
      const YAML::Node ts = z["tuples"];
      if (ts.IsMap()) {
        for (const auto& kv : ts) {
          // A case's name is a word: the command line's text of the zip is made from it.
          if (!kv.first.IsScalar() || !is_case_name(kv.first.Scalar()))
            fail(path, kv.first, field + ".tuples",
                 "'" + (kv.first.IsScalar() ? kv.first.Scalar() : std::string()) +
                     "': a case's name is a letter, then letters, digits, '-', '_' or '.'");
          tuples += (tuples.empty() ? "" : ",") + kv.first.as<std::string>() + ":" + tuple(kv.second, field + ".tuples." + kv.first.as<std::string>());
        }
      } else if (ts.IsSequence()) {
        for (std::size_t k = 0; k < ts.size(); ++k) tuples += (tuples.empty() ? "" : ",") + tuple(ts[k], field + ".tuples[" + std::to_string(k) + "]");
      } else {
        fail(path, ts, field + ".tuples", "expected a list of tuples or a mapping of named cases");
      }
      s.where["zip#" + std::to_string(i)] = where(path, z.Mark());
      s.req.zips.push_back(names + "=" + tuples);
    }
  }
}

// The file's objectives (pareto) and reductions (top, recheck, histogram).
static void read_objectives_and_reductions(const std::string& path, const YAML::Node& root, const Family& fam, SpaceFile& s) {
  if (const YAML::Node o = root["objectives"]; o.IsDefined()) {
    if (!o.IsMap()) fail(path, o, "objectives", "expected a mapping (pareto: COST)");
    for (const auto& kv : o) {
      const std::string key = kv.first.as<std::string>();
      if (key != "pareto") fail(path, kv.first, "objectives." + key, "unknown key (expected pareto)");
      const std::string cost = scalar(path, kv.second, "objectives.pareto");
      bool known = cost == "none";
      std::string names;
      for (const CostDesc& c : family_costs(fam)) known |= c.name == cost, names += c.name + ", ";
      if (!known) fail(path, kv.second, "objectives.pareto", "'" + cost + "': expected " + names + "or none");
      s.pareto = cost;
    }
  }
  if (const YAML::Node r = root["reductions"]; r.IsDefined()) {
    if (!r.IsMap()) fail(path, r, "reductions", "expected a mapping (top, histogram, recheck)");
    for (const auto& kv : r) {
      const std::string key = kv.first.as<std::string>();
      if (key == "top") s.top = static_cast<int>(integer(path, kv.second, "reductions.top", 0, 1024));
      else if (key == "recheck") s.recheck = static_cast<int>(integer(path, kv.second, "reductions.recheck", 0, 1024));
      else if (key == "histogram") s.histogram = boolean(path, kv.second, "reductions.histogram");
      else fail(path, kv.first, "reductions." + key, "unknown key (expected top, histogram or recheck)");
    }
  }
}

static SpaceFile load_space_file_of(const std::string& path) {
  const YAML::Node root = parse(path);
  SpaceFile s;
  s.path = path;
  s.family = space_file_family_of(path);
  const Family& fam = family(s.family);
  static const char* kKeys[] = {"family", "topology", "axes", "zip", "group", "objectives", "reductions", "description"};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
      fail(path, kv.first, key, "unknown key (expected family, topology, axes, zip, group, objectives, reductions or description)");
  }
  if (const YAML::Node t = root["topology"]; t.IsDefined()) {
    const std::string rel = scalar(path, t, "topology");
    const std::filesystem::path p(rel);
    s.topology = p.is_absolute() ? rel : (std::filesystem::path(path).parent_path() / p).lexically_normal().string();
    s.where["topology"] = where(path, t.Mark());
  }
  auto axis_key = [&](const YAML::Node& k) { return space_axis_key(path, fam, k); };
  if (const YAML::Node axes = root["axes"]; axes.IsDefined()) {
    if (!axes.IsMap()) fail(path, axes, "axes", "expected a mapping of axis: values");
    for (const auto& kv : axes) {
      const auto [kind, name] = axis_key(kv.first);
      const std::string text = list_text(path, kv.second, "axes." + name);
      if (s.where.count(name)) fail(path, kv.first, "axes." + name, "given twice");
      s.where[name] = where(path, kv.second.Mark());
      if (kind == "axis") s.req.axes[name] = text;
      else s.req.hw.push_back({name, name, text});
    }
  }
  read_zips(path, root, fam, s);
  if (const YAML::Node g = root["group"]; g.IsDefined()) {
    s.req.group = list_text(path, g, "group");
    s.where["group"] = where(path, g.Mark());
  }
  read_objectives_and_reductions(path, root, fam, s);
  return s;
}

BuiltSpace build_space_from_file(const Family& f, const TopologySpec& topo, const SpaceFile& s) {
  try {
    return build_space(f, topo, s.req);
  } catch (const InputError& e) {
    // Point at the entry the message is about: an axis by its flag, a topology field by its
    // path, a zip, the group.
    const std::string m = e.what();
    auto at = [&](const std::string& key, const std::string& field) {
      const auto it = s.where.find(key);
      return InputError((it != s.where.end() ? it->second : s.path + ":1:1") + ": " + field + ": " + m);
    };
    for (const AxisDesc& a : f.axes)
      if (m.rfind(a.flag + " ", 0) == 0 || m.rfind(a.flag + ":", 0) == 0) throw at(a.name, "axes." + a.name);
    for (const HwList& h : s.req.hw)
      if (m.rfind(h.flag + " ", 0) == 0 || m.find(h.path) != std::string::npos) throw at(h.path, "axes." + h.path);
    if (m.rfind("--zip", 0) == 0)
      for (std::size_t i = 0; i < s.req.zips.size(); ++i)
        if (m.find(s.req.zips[i]) != std::string::npos) throw at("zip#" + std::to_string(i), "zip[" + std::to_string(i) + "]");
    if (m.rfind("--group", 0) == 0) throw at("group", "group");
    throw InputError(s.path + ":1:1: (space): " + m);
  }
}

}  // namespace kb
