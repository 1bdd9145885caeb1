#include "space.h"

#include <algorithm>

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

namespace {

std::vector<std::int64_t> parse_names(const std::string& flag, const std::string& text,
                                      const std::vector<std::string>& names) {
  const std::string sep = !flag.empty() && flag.back() == '=' ? "" : " ";
  std::vector<std::int64_t> v;
  for (const std::string& item : split_list(text, ',')) {
    const auto it = std::find(names.begin(), names.end(), item);
    if (it == names.end()) throw InputError(flag + sep + text + ": item '" + item + "': expected " + one_of(names));
    const auto x = static_cast<std::int64_t>(it - names.begin());
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  }
  return v;
}

}  // namespace

BuiltSpace build_space(const Family& f, const TopologySpec& topo, const SweepRequest& req) {
  struct Candidate {
    SpaceAxis ax;
    std::vector<std::int64_t> values;
  };
  std::vector<Candidate> cand;

  // Hardware axes first: their largest values bound the axes whose range the hardware sets.
  HwConfig hi_hw = topo.hw();
  std::vector<Candidate> hw;
  for (const HwList& h : req.hw) {
    const HwField* field = find_hw_field(h.path);
    const std::string flag = h.flag == "--hw" ? "--hw " + h.path + "=" : h.flag;
    if (!field) throw InputError(flag + h.list + ": " + h.path + ": unknown topology field (see docs/topology.md)");
    for (const Candidate& c : hw)
      if (c.ax.field == field) throw InputError(flag + h.list + ": " + h.path + " is swept twice");
    Candidate c;
    c.ax.field = field;
    c.ax.offset = f.hw_offset + field->offset;
    c.ax.name = h.path;
    for (const HwAxisDesc& s : f.hw_axes)
      if (s.path == h.path) c.ax.name = s.name;
    if (field->is_enum()) c.values = parse_names(flag, h.list, field->names);
    else c.values = parse_axis_values(flag, h.list, field->lo, field->hi);
    if (!field->is_enum()) field->set(hi_hw, *std::max_element(c.values.begin(), c.values.end()));
    hw.push_back(c);
  }
  for (const AxisDesc& a : f.axes) {
    const auto given = req.axes.find(a.name);
    const std::string text = given != req.axes.end() ? given->second : a.fallback;
    if (text.empty()) throw InputError(a.flag + ": required (a value or a list, e.g. 1024 or 1024,4096)");
    Candidate c;
    c.ax.name = a.name;
    c.ax.axis = &a;
    c.ax.offset = a.offset;
    if (!a.names.empty()) c.values = parse_names(a.flag, text, a.names);
    else c.values = parse_axis_values(a.flag, text, a.lo, a.hi_of ? a.hi_of(hi_hw) : a.hi, a.auto_value);
    cand.push_back(c);
  }
  // Hardware axes with a short name, in the family's order (the topology's value when not
  // given), then the other swept fields in the order given.
  for (const HwAxisDesc& s : f.hw_axes) {
    const HwField* field = find_hw_field(s.path);
    KB_INTERNAL_CHECK(field, "family " + f.name + ": no topology field " + s.path);
    Candidate c;
    c.ax.name = s.name;
    c.ax.field = field;
    c.ax.offset = f.hw_offset + field->offset;
    c.values = {field->get(topo.hw())};
    for (const Candidate& h : hw)
      if (h.ax.field == field) c = h;
    cand.push_back(c);
  }
  for (const Candidate& c : hw)
    if (c.ax.name == c.ax.field->path) cand.push_back(c);

  std::vector<std::size_t> group;
  const std::string group_text = req.group.empty() ? f.default_group : req.group;
  if (group_text != "none") {
    for (const std::string& name : split_list(group_text, ',')) {
      std::size_t found = cand.size();
      for (std::size_t i = 0; i < cand.size(); ++i)
        if (name == cand[i].ax.name || (cand[i].ax.field && name == cand[i].ax.field->path)) found = i;
      if (found == cand.size()) {
        std::string names;
        for (const Candidate& c : cand) names += c.ax.name + ", ";
        throw InputError("--group " + group_text + ": '" + name + "' is not an axis (" + names + "or none)");
      }
      if (std::find(group.begin(), group.end(), found) != group.end())
        throw InputError("--group " + group_text + ": '" + name + "' is named twice");
      group.push_back(found);
    }
  }

  BuiltSpace b;
  b.space.family = f.id;
  b.space.base = base_config(f, topo);
  auto add_axis = [&](std::size_t i) {
    b.space.axes.push_back({static_cast<std::int64_t>(cand[i].ax.offset), cand[i].values});
    b.axes.push_back(cand[i].ax);
  };
  for (std::size_t g : group) add_axis(g);
  b.space.group_axes = static_cast<int>(group.size());
  for (std::size_t i = 0; i < cand.size(); ++i) {
    if (std::find(group.begin(), group.end(), i) != group.end()) continue;
    if (cand[i].values.size() > 1) add_axis(i);
    else set_int(b.space.base.data(), cand[i].ax.offset, cand[i].values[0]);
  }

  // Every config column: the family's axes and hardware axes, then other swept fields.
  for (const Candidate& c : cand) b.columns.push_back(c.ax);

  std::int64_t size = 1, groups = 1;
  for (std::size_t i = 0; i < b.space.axes.size(); ++i) {
    const auto len = static_cast<std::int64_t>(b.space.axes[i].values.size());
    if (size > kMaxSpace / len) throw InputError("the space has more than 2^50 configs; split it into several sweeps");
    size *= len;
    if (static_cast<int>(i) < b.space.group_axes) groups *= len;
  }
  if (groups > kMaxGroups)
    throw InputError("--group " + group_text + ": " + std::to_string(groups) +
                     " groups; at most 2^20 (group by fewer axes, or --group none)");
  if (b.space.axes.size() > static_cast<std::size_t>(batched::kMaxAxes))
    throw InputError("the space has " + std::to_string(b.space.axes.size()) + " axes with several values; at most " +
                     std::to_string(batched::kMaxAxes));
  return b;
}

}  // namespace kb
