// A workload family as the host sees it: one descriptor table that drives the CLI's
// `eval NAME` and `sweep NAME` flags, the JSON/CSV/terminal columns, value ranges and enum
// names, status names and messages, Pareto costs, and the figures both engines must agree
// on. Everything generic (sweep front end, writers, parity) reads only this table; a
// family adds its descriptor (src/host/families/<name>.cpp) and one line in
// src/device/models/families.h. See docs/adding-a-family.md.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../../device/backends/backends.h"
#include "../../device/common/energy.h"
#include "../common/table.h"
#include "../topology/spec.h"

namespace kb {

// A field of the family's config that `eval` takes one value of and `sweep` a list of.
struct AxisDesc {
  std::string name;  // JSON/CSV column, --group name: "tile_m"
  std::string flag;  // "--tile-m"
  std::string help;
  std::size_t offset = 0;  // of its int64 in the config
  std::int64_t lo = 1, hi = INT64_C(1) << 40;
  std::int64_t (*hi_of)(const HwConfig&) = nullptr;  // when set, the upper bound from the hardware
  std::string fallback;          // value text when the flag is absent; "" = required
  std::int64_t auto_value = -1;  // >= 0: the item "auto" stands for this value
  std::vector<std::string> names;  // an enum axis: the name of each value 0, 1, ...
  bool problem = false;  // defines the problem: a group whose members differ in it compares different problems
  // When set, a tighter upper bound that depends on the value of the axis named `bound_by`
  // as well as the hardware: a value above it for every value of that axis swept can make no
  // valid config, so a sweep refuses it (--ranks 65 with --level pe on 8-PE cubes).
  std::int64_t (*hi_given)(const HwConfig&, std::int64_t bound_by_value) = nullptr;
  const char* bound_by = nullptr;
  // When set, the item "best" stands for these values (a list as sweep takes it): sweep
  // tries each, and eval evaluates each on the batched model and keeps the one of least
  // latency_ps (a mapping axis: --tp-algo best).
  std::string best;
  // When set, the name of another axis: this one is written (JSON, CSV, tables) only where
  // that one is not 0, and left out of a table where it is 0 in every row (a MoE axis of a
  // dense model's run: Column::optional).
  const char* optional_with = nullptr;

