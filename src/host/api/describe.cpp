#include "describe.h"

#include "host/bench/registry.h"
#include "host/families/family.h"
#include "host/topology/fields.h"
#include "host/common/error.h"
#include "host/topology/diagram.h"
#include "host/topology/topology_summary.h"

namespace kb::api {

namespace {

const char* col_type_name(ColType t) {
  switch (t) {
    case ColType::integer: return "integer";
    case ColType::real: return "real";
    case ColType::text: return "text";
    case ColType::boolean: return "boolean";
    case ColType::any: break;
  }
  return "any";
}

// A family's descriptor as `list --json` gives it: what eval and sweep take (axes with their
// types and ranges, hardware axes with their units, presets) and what they report.
nlohmann::json family_json(const Family& f) {
  nlohmann::json axes = nlohmann::json::array(), hw = nlohmann::json::array(), presets = nlohmann::json::array(),
                 columns = nlohmann::json::array(), costs = nlohmann::json::array();
  for (const AxisDesc& a : f.axes) {
    nlohmann::json x = {{"name", a.name}, {"flag", a.flag}, {"help", a.help}, {"type", a.names.empty() ? "integer" : "enum"},
                        {"min", a.lo}, {"max", a.hi}, {"max_from_hardware", a.hi_of != nullptr},
                        {"default", a.fallback.empty() ? nlohmann::json() : nlohmann::json(a.fallback)},
                        {"defines_problem", a.problem}};
    if (!a.names.empty()) x["values"] = a.names;
    if (a.auto_value >= 0) x["auto"] = a.auto_value;
    if (!a.best.empty()) x["best"] = a.best;
    axes.push_back(x);
  }
  for (const HwAxisDesc& h : f.hw_axes) {
    const HwField* field = find_hw_field(h.path);
    nlohmann::json x = {{"name", h.name}, {"flag", h.flag}, {"path", h.path}, {"help", h.help}};
    if (field) {
      x["unit"] = field->unit;
      x["type"] = field->is_enum() ? "enum" : "integer";
      if (field->is_enum()) x["values"] = field->names;
      x["min"] = field->lo, x["max"] = field->hi;
    }
    hw.push_back(x);
  }
  for (const PresetDesc& p : f.presets) presets.push_back({{"flag", p.flag}, {"help", p.help}});
  for (const ColumnDesc& c : f.columns)
    columns.push_back({{"name", c.name}, {"unit", c.unit}, {"help", c.help}, {"type", col_type_name(c.type)}, {"parity", c.parity}});
  for (const CostDesc& c : family_costs(f)) costs.push_back({{"name", c.name}, {"meaning", c.meaning}});
  return {{"name", f.name},       {"aliases", f.aliases},         {"description", f.description}, {"axes", axes},
          {"hw_axes", hw},        {"presets", presets},           {"columns", columns},
          {"costs", costs},       {"default_cost", f.default_cost}, {"default_group", f.default_group},
          {"statuses", f.statuses}, {"objective", f.objective},   {"data_mode", static_cast<bool>(f.data_run)}};
}

}  // namespace

nlohmann::json list_document() {
  nlohmann::json j;
  j["schema"] = "kernbench-gpu/list";
  j["schema_version"] = "1.0.0";
  j["generator"] = std::string("kernbench-gpu ") + KB_VERSION;
  nlohmann::json bs = nlohmann::json::array(), fs = nlohmann::json::array();
  for (const auto& b : benches())
    bs.push_back({{"name", b.name}, {"description", b.description}, {"axes", b.axes}, {"domain", b.domain},
                  {"json", b.json}, {"csv", b.csv()}, {"figures", !b.plot.empty()},
                  {"topology", b.topology.empty() ? std::string("default.yaml") : b.topology},
                  {"schema", b.schema}, {"schema_version", b.schema_version}});
  for (const Family* f : families()) fs.push_back(family_json(*f));
  j["benches"] = bs;
  j["families"] = fs;
  return j;
}

nlohmann::json topology_document(const TopologyRequest& request) {
  const TopologySpec t = request.load();
  nlohmann::json j = topology_summary(t);
  j["fields"] = topology_record(t)["fields"];  // every field's resolved value
  return j;
}

std::string topology_text(const TopologyRequest& request) { return topology_summary_text(request.load()); }

void topology_diagram(const TopologyRequest& request, const std::string& out) {
  write_topology_diagram(request.load(), out);
}

const Family& family_named(const std::string& name) {
  if (const Family* f = find_family(name)) return *f;
  throw InputError("unknown subcommand '" + name + "' (known: " + family_names() + ")");
}

}  // namespace kb::api
