#include "family.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "../../device/common/area.h"
#include "../common/error.h"
#include "../topology/fields.h"

namespace kb {

#define KB_DECLARE_FAMILY(id, Model) const Family& id##_family();
KB_FAMILIES(KB_DECLARE_FAMILY)
#undef KB_DECLARE_FAMILY

namespace {
// A descriptor must agree with its model: the id it dispatches to, where the hardware sits
// in the config, and one name per status.
const Family& checked(const Family& f, batched::Family id) {
  KB_INTERNAL_CHECK(f.id == id, "family " + f.name + ": its descriptor's id is another family's");
  KB_INTERNAL_CHECK(f.hw_offset == batched::hw_offset(id), "family " + f.name + ": hw_offset is not offsetof(Config, hw)");
  KB_INTERNAL_CHECK(static_cast<int>(f.statuses.size()) == batched::status_count(id),
                    "family " + f.name + ": " + std::to_string(f.statuses.size()) + " status names for " +
                        std::to_string(batched::status_count(id)) + " statuses");
  for (const AxisDesc& a : f.axes)
    KB_INTERNAL_CHECK(a.offset % 8 == 0 && a.offset + 8 <= f.config_size(), "family " + f.name + ": axis " + a.name + " is outside the config");
  KB_INTERNAL_CHECK(f.check && f.reference && f.reference_ops && f.status_message,
                    "family " + f.name + ": check, reference, reference_ops and status_message are required");
  for (const CostDesc& c : f.costs)
    KB_INTERNAL_CHECK(c.name != "area" && c.name != "energy", "family " + f.name + ": the costs 'area' and 'energy' are every family's");
  KB_INTERNAL_CHECK(static_cast<int>(f.costs.size()) < kCostArea, "family " + f.name + ": too many costs");
  return f;
}
}  // namespace

namespace {
std::vector<const Family*>& all_families() {
#define KB_LIST_FAMILY(id, Model) &checked(id##_family(), batched::Family::id),
  static std::vector<const Family*> all = {KB_FAMILIES(KB_LIST_FAMILY)};
#undef KB_LIST_FAMILY
  return all;
}
}  // namespace

namespace {
const CostDesc kAreaCost{"area", "machine area in square micrometres (the topology's area fields)"};
const CostDesc kEnergyCost{"energy", "energy of the run in femtojoules (energy_fj)"};
}  // namespace

std::vector<CostDesc> family_costs(const Family& f) {
  std::vector<CostDesc> c = f.costs;
  c.push_back(kAreaCost);
  if (f.energy) c.push_back(kEnergyCost);
  return c;
}

const CostDesc& cost_of(const Family& f, int kind) {
  if (kind == kCostArea) return kAreaCost;
  if (kind == kCostEnergy && f.energy) return kEnergyCost;
  KB_INTERNAL_CHECK(kind >= 1 && kind <= static_cast<int>(f.costs.size()), "no such cost kind");
  return f.costs[static_cast<std::size_t>(kind - 1)];
}

const std::vector<const Family*>& families() { return all_families(); }

bool register_family(Family f) {
  static std::deque<Family> extensions;  // stable addresses
  KB_INTERNAL_CHECK(batched::is_extension(f.id), "family " + f.name + ": not an id batched::register_extension gave");
  for (const Family* g : all_families())
    KB_INTERNAL_CHECK(g->name != f.name, "family " + f.name + " is registered twice");
  extensions.push_back(std::move(f));
  all_families().push_back(&checked(extensions.back(), extensions.back().id));
  return true;
}

const Family* find_family(const std::string& name) {
  for (const Family* f : families())
    if (f->named(name)) return f;
  return nullptr;
}

std::string family_names() {
  std::string known;
  for (const Family* f : families()) known += (known.empty() ? "" : ", ") + f->name;
  return known;
}

const Family& family(const std::string& name) {
  if (const Family* f = find_family(name)) return *f;
  throw InputError("'" + name + "' is not a workload family (known: " + family_names() + ")");
}

void check_reference_size(const Family& f, const void* config, std::int64_t max_ops) {
  const std::int64_t ops = f.reference_ops(config);
  if (ops <= max_ops) return;
  const std::int64_t mib = std::max<std::int64_t>(1, ops / 1024 * kReferenceBytesPerOp / 1024);
  throw InputError("--max-ops " + std::to_string(max_ops) + ": the reference engine would build up to " +
                   std::to_string(ops) + " ops for this config (about " + std::to_string(mib) +
                   " MiB); raise --max-ops, or use --engine batched");
}

const AxisDesc* Family::axis(const std::string& n) const {
  for (const AxisDesc& a : axes)
    if (a.name == n) return &a;
  return nullptr;
}

const ColumnDesc* Family::column(const std::string& n) const {
  for (const ColumnDesc& c : columns)
    if (c.name == n) return &c;
  return nullptr;
}

std::string Family::status_name(std::int32_t s) const {
  return s >= 0 && s < static_cast<std::int32_t>(statuses.size()) ? statuses[static_cast<std::size_t>(s)]
                                                                   : "status_" + std::to_string(s);
}

std::int64_t get_int(const void* config, std::size_t offset) {
  std::int64_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(config) + offset, sizeof v);
  return v;
}