  // Setters that name what they set, for writing a descriptor:
  //   axis("m", "--m", "rows of A and C", offsetof(C, m)).range(1, kGemmMaxDim).defines_problem()
  AxisDesc& range(std::int64_t low, std::int64_t high) { lo = low, hi = high; return *this; }
  AxisDesc& max_of_hw(std::int64_t (*f)(const HwConfig&)) { hi_of = f; return *this; }
  AxisDesc& max_given(const char* axis, std::int64_t (*f)(const HwConfig&, std::int64_t)) {
    bound_by = axis, hi_given = f;
    return *this;
  }
  AxisDesc& default_to(std::string text) { fallback = std::move(text); return *this; }
  AxisDesc& auto_means(std::int64_t v) { auto_value = v; return *this; }
  AxisDesc& best_of(std::string list) { best = std::move(list); return *this; }
  // An enum axis: value i is names[i] (the range is 0..names.size() - 1).
  AxisDesc& choices(std::vector<std::string> n) {
    names = std::move(n);
    return range(0, static_cast<std::int64_t>(names.size()) - 1);
  }
  AxisDesc& defines_problem() { problem = true; return *this; }
  AxisDesc& only_with(const char* axis) { optional_with = axis; return *this; }
};

// An axis from its name, flag, help and the offset of its int64 in the config; required,
// from 1 up, until the setters say otherwise.
inline AxisDesc axis(std::string name, std::string flag, std::string help, std::size_t offset) {
  AxisDesc a;
  a.name = std::move(name), a.flag = std::move(flag), a.help = std::move(help), a.offset = offset;
  return a;
}

// A hardware field with a flag and a short column name of its own (the field is still
// reachable as --hw PATH / --set PATH).
struct HwAxisDesc {
  std::string name;  // "dataflow"
  std::string flag;  // "--dataflow"
  std::string path;  // "pe.matrix.dataflow"
  std::string help;
};

// A figure of a result: a column of every table the family writes.
struct ColumnDesc {
  std::string name;  // "latency_ps"
  std::string unit;  // "ps", "bytes", "" ...
  std::string help;
  ColType type = ColType::any;  // what the getter returns
  // The value, from a config and its result (as the family's Config and Result).
  std::function<nlohmann::json(const void* config, const void* result)> get;
  bool parity = false;    // an integer figure the reference engine and the batched model must agree on
  bool terminal = false;  // shown in sweep tables
  bool optional = false;  // null where it does not apply, and left out of a table null in every row (Column::optional)
};

// A flag that stands for several axis values at once (`--model llama-3.1-70b`: the
// model's dimensions); an axis given by its own flag keeps its value.
struct PresetDesc {
  std::string flag;  // "--model"
  std::string help;
  // The (axis name, value text) pairs `value` stands for; InputError when it names nothing.
  std::function<std::vector<std::pair<std::string, std::string>>(const std::string& value)> expand;
  // A flag that also sets fields no axis holds (`--pp-layers 21,20,20,19`: each stage's
  // layers) sets them here, on the config every point starts from; its value is one value
  // (commas and all) in a sweep too.
  std::function<void(const std::string& value, void* config)> apply;
  // A flag that the family's prepare step reads (Family::prepare: --routing): kept with the
  // request, as a flag that applies is.
  bool prepares = false;
  // A flag the prepare step reads that a sweep takes as a list (`--routing balanced,zipf:1.2`):
  // the step then runs once per value, as for an axis it reads (Family::prepare_reads). Its
  // values from the list's text, each checked (InputError); unset: one value only.
  std::function<std::vector<std::string>(const std::string& list)> sweeps;
  // A flag whose value the axes it stands for take as written (`--ep 2,4,8`: tp 2,4,8), so a
  // sweep takes a list of it.
  bool passes_lists = false;
  bool sets_fields() const { return static_cast<bool>(apply) || prepares; }
};

struct CostDesc {
  std::string name;     // --pareto NAME
  std::string meaning;  // "PEs used (pes x cubes)"
};

struct Family {
  std::string name;  // "gemm": eval gemm, sweep gemm
  std::vector<std::string> aliases;  // other names of the family, for commands, space files and shards
  bool named(const std::string& n) const {
    return n == name || std::find(aliases.begin(), aliases.end(), n) != aliases.end();
  }
  std::string description;
  batched::Family id{};
  std::size_t hw_offset = 0;  // of the HwConfig inside the config
  std::vector<AxisDesc> axes;
  std::vector<HwAxisDesc> hw_axes;
  // eval: axes whose flag may be given alone (`--allreduce`), and the value that means.
  std::map<std::string, std::string> bare;
  std::vector<PresetDesc> presets;  // eval and sweep
  std::string default_group;  // --group default, e.g. "m,n,k"
  std::vector<std::string> statuses;  // name of each status; statuses[0] is the valid one
  std::function<std::string(std::int32_t status, const void* config)> status_message;
  std::vector<CostDesc> costs;  // cost kind i + 1
  std::string default_cost;     // --pareto default
  std::vector<ColumnDesc> columns;
  // The integer column eval's `best` minimises (the sweep reduces on the result's latency_ps).
  std::string objective = "latency_ps";
  // The status of a config's validity check only (no timing): what the reference path may share.
  std::function<std::int32_t(const void* config)> check;
  // The figures of a config from the reference engine, written into a Result; a Chrome
  // trace written to the file `trace_path` names, when it is not null.
  std::function<void(const void* config, void* result, const std::string* trace_path)> reference;
  // An upper bound of the ops the reference program builds for a config (its graph, signals
  // included), found without building it; the reference run holds its graph to it.
  std::function<std::int64_t(const void* config)> reference_ops;
  // Data mode (eval --data), for a family that has one: why a config cannot run with values
  // ("" when it can), and the run from a seed, its findings as JSON plus one line of text.
  std::function<std::string(const void* config)> data_refusal;
  std::function<nlohmann::json(const void* config, std::uint64_t seed, std::string* line)> data_run;
  // The kernels a valid config runs, with what was chosen for each (a tuned GEMM's tiling),
  // as eval lists them ("kernels": objects with a "name" first); unset: no such list.
  std::function<nlohmann::json(const void* config)> kernels;
  // What a valid config's run did and what it cost in energy (docs/model.md section 14), for a
  // family whose model counts its actions: set by add_energy, with the columns they give.
  std::function<Actions(const void* config, const void* result)> actions;
  std::function<Energy(const void* config, const void* result)> energy;
  // Fields no axis holds that follow from the axes' values (a MoE model's routed tokens, from
  // --routing and the step's tokens): set on the config every point starts from, once its
  // single-valued axes are set, from the presets given (flag -> text) and the names of the
  // axes swept (several values), which it may refuse (InputError). Unset: nothing follows.
  std::function<void(const std::map<std::string, std::string>& presets, const std::vector<std::string>& swept, void* config)>
      prepare;
  // The axes whose values the prepare step reads, and the bytes of a config it writes (offset,
  // length; whole int64 words). A sweep with several values of such axes, or of a preset that
  // sweeps, runs the step once per combination of them: the combinations become one axis
  // that also sets the written words (docs/model.md section 13.11).
  std::vector<std::string> prepare_reads;
  std::vector<std::pair<std::size_t, std::size_t>> prepare_writes;

