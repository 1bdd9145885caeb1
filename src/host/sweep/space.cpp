#include "space.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

#include "../common/error.h"
#include "axis_values.h"

namespace kb {

std::string one_of(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

nlohmann::json SpaceAxis::value_json(std::int64_t v) const {
  if (axis) return axis_value_json(*axis, v);
  return field->json(v);
}

nlohmann::json SpaceAxis::json_of(const void* config) const {
  if (shown) return shown(config);
  return value_json(get_int(config, offset));
}

nlohmann::json SweptAxis::tuple_json(const std::vector<std::int64_t>& values, std::size_t t) const {
  if (!prepared.empty()) return prepared[t];
  const std::size_t w = members.size();
  if (w == 1) return members[0].value_json(values[t]);
  nlohmann::json a = nlohmann::json::array();
  for (std::size_t i = 0; i < w; ++i) a.push_back(members[i].value_json(values[t * w + i]));
  return a;
}

namespace {
std::string sep_of(const std::string& flag) { return !flag.empty() && flag.back() == '=' ? "" : " "; }
}  // namespace

std::vector<std::int64_t> parse_names(const std::string& flag, const std::string& text,
                                      const std::vector<std::string>& names) {
  std::vector<std::int64_t> v;
  for (const std::string& item : list_items(text, ',')) {
    const auto it = std::find(names.begin(), names.end(), item);
    if (it == names.end()) throw InputError(flag + sep_of(flag) + text + ": item '" + item + "': expected " + one_of(names));
    const auto x = static_cast<std::int64_t>(it - names.begin());
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  }
  return v;
}

bool is_case_name(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

namespace {

struct Candidate {
  SweptAxis ax;
  std::string where;                 // its flag and text, to begin an error with
  std::vector<std::string> cases;    // names of the tuples, when they have them
  std::vector<std::int64_t> values;  // tuples of ax.members.size() values (of offsets.size() when given)
  // The combinations of a prepare step (class Prepared): the fields each tuple sets, and how
  // many tuples there are.
  std::vector<std::int64_t> offsets;
  std::int64_t tuples = -1;
  std::int64_t length() const {
    return tuples >= 0 ? tuples : static_cast<std::int64_t>(values.size() / ax.members.size());
  }
};

// A field by name: a family axis, a hardware axis's short name, or a topology path.
bool resolve(const Family& f, const std::string& name, SpaceAxis* out) {
  if (const AxisDesc* a = f.axis(name)) {
    *out = SpaceAxis{a->name, a, nullptr, a->offset};
    return true;
  }
  std::string path = name;
  for (const HwAxisDesc& s : f.hw_axes)
    if (s.name == name) path = s.path;
  const HwField* field = find_hw_field(path);
  if (!field) return false;
  *out = SpaceAxis{path, nullptr, field, f.hw_offset + field->offset};
  for (const HwAxisDesc& s : f.hw_axes)
    if (s.path == path) out->name = s.name;
  return true;
}

// One value of a field inside a zip's tuple.
std::int64_t parse_one(const SpaceAxis& m, const std::string& flag, const std::string& text, const std::string& item,
                       const HwConfig& hi_hw) {
  const std::vector<std::string>* names = m.axis ? &m.axis->names : &m.field->names;
  if (!names->empty()) {
    const auto it = std::find(names->begin(), names->end(), item);
    if (it == names->end())
      throw InputError(flag + text + ": " + m.name + " '" + item + "': expected " + one_of(*names));
    return it - names->begin();
  }
  std::int64_t lo = m.axis ? m.axis->lo : m.field->lo;
  std::int64_t hi = m.axis ? (m.axis->hi_of ? m.axis->hi_of(hi_hw) : m.axis->hi) : m.field->hi;
  const std::int64_t auto_value = m.axis ? m.axis->auto_value : -1;
  const std::string where = flag + text + ": " + m.name + " '" + item + "': ";
  if (item.find(':') != std::string::npos) throw InputError(where + "a tuple holds single values, not ranges");
  if (auto_value >= 0 && item == "auto") return auto_value;
  std::string why;
  if (!integer_text_ok(item, false, &why))
    throw InputError(where + (why.rfind("expected", 0) == 0 ? std::string("expected a non-negative integer") : why));
  errno = 0;
  const long long v = std::strtoll(item.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi)
    throw InputError(where + item + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

// Values no config could use, for an axis whose bound depends on another axis's value: in
// a zip with that axis, the tuple's value sets the bound; otherwise the largest bound over the
// values swept does.
void check_bounds_given(const std::vector<Candidate>& cand, const HwConfig& hi_hw) {
  for (const Candidate& c : cand)
    for (std::size_t i = 0; i < c.ax.members.size(); ++i) {
      const AxisDesc* a = c.ax.members[i].axis;
      if (!a || !a->hi_given) continue;
      const Candidate* d = nullptr;
      std::size_t j = 0;
      for (const Candidate& e : cand)
        for (std::size_t k = 0; k < e.ax.members.size(); ++k)
          if (e.ax.members[k].axis && e.ax.members[k].name == a->bound_by) d = &e, j = k;
      KB_INTERNAL_CHECK(d, "axis " + a->name + ": no axis " + a->bound_by + " to bound it");
      const std::size_t w = c.ax.members.size(), dw = d->ax.members.size();
      const SpaceAxis& dm = d->ax.members[j];
      auto text_of = [&](std::int64_t x) {
        const nlohmann::json v = dm.value_json(x);
        return v.is_string() ? v.get<std::string>() : v.dump();
      };
      std::int64_t widest = a->lo;
      std::string widest_of;
      for (std::size_t u = 0; u < d->values.size() / dw; ++u) {
        const std::int64_t b = a->hi_given(hi_hw, d->values[u * dw + j]);
        if (b > widest || widest_of.empty()) widest = b, widest_of = text_of(d->values[u * dw + j]);
      }
      for (std::size_t t = 0; t < c.values.size() / w; ++t) {
        const std::int64_t v = c.values[t * w + i];
        std::int64_t hi = widest;
        std::string of = widest_of;
        if (d == &c) hi = a->hi_given(hi_hw, c.values[t * w + j]), of = text_of(c.values[t * w + j]);
        if (v <= hi) continue;
        throw InputError(c.where + ": " + a->name + " '" + std::to_string(v) + "': " + std::to_string(v) + " is outside " +
                         std::to_string(a->lo) + ".." + std::to_string(hi) +
                         (d == &c || d->values.size() == dw ? " for " + dm.name + " " + of
                                                            : ", the widest of the " + dm.name + " values swept (" + of + ")") +
                         ": no config could use it");
      }
    }
}

// The offsets already swept (by --hw lists or zips): a field is swept once.
struct Taken {
  std::set<std::int64_t> offsets;
  void take(const SpaceAxis& m, const std::string& where) {
    if (!offsets.insert(static_cast<std::int64_t>(m.offset)).second)
      throw InputError(where + ": " + (m.field ? std::string(m.field->path) : m.name) + " is swept twice");
  }
};

// The --hw lists (and hardware axes' flags), each a candidate axis. Their largest values go
// into `hi_hw`: they bound the axes whose range the hardware sets.
std::vector<Candidate> parse_hw_lists(const Family& f, const SpaceRequest& req, Taken& taken, HwConfig* hi_hw,
                                      HwConfig* lo_hw) {
  std::vector<Candidate> hw;
  for (HwList h : req.hw) {
    for (const HwAxisDesc& s : f.hw_axes)  // a hardware axis's short name stands for its path
      if (h.path == s.name) h.path = s.path;
    const HwField* field = find_hw_field(h.path);
    const std::string flag = h.flag == "--hw" ? "--hw " + h.path + "=" : h.flag;
    if (!field) throw InputError(flag + sep_of(flag) + h.list + ": " + h.path + ": unknown topology field (see docs/topology.md)");
    Candidate c;
    SpaceAxis m;
    resolve(f, h.path, &m);
    taken.take(m, flag + sep_of(flag) + h.list);
    c.ax = SweptAxis{m.name, {m}};
    if (field->is_enum()) c.values = parse_names(flag, h.list, field->names);
    else c.values = parse_axis_values(flag, h.list, field->lo, field->hi);
    if (!field->is_enum()) {
      field->set(*hi_hw, *std::max_element(c.values.begin(), c.values.end()));
      field->set(*lo_hw, *std::min_element(c.values.begin(), c.values.end()));
    }
    hw.push_back(c);
  }

  return hw;
}

// A zip: its members, the items of its tuples as written, then its candidate axis.
struct Zip {
  Candidate c;
  std::string flag, text;
  std::vector<std::vector<std::string>> items;
};

// The zips: their members, then their tuples (hardware members first, for the bounds, which
// go into `hi_hw` as the lists' do).
std::vector<Zip> parse_zips(const Family& f, const SpaceRequest& req, Taken& taken, HwConfig* hi_hw, HwConfig* lo_hw) {
  std::vector<Zip> zips;
  for (const std::string& z : req.zips) {
    Zip zip;
    const auto eq = z.find('=');
    zip.flag = "--zip ";
    zip.text = z;
    if (eq == std::string::npos || eq == 0 || eq + 1 == z.size())
      throw InputError("--zip " + z + ": expected NAMES=TUPLES, e.g. m,n,k=32/10240/8192,2048/8192/8192");
    for (const std::string& name : list_items(z.substr(0, eq), ',')) {
      SpaceAxis m;
      if (!resolve(f, name, &m))
        throw InputError("--zip " + z + ": '" + name + "' is not an axis of " + f.name + " or a topology field");
      if (m.axis && req.axes.count(m.axis->name))
        throw InputError("--zip " + z + ": " + m.name + " is also given by " + m.axis->flag);
      taken.take(m, "--zip " + z);
      zip.c.ax.members.push_back(m);
      zip.c.ax.name += (zip.c.ax.name.empty() ? "" : ",") + m.name;
    }
    if (zip.c.ax.members.size() < 2) throw InputError("--zip " + z + ": a zip names two fields or more");
    for (std::string tuple : list_items(z.substr(eq + 1), ',')) {
      const auto colon = tuple.find(':');
      const bool named = colon != std::string::npos && is_case_name(tuple.substr(0, colon));
      if (!zip.items.empty() && named != !zip.c.cases.empty())
        throw InputError("--zip " + z + ": name every tuple or none (e.g. qkv:32/10240/8192)");
      if (named) {
        const std::string name = tuple.substr(0, colon);
        if (std::find(zip.c.cases.begin(), zip.c.cases.end(), name) != zip.c.cases.end())
          throw InputError("--zip " + z + ": case '" + name + "' is named twice");
        zip.c.cases.push_back(name);
        tuple = tuple.substr(colon + 1);
      }
      if (tuple.empty()) throw InputError("--zip " + z + ": an empty tuple (tuples are separated by ',')");
      zip.items.push_back(list_items(tuple, '/'));
      if (zip.items.back().size() != zip.c.ax.members.size())
        throw InputError("--zip " + z + ": tuple '" + tuple + "' has " + std::to_string(zip.items.back().size()) +
                         " values for " + std::to_string(zip.c.ax.members.size()) + " fields (values are joined by '/')");
    }
    for (std::size_t k = 0; k < zip.items.size(); ++k)
      for (std::size_t i = 0; i < zip.items[k].size(); ++i) {
        const SpaceAxis& m = zip.c.ax.members[i];
        if (!m.field || m.field->is_enum()) continue;
        const std::int64_t v = parse_one(m, zip.flag, zip.text, zip.items[k][i], *hi_hw);
        if (v > m.field->get(*hi_hw)) m.field->set(*hi_hw, v);
        if (k == 0 || v < m.field->get(*lo_hw)) m.field->set(*lo_hw, v);
      }
    zip.c.where = "--zip " + z;
    zips.push_back(zip);
  }
  int named_zips = 0;
  for (Zip& zip : zips) {
    std::set<std::vector<std::int64_t>> seen;
    std::vector<std::string> cases;
    for (std::size_t k = 0; k < zip.items.size(); ++k) {
      const auto& t = zip.items[k];
      std::vector<std::int64_t> tuple;
      for (std::size_t i = 0; i < t.size(); ++i) tuple.push_back(parse_one(zip.c.ax.members[i], zip.flag, zip.text, t[i], *hi_hw));
      if (!seen.insert(tuple).second) {  // a tuple given twice counts once, unless it is named twice
        if (!zip.c.cases.empty())
          throw InputError("--zip " + zip.text + ": cases '" + zip.c.cases[k] + "' and another have the same values");
        continue;
      }
      if (!zip.c.cases.empty()) cases.push_back(zip.c.cases[k]);
      zip.c.values.insert(zip.c.values.end(), tuple.begin(), tuple.end());
    }
    zip.c.cases = cases;
    if (!cases.empty() && ++named_zips > 1)
      throw InputError("--zip " + zip.text + ": only one zip may name its tuples (its names are the column \"case\")");
  }
  return zips;
}

// The candidate axes in order: the family's axes, its hardware axes (the topology's value
// when not swept), then other swept fields; a zip stands where its first member would.
// Hardware axes whose smallest machine (each swept count at its least value) is beyond what a
// topology file may hold make no config that is not bad_hardware: refused, as --set would
// refuse that machine (a sweep where some machines fit counts the others as bad_hardware).
void check_some_machine_fits(const HwConfig& lo_hw, const std::vector<Candidate>& hw, const std::vector<Zip>& zips) {
  if (lo_hw.total_pes() <= kMaxMachinePes) return;
  std::string swept;
  auto note = [&](const SpaceAxis& m) {
    static const char* kCounts[] = {"system.sips", "sip.cube_rows", "sip.cube_cols", "cube.pe_rows", "cube.pe_cols"};
    if (!m.field) return;
    for (const char* c : kCounts)
      if (std::string(m.field->path) == c)
        swept += (swept.empty() ? "" : ", ") + std::string(c) + "=" + std::to_string(m.field->get(lo_hw));
  };
  for (const Candidate& c : hw) note(c.ax.members[0]);
  for (const Zip& z : zips)
    for (const SpaceAxis& m : z.c.ax.members) note(m);
  throw InputError("hardware axes: the smallest machine they make (" + swept + ") has " + std::to_string(lo_hw.total_pes()) +
                   " PEs; at most " + std::to_string(kMaxMachinePes) + " are supported, so no config of the space could run");
}

std::vector<Candidate> place_candidates(const Family& f, const TopologySpec& topo, const SpaceRequest& req,
                                        const std::vector<Candidate>& hw, std::vector<Zip>& zips, const HwConfig& hi_hw) {
  auto zip_of = [&](std::size_t offset) -> Zip* {
    for (Zip& z : zips)
      for (const SpaceAxis& m : z.c.ax.members)
        if (m.offset == offset) return &z;
    return nullptr;
  };

  std::vector<Candidate> cand;
  std::set<const Zip*> placed;
  auto place_zip = [&](Zip* z) {
    if (placed.insert(z).second) cand.push_back(z->c);
  };
  for (const AxisDesc& a : f.axes) {
    if (Zip* z = zip_of(a.offset)) {
      place_zip(z);
      continue;
    }
    const auto given = req.axes.find(a.name);
    const std::string written = given != req.axes.end() ? given->second : a.fallback;
    const std::string text = written == "best" && !a.best.empty() ? a.best : written;
    if (text.empty()) throw InputError(a.flag + ": required (a value or a list, e.g. 1024 or 1024,4096)");
    Candidate c;
    c.ax = SweptAxis{a.name, {SpaceAxis{a.name, &a, nullptr, a.offset}}};
    c.where = a.flag + " " + written;
    if (!a.names.empty()) c.values = parse_names(a.flag, text, a.names);
    else c.values = parse_axis_values(a.flag, text, a.lo, a.hi_of ? a.hi_of(hi_hw) : a.hi, a.auto_value);
    cand.push_back(c);
  }
  for (const HwAxisDesc& s : f.hw_axes) {
    SpaceAxis m;
    KB_INTERNAL_CHECK(resolve(f, s.path, &m), "family " + f.name + ": no topology field " + s.path);
    if (Zip* z = zip_of(m.offset)) {
      place_zip(z);
      continue;
    }
    Candidate c;
    c.ax = SweptAxis{m.name, {m}};
    c.values = {m.field->get(topo.hw())};
    for (const Candidate& h : hw)
      if (h.ax.members[0].offset == m.offset) c = h;
    cand.push_back(c);
  }
  for (const Candidate& c : hw)
    if (c.ax.name == c.ax.members[0].field->path) cand.push_back(c);
  for (Zip& z : zips) place_zip(&z);

  return cand;
}

// The candidates that form a group (--group, or the family's default), in the order named.
std::vector<std::size_t> group_axes(const Family& f, const SpaceRequest& req, const std::vector<Candidate>& cand) {
  std::vector<std::size_t> group;
  const std::string group_text = req.group.empty() ? f.default_group : req.group;
  if (group_text != "none") {
    std::set<std::string> named;
    for (const std::string& name : list_items(group_text, ',')) {
      std::size_t found = cand.size();
      for (std::size_t i = 0; i < cand.size(); ++i) {
        if (name == "case" && !cand[i].cases.empty()) found = i;
        for (const SpaceAxis& m : cand[i].ax.members)
          if (name == m.name || (m.field && name == m.field->path)) found = i;
      }
      if (found == cand.size()) {
        std::string names;
        for (const Candidate& c : cand) names += c.ax.name + ", ";
        throw InputError("--group " + group_text + ": '" + name + "' is not an axis (" + names + "or none)");
      }
      if (!named.insert(name).second) throw InputError("--group " + group_text + ": '" + name + "' is named twice");
      if (std::find(group.begin(), group.end(), found) == group.end()) group.push_back(found);  // zip members: one axis
    }
  }
  return group;
}

// ---- the combinations a family's prepare step runs for ------------------------------------

// A preset that sweeps (PresetDesc::sweeps), its values as listed (each once), and the
// column that shows it.
struct PresetList {
  const PresetDesc* p;
  std::vector<std::string> items;
  const ColumnDesc* column;
};

constexpr std::int64_t kMaxPrepared = 4096;  // combinations a sweep prepares

std::string column_of_flag(const std::string& flag) {
  std::string name = flag.rfind("--", 0) == 0 ? flag.substr(2) : flag;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// The presets that sweep, given with several values.
std::vector<PresetList> preset_lists(const Family& f, const SpaceRequest& req) {
  std::vector<PresetList> lists;
  for (const PresetDesc& p : f.presets) {
    const auto it = req.presets.find(p.flag);
    if (!p.sweeps || it == req.presets.end()) continue;
    PresetList l{&p, {}, f.column(column_of_flag(p.flag))};
    KB_INTERNAL_CHECK(l.column, "preset " + p.flag + ": no column " + column_of_flag(p.flag) + " shows it");
    for (const std::string& item : p.sweeps(it->second))
      if (std::find(l.items.begin(), l.items.end(), item) == l.items.end()) l.items.push_back(item);
    if (l.items.size() > 1) lists.push_back(l);
  }
  return lists;
}

// The prepare step of a sweep (Family::prepare_reads): where it reads axes or presets that
// take several values, it runs once per combination of them (the first slowest), each on the
// base with that combination's values and the other axes named swept. An axis that changes
// what the step writes somewhere, and every list, join one candidate that stands where the
// first of them stood (at the end when only lists vary): its tuples hold the axes' values,
// then the words that vary. Any other such axis stays as it was (every dense model's), and
// the step runs once on the base (Prepared::apply) without naming those axes swept.
class Prepared {
 public:
  Prepared(const Family& f, const SpaceRequest& req, std::vector<Candidate>& cand, const std::vector<unsigned char>& base)
      : f_(f), req_(req), cand_(cand), lists_(preset_lists(f, req)), cfg_(base) {
    if (!f.prepare) return;
    find_inputs();
    if ((inputs_.empty() && lists_.empty()) || !any_changes()) return;
    std::int64_t count = 1;
    for (const std::int64_t r : radix_)
      if ((count *= r) > kMaxPrepared)
        throw InputError(where() + ": the prepare step (a MoE step's routing) runs for each combination of these values; at most " +
                         std::to_string(kMaxPrepared) + " combinations (run several sweeps)");
    for (std::int64_t t = 0; t < count; ++t) {
      digits_.push_back(digits_of(t));
      nlohmann::json shown;
      run(digits_.back(), &words_, &shown, nullptr);
      list_shown_.push_back(shown);
    }
    merge(matters());
  }
  // The candidate that holds the combinations (-1: none).
  int merged() const { return merged_; }
  // The base run through the step once, with the first combination's values: the words no
  // axis sets then hold what every config of the space has.
  void apply(std::vector<unsigned char>& base) const {
    if (!f_.prepare) return;
    std::vector<unsigned char> c = base;
    for (const Candidate& in : first_values_)
      for (std::size_t j = 0; j < in.ax.members.size(); ++j) set_int(c.data(), in.ax.members[j].offset, in.values[j]);
    f_.prepare(first_presets_.empty() ? req_.presets : first_presets_, swept_, c.data());
    for (const auto& [off, len] : f_.prepare_writes) std::memcpy(base.data() + off, c.data() + off, len);
  }

 private:
  // The candidates of several values the step reads (inputs_, with their value counts then
  // the lists' in radix_), the others' names (swept_), the single values into cfg_, and the
  // words the step writes (offsets_).
  void find_inputs() {
    for (std::size_t i = 0; i < cand_.size(); ++i) {
      const Candidate& c = cand_[i];
      if (c.length() < 2) {
        for (std::size_t w = 0; w < c.ax.members.size(); ++w) set_int(cfg_.data(), c.ax.members[w].offset, c.values[w]);
        continue;
      }
      bool reads = false;
      for (const SpaceAxis& m : c.ax.members)
        reads |= m.axis && std::find(f_.prepare_reads.begin(), f_.prepare_reads.end(), m.name) != f_.prepare_reads.end();
      if (!reads) {
        for (const SpaceAxis& m : c.ax.members) swept_.push_back(m.name);
        continue;
      }
      if (!c.cases.empty())
        throw InputError(c.where + ": a zip of named cases cannot hold values the prepare step reads; leave the names out");
      inputs_.push_back(i);
      radix_.push_back(c.length());
      first_values_.push_back(c);
      first_values_.back().values.resize(c.ax.members.size());  // its first value
    }
    for (const PresetList& l : lists_) radix_.push_back(static_cast<std::int64_t>(l.items.size()));
    for (const auto& [off, len] : f_.prepare_writes)
      for (std::size_t w = 0; w < len; w += 8) offsets_.push_back(static_cast<std::int64_t>(off + w));
  }
  std::string where() const {
    std::string w;
    for (const std::size_t i : inputs_) w += (w.empty() ? "" : ", ") + cand_[i].where;
    for (const PresetList& l : lists_) w += (w.empty() ? "" : ", ") + l.p->flag + " " + req_.presets.at(l.p->flag);
    return w;
  }
  std::vector<std::int64_t> digits_of(std::int64_t t) const {
    std::vector<std::int64_t> digit(radix_.size());
    for (std::size_t d = radix_.size(); d-- > 0;) digit[d] = t % radix_[d], t /= radix_[d];
    return digit;
  }
  // The words the step writes for a combination (its value number of each input, then of each
  // list), appended to `out`; its lists' values as their columns show them; its presets.
  void run(const std::vector<std::int64_t>& digit, std::vector<std::int64_t>* out, nlohmann::json* shown,
           std::map<std::string, std::string>* used_presets) const {
    std::vector<unsigned char> c = cfg_;
    std::map<std::string, std::string> presets = req_.presets;
    for (std::size_t k = 0; k < inputs_.size(); ++k) {
      const Candidate& in = cand_[inputs_[k]];
      const std::size_t w = in.ax.members.size();
      for (std::size_t j = 0; j < w; ++j) set_int(c.data(), in.ax.members[j].offset, in.values[static_cast<std::size_t>(digit[k]) * w + j]);
    }
    for (std::size_t k = 0; k < lists_.size(); ++k)
      presets[lists_[k].p->flag] = lists_[k].items[static_cast<std::size_t>(digit[inputs_.size() + k])];
    f_.prepare(presets, swept_, c.data());
    for (const std::int64_t o : offsets_) out->push_back(get_int(c.data(), static_cast<std::size_t>(o)));
    if (shown) {
      *shown = nlohmann::json::array();
      const std::vector<unsigned char> none(f_.result_size(), 0);  // the columns shown read the config alone
      for (const PresetList& l : lists_) shown->push_back(l.column->get(c.data(), none.data()));
    }
    if (used_presets) *used_presets = presets;
  }
  // Each input alone from the first combination: whether any changes what the step writes
  // (always, with a list). A dense model's routes nothing, so its sweeps stay as they were.
  bool any_changes() {
    std::vector<std::int64_t> origin, other;
    const std::vector<std::int64_t> zero(radix_.size(), 0);
    run(zero, &origin, nullptr, &first_presets_);
    if (!lists_.empty()) return true;
    for (std::size_t k = 0; k < inputs_.size(); ++k)
      for (std::int64_t v = 1; v < radix_[k]; ++v) {
        std::vector<std::int64_t> digit = zero;
        digit[k] = v;
        other.clear();
        run(digit, &other, nullptr, nullptr);
        if (other != origin) return true;
      }
    return false;
  }
  bool same(std::size_t t, std::size_t u) const {
    const std::size_t nw = offsets_.size();
    return std::equal(words_.begin() + static_cast<std::ptrdiff_t>(t * nw), words_.begin() + static_cast<std::ptrdiff_t>((t + 1) * nw),
                      words_.begin() + static_cast<std::ptrdiff_t>(u * nw));
  }
  // Whether each input changes the words somewhere: a combination and the one with that
  // input's next value differ. Lists always count.
  std::vector<bool> matters() const {
    std::vector<bool> m(radix_.size(), true);
    for (std::size_t k = 0; k < inputs_.size(); ++k) {
      std::int64_t stride = 1;
      for (std::size_t d = k + 1; d < radix_.size(); ++d) stride *= radix_[d];
      m[k] = false;
      for (std::size_t t = 0; t < digits_.size() && !m[k]; ++t)
        if (digits_[t][k] + 1 < radix_[k]) m[k] = !same(t, t + static_cast<std::size_t>(stride));
    }
    return m;
  }
  // The candidate of the inputs that matter and the lists, over their combinations (the other
  // inputs at their first value), with the words that vary between those.
  void merge(const std::vector<bool>& matters) {
    std::vector<std::size_t> kept, used, vary;
    for (std::size_t k = 0; k < inputs_.size(); ++k)
      if (matters[k]) used.push_back(k);
    if (used.empty() && lists_.empty()) return;
    for (std::size_t t = 0; t < digits_.size(); ++t) {
      bool first = true;
      for (std::size_t k = 0; k < inputs_.size(); ++k) first &= matters[k] || digits_[t][k] == 0;
      if (first) kept.push_back(t);
    }
    const std::size_t nw = offsets_.size();
    for (std::size_t j = 0; j < nw; ++j)
      for (const std::size_t t : kept)
        if (words_[t * nw + j] != words_[kept[0] * nw + j]) {
          vary.push_back(j);
          break;
        }
    Candidate m = members(used);
    if (m.offsets.empty() && vary.empty()) vary.push_back(0);  // lists that route alike: the axis sets one word still
    for (const std::size_t j : vary) m.offsets.push_back(offsets_[j]);
    for (const std::size_t t : kept) {
      nlohmann::json shown = nlohmann::json::array();
      for (const std::size_t k : used) {
        const Candidate& in = cand_[inputs_[k]];
        const std::size_t w = in.ax.members.size();
        for (std::size_t j = 0; j < w; ++j) {
          const std::int64_t v = in.values[static_cast<std::size_t>(digits_[t][k]) * w + j];
          m.values.push_back(v);
          shown.push_back(in.ax.members[j].value_json(v));
        }
      }
      for (const nlohmann::json& v : list_shown_[t]) shown.push_back(v);
      for (const std::size_t j : vary) m.values.push_back(words_[t * nw + j]);
      m.ax.prepared.push_back(shown.size() == 1 ? shown[0] : shown);
    }
    m.tuples = static_cast<std::int64_t>(kept.size());
    std::size_t at = cand_.size();
    for (const std::size_t k : used) at = std::min(at, inputs_[k]);
    for (std::size_t k = used.size(); k-- > 0;) cand_.erase(cand_.begin() + static_cast<std::ptrdiff_t>(inputs_[used[k]]));
    at = std::min(at, cand_.size());
    cand_.insert(cand_.begin() + static_cast<std::ptrdiff_t>(at), m);
    merged_ = static_cast<int>(at);
  }
  // The merged candidate's members: the inputs used, then a member per list, shown by its column.
  Candidate members(const std::vector<std::size_t>& used) const {
    Candidate m;
    for (const std::size_t k : used)
      for (const SpaceAxis& a : cand_[inputs_[k]].ax.members) {
        m.ax.members.push_back(a);
        m.offsets.push_back(static_cast<std::int64_t>(a.offset));
      }
    for (const PresetList& l : lists_) {
      SpaceAxis a;
      a.name = l.column->name;
      a.offset = SpaceAxis::kNoOffset;
      const ColumnDesc* col = l.column;
      // A column of the config alone, given a zeroed result.
      auto none = std::make_shared<const std::vector<unsigned char>>(f_.result_size(), 0);
      a.shown = [col, none](const void* config) { return col->get(config, none->data()); };
      m.ax.members.push_back(a);
    }
    for (const SpaceAxis& a : m.ax.members) m.ax.name += (m.ax.name.empty() ? "" : ",") + a.name;
    return m;
  }

  const Family& f_;
  const SpaceRequest& req_;
  std::vector<Candidate>& cand_;
  std::vector<PresetList> lists_;
  std::vector<unsigned char> cfg_;      // the base with every single value set
  std::vector<std::size_t> inputs_;     // candidates of several values the step reads
  std::vector<std::int64_t> radix_;     // their value counts, then the lists'
  std::vector<std::int64_t> offsets_;   // the words the step writes
  std::vector<std::int64_t> words_;     // per combination, the words written
  std::vector<std::vector<std::int64_t>> digits_;  // per combination, its value numbers
  std::vector<nlohmann::json> list_shown_;         // per combination, its lists' values shown
  // The axes swept that the step does not read (those it reads are not named: the step's
  // refusal of them stays for a caller that does not prepare each combination).
  std::vector<std::string> swept_;
  std::vector<Candidate> first_values_;  // the inputs, with their first values
  std::map<std::string, std::string> first_presets_;
  int merged_ = -1;
};

}  // namespace

BuiltSpace build_space(const Family& f, const TopologySpec& topo, const SpaceRequest& req) {
  Taken taken;
  HwConfig hi_hw = topo.hw(), lo_hw = topo.hw();
  const std::vector<Candidate> hw = parse_hw_lists(f, req, taken, &hi_hw, &lo_hw);
  std::vector<Zip> zips = parse_zips(f, req, taken, &hi_hw, &lo_hw);
  check_some_machine_fits(lo_hw, hw, zips);
  std::vector<Candidate> cand = place_candidates(f, topo, req, hw, zips, hi_hw);
  check_bounds_given(cand, hi_hw);

  BuiltSpace b;
  b.space.family = f.id;
  b.space.base = base_config(f, topo);
  for (const PresetDesc& p : f.presets) {
    const auto it = req.presets.find(p.flag);
    if (it != req.presets.end() && p.apply) p.apply(it->second, b.space.base.data());
  }
  const Prepared prepared(f, req, cand, b.space.base);
  const std::vector<std::size_t> group = group_axes(f, req, cand);
  const std::string group_text = req.group.empty() ? f.default_group : req.group;
  auto add_axis = [&](std::size_t i) {
    if (!cand[i].cases.empty()) {
      b.cases = cand[i].cases;
      b.case_axis = static_cast<int>(b.space.axes.size());
    }
    std::vector<std::int64_t> offsets = cand[i].offsets;  // a prepared candidate's, or its members'
    if (offsets.empty())
      for (const SpaceAxis& m : cand[i].ax.members) offsets.push_back(static_cast<std::int64_t>(m.offset));
    b.space.axes.emplace_back(offsets, cand[i].values);
    b.axes.push_back(cand[i].ax);
  };
  for (std::size_t g : group) add_axis(g);
  b.space.group_axes = static_cast<int>(group.size());
  for (std::size_t i = 0; i < cand.size(); ++i) {
    if (std::find(group.begin(), group.end(), i) != group.end()) continue;
    if (cand[i].length() > 1 || static_cast<int>(i) == prepared.merged()) {
      add_axis(i);
      continue;
    }
    for (std::size_t w = 0; w < cand[i].ax.members.size(); ++w)
      set_int(b.space.base.data(), cand[i].ax.members[w].offset, cand[i].values[w]);
    if (!cand[i].cases.empty()) b.cases = cand[i].cases;  // one case: fixed
  }

  if (f.prepare) {
    // A group's axis of one value is a space axis still: its value into the base as well, for
    // what follows from it.
    for (const auto& ax : b.space.axes)
      if (ax.length() == 1)
        for (std::size_t w = 0; w < ax.offsets.size(); ++w) set_int(b.space.base.data(), static_cast<std::size_t>(ax.offsets[w]), ax.values[w]);
    prepared.apply(b.space.base);
  }

  // Every config column: the family's axes and hardware axes, then other fields swept.
  // An axis only with another (a MoE axis) is left out where that one is 0 at every point.
  auto swept_offset = [&](std::size_t offset) {
    for (const auto& ax : b.space.axes)
      for (const std::int64_t o : ax.offsets)
        if (static_cast<std::size_t>(o) == offset) return true;
    return false;
  };
  for (const AxisDesc& a : f.axes) {
    const AxisDesc* with = a.optional_with ? f.axis(a.optional_with) : nullptr;
    if (with && !swept_offset(with->offset) && get_int(b.space.base.data(), with->offset) == 0) continue;
    b.columns.push_back(SpaceAxis{a.name, &a, nullptr, a.offset});
  }
  for (const HwAxisDesc& s : f.hw_axes) {
    SpaceAxis m;
    resolve(f, s.path, &m);
    b.columns.push_back(m);
  }
  for (const Candidate& c : cand)
    for (const SpaceAxis& m : c.ax.members)
      if (m.field && m.name == m.field->path) b.columns.push_back(m);

  std::int64_t size = 1, groups = 1;
  for (std::size_t i = 0; i < b.space.axes.size(); ++i) {
    const std::int64_t len = b.space.axes[i].length();
    if (size > kMaxSpace / len) throw InputError("the space has more than 2^50 configs; split it into several sweeps");
    size *= len;
    if (static_cast<int>(i) < b.space.group_axes) groups *= len;
  }
  if (groups > kMaxGroups)
    throw InputError("--group " + group_text + ": " + std::to_string(groups) +
                     " groups; at most 2^20 (group by fewer axes, or --group none)");
  std::int64_t several = 0;
  for (const auto& a : b.space.axes) several += a.length() > 1;
  if (several > batched::kMaxAxes)
    throw InputError("the space has " + std::to_string(several) + " axes with several values; at most " +
                     std::to_string(batched::kMaxAxes));
  return b;
}

std::string BuiltSpace::case_of(std::int64_t i) const {
  if (cases.empty()) return "";
  if (case_axis < 0) return cases[0];
  std::int64_t stride = 1;
  for (std::size_t a = static_cast<std::size_t>(case_axis) + 1; a < space.axes.size(); ++a) stride *= space.axes[a].length();
  return cases[static_cast<std::size_t>((i / stride) % space.axes[static_cast<std::size_t>(case_axis)].length())];
}

}  // namespace kb