void set_int(void* config, std::size_t offset, std::int64_t v) {
  std::memcpy(static_cast<unsigned char*>(config) + offset, &v, sizeof v);
}

std::vector<unsigned char> base_config(const Family& f, const TopologySpec& topo) {
  std::vector<unsigned char> c(f.config_size(), 0);
  std::memcpy(c.data() + f.hw_offset, &topo.hw(), sizeof(HwConfig));
  for (const AxisDesc& a : f.axes) {
    if (a.fallback.empty()) continue;
    std::int64_t v = 0;
    // "best": the first of its values until eval or sweep picks (a plain value or name).
    const std::string text = a.fallback == "best" ? a.best.substr(0, a.best.find_first_of(",:")) : a.fallback;
    if (text == "auto") v = a.auto_value;
    else if (!a.names.empty()) {
      for (std::size_t i = 0; i < a.names.size(); ++i)
        if (a.names[i] == text) v = static_cast<std::int64_t>(i);
    } else {
      v = std::stoll(text);
    }
    set_int(c.data(), a.offset, v);
  }
  return c;
}

nlohmann::json axis_value_json(const AxisDesc& a, std::int64_t v) {
  if (!a.names.empty() && v >= 0 && v < static_cast<std::int64_t>(a.names.size())) return a.names[static_cast<std::size_t>(v)];
  if (a.auto_value >= 0 && v == a.auto_value) return "auto";
  return v;
}

std::vector<std::string> config_column_names(const Family& f) {
  std::vector<std::string> n;
  for (const AxisDesc& a : f.axes) n.push_back(a.name);
  for (const HwAxisDesc& h : f.hw_axes) n.push_back(h.name);
  return n;
}

Column axis_column(const std::string& name, const AxisDesc* axis, const HwField* field) {
  if (axis)
    return {name, "", axis->names.empty() && axis->auto_value < 0 ? ColType::integer : ColType::any, axis->optional_with != nullptr};
  if (field && field->is_enum()) return {name, "", ColType::text};
  return {name, field ? field->unit : "", ColType::integer};
}

std::vector<Column> config_columns(const Family& f) {
  std::vector<Column> c;
  for (const AxisDesc& a : f.axes) c.push_back(axis_column(a.name, &a, nullptr));
  for (const HwAxisDesc& h : f.hw_axes) c.push_back(axis_column(h.name, nullptr, find_hw_field(h.path)));
  return c;
}

std::vector<Column> result_columns(const Family& f) {
  std::vector<Column> c;
  for (const ColumnDesc& d : f.columns) c.push_back({d.name, d.unit, d.type, d.optional});
  return c;
}