  std::size_t config_size() const { return batched::config_size(id); }
  std::size_t result_size() const { return batched::result_size(id); }
  const AxisDesc* axis(const std::string& name) const;
  const ColumnDesc* column(const std::string& name) const;
  std::string status_name(std::int32_t s) const;
};

// Typed helpers for writing a descriptor: a column from a getter of the family's Config and
// Result, an integer parity figure read from a Result member, and the validity check and
// reference program from typed functions.
template <class Config, class Result, class F>
std::function<nlohmann::json(const void*, const void*)> typed_getter(F f) {
  return [f](const void* c, const void* r) -> nlohmann::json {
    return f(*static_cast<const Config*>(c), *static_cast<const Result*>(r));
  };
}
// The names of a device header's name table (kCollLevelNames, ...), for an axis's choices or
// a family's statuses.
template <std::size_t N>
std::vector<std::string> name_list(const char* const (&list)[N]) {
  return std::vector<std::string>(list, list + N);
}
template <class Config, class Result>
ColumnDesc parity_figure(const char* name, const char* unit, const char* help, std::int64_t Result::*m,
                         bool terminal = false) {
  return ColumnDesc{name, unit, help, ColType::integer,
                    typed_getter<Config, Result>([m](const Config&, const Result& r) { return r.*m; }), true, terminal};
}
// check(const Config&) -> status; reference(const Config&, const std::string* trace_path) -> Result;
// ops(const Config&) -> the reference's op bound.
template <class Config, class Result, class Check, class Reference, class Ops>
void set_engines(Family& f, Check check, Reference reference, Ops ops) {
  f.check = [check](const void* c) { return check(*static_cast<const Config*>(c)); };
  f.reference = [reference](const void* c, void* r, const std::string* trace_path) {
    *static_cast<Result*>(r) = reference(*static_cast<const Config*>(c), trace_path);
  };
  f.reference_ops = [ops](const void* c) { return ops(*static_cast<const Config*>(c)); };
}

// Appends the count columns (those of Actions the family does not already have) and the
// energy columns (energy_fj and its parts, avg_power_w, energy_status) to f.columns; f.actions
// and f.energy must be set.
void add_energy_columns(Family& f);
// The energy of a family whose Model counts: Model::actions(config, result) and
// Model::energy(config, result) (energy_of over the run's latency), and their columns.
template <class Model>
void add_energy(Family& f) {
  using C = typename Model::Config;
  using R = typename Model::Result;
  f.actions = [](const void* c, const void* r) { return Model::actions(*static_cast<const C*>(c), *static_cast<const R*>(r)); };
  f.energy = [](const void* c, const void* r) { return Model::energy(*static_cast<const C*>(c), *static_cast<const R*>(r)); };
  add_energy_columns(f);
}

// The ops a reference run may build unless --max-ops says otherwise: about 2 GiB of graph.
constexpr std::int64_t kDefaultMaxOps = INT64_C(1) << 24;
// What one op of a reference graph takes, about (bytes; measured, docs/PERFORMANCE.md).
constexpr std::int64_t kReferenceBytesPerOp = 128;
// Refuses (InputError) a valid config whose reference run would build more than `max_ops`
// ops, naming its estimate: the check before any graph is built.
void check_reference_size(const Family& f, const void* config, std::int64_t max_ops);

// Every family, in the order of families.h, then the extension families in the order they
// were registered.
// A family's Pareto costs: its own (kinds 1, 2, ...), then `area` (kCostArea), which every
// family has, and `energy` (kCostEnergy), which every family that counts its actions has.
std::vector<CostDesc> family_costs(const Family& f);
// The cost of kind `kind` (its own, kCostArea or kCostEnergy).
const CostDesc& cost_of(const Family& f, int kind);

const std::vector<const Family*>& families();
// Records an extension family's descriptor (its id from batched::register_extension),
// checked against its model as the listed ones are; see extension.h.
bool register_family(Family f);
// Throws InputError naming the known families.
const Family& family(const std::string& name);
// The family of that name or alias, or null; every family's name, in order, comma-separated.
const Family* find_family(const std::string& name);
std::string family_names();

// A config of `f`: the topology's hardware, every axis at its fallback (auto where that
// is "auto"); required axes are 0 until set.
std::vector<unsigned char> base_config(const Family& f, const TopologySpec& topo);

std::int64_t get_int(const void* config, std::size_t offset);
void set_int(void* config, std::size_t offset, std::int64_t v);

// An axis value as written in JSON: an enum by name, an automatic value as "auto".
nlohmann::json axis_value_json(const AxisDesc& a, std::int64_t v);

struct HwField;
// The column of a config field: a family axis (`axis`) or a topology field (`field`).
// Plain numbers are integer columns with the field's unit; enums and "auto" are not.
Column axis_column(const std::string& name, const AxisDesc* axis, const HwField* field);

// The config's columns: every axis, then every hardware axis (by its short name).
std::vector<std::string> config_column_names(const Family& f);
std::vector<Column> config_columns(const Family& f);
std::vector<Column> result_columns(const Family& f);
std::vector<nlohmann::json> config_values(const Family& f, const void* config);
// Config and result columns of one config as one JSON object.
nlohmann::json config_result_json(const Family& f, const void* config, const void* result);
nlohmann::json result_json(const Family& f, const void* config, const void* result);

}  // namespace kb