void add_energy_columns(Family& f) {
  KB_INTERNAL_CHECK(f.actions && f.energy, "family " + f.name + ": add_energy_columns without actions and energy");
  auto count = [&](const char* name, const char* unit, const char* help, std::int64_t Actions::*m) {
    if (f.column(name)) return;  // the family's own figure of that name: the same count
    f.columns.push_back({name, unit, help, ColType::integer,
                         [a = f.actions, m](const void* c, const void* r) -> nlohmann::json { return a(c, r).*m; }, true});
  };
  count("macs", "", "multiply-accumulates", &Actions::macs);
  count("vector_ops", "", "vector element-ops (each pass over a value)", &Actions::vector_ops);
  count("sram_read_bytes", "bytes", "SRAM bytes read, every PE", &Actions::sram_read_bytes);
  count("sram_write_bytes", "bytes", "SRAM bytes written, every PE", &Actions::sram_write_bytes);
  count("hbm_read_bytes", "bytes", "HBM bytes read", &Actions::hbm_read_bytes);
  count("hbm_write_bytes", "bytes", "HBM bytes written", &Actions::hbm_write_bytes);
  count("link_bytes_pe", "bytes", "bytes over PE copy queues", &Actions::link_bytes_pe);
  count("link_bytes_cube", "bytes", "bytes over cube mesh links (each hop)", &Actions::link_bytes_cube);
  count("link_bytes_sip", "bytes", "bytes over SIP links (each hop)", &Actions::link_bytes_sip);
  auto part = [&](const char* name, const char* help, std::int64_t Energy::*m, bool terminal = false) {
    f.columns.push_back({name, "fJ", help, ColType::integer,
                         [e = f.energy, m](const void* c, const void* r) -> nlohmann::json {
                           const Energy en = e(c, r);
                           return en.status == kEnergyOk ? nlohmann::json(en.*m) : nlohmann::json(nullptr);
                         },
                         true, terminal});
  };
  part("energy_fj", "energy of the run: every part below", &Energy::total, true);
  part("energy_matrix_fj", "MACs x pe.matrix.mac_fj", &Energy::matrix);
  part("energy_vector_fj", "vector_ops x pe.vector.op_fj", &Energy::vector);
  part("energy_sram_fj", "SRAM bytes read and written x their energies", &Energy::sram);
  part("energy_hbm_fj", "HBM bytes read and written x their energies", &Energy::hbm);
  part("energy_links_fj", "bytes per link level x that level's energy", &Energy::links);
  part("energy_static_fj", "the machine's static power x the run's latency", &Energy::static_);
  f.columns.push_back({"avg_power_w", "W", "energy_fj / the run's latency", ColType::real,
                       [e = f.energy](const void* c, const void* r) -> nlohmann::json {
                         const Energy en = e(c, r);  // fJ per ps is mW
                         if (en.status != kEnergyOk || en.latency_ps <= 0) return nullptr;
                         return static_cast<double>(en.total) / static_cast<double>(en.latency_ps) / 1000.0;
                       }});
  f.columns.push_back({"energy_status", "", "ok, or energy_overflow (energy past 2^63 fJ: the energy columns are null)",
                       ColType::text, [e = f.energy](const void* c, const void* r) -> nlohmann::json {
                         return kEnergyStatusNames[e(c, r).status];
                       }});
}

std::vector<nlohmann::json> config_values(const Family& f, const void* config) {
  std::vector<nlohmann::json> v;
  for (const AxisDesc& a : f.axes) {
    const AxisDesc* with = a.optional_with ? f.axis(a.optional_with) : nullptr;
    KB_INTERNAL_CHECK(!a.optional_with || with, "family " + f.name + ": axis " + a.name + " only with an unknown axis");
    v.push_back(with && get_int(config, with->offset) == 0 ? nlohmann::json() : axis_value_json(a, get_int(config, a.offset)));
  }
  for (const HwAxisDesc& h : f.hw_axes) {
    const HwField* field = find_hw_field(h.path);
    KB_INTERNAL_CHECK(field, "family " + f.name + ": no topology field " + h.path);
    v.push_back(field->json(get_int(config, f.hw_offset + field->offset)));
  }
  return v;
}

nlohmann::json result_json(const Family& f, const void* config, const void* result) {
  nlohmann::json j = nlohmann::json::object();
  for (const ColumnDesc& c : f.columns) {
    nlohmann::json v = c.get(config, result);
    if (!(c.optional && v.is_null())) j[c.name] = std::move(v);
  }
  return j;
}

nlohmann::json config_result_json(const Family& f, const void* config, const void* result) {
  nlohmann::json j = nlohmann::json::object();
  const auto names = config_column_names(f);
  const auto values = config_values(f, config);
  for (std::size_t i = 0; i < names.size(); ++i)
    if (!(f.axes.size() > i && f.axes[i].optional_with && values[i].is_null())) j[names[i]] = values[i];
  for (const ColumnDesc& c : f.columns) {
    nlohmann::json v = c.get(config, result);
    if (!(c.optional && v.is_null())) j[c.name] = std::move(v);
  }
  return j;
}

}  // namespace kb
