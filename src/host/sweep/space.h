// The sweep front end: a family's space from value lists as written on the command line,
// over its axes and over any topology field (--hw PATH=LIST).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../families/family.h"
#include "../topology/fields.h"
#include "backend.h"

namespace kb {

struct HwList {
  std::string flag;  // as the user wrote it, for errors: "--dataflow" or "--hw"
  std::string path;  // "pe.matrix.dataflow"
  std::string list;  // "os,ws"
};

// A zip's case name: a letter, then letters, digits, '-', '_' or '.'.
bool is_case_name(const std::string& s);

struct SpaceRequest {
  std::map<std::string, std::string> axes;  // axis name -> value list, for the axes given
  std::vector<HwList> hw;
  // Zipped axes, "NAMES=TUPLES": fields that take their values together, e.g.
  // "m,n,k=32/10240/8192,2048/8192/8192" (a name: an axis, a hardware axis or a topology path).
  // Tuples may be named cases, "m,n,k=qkv:32/10240/8192,o-proj:2048/8192/8192": the names
  // are reported in a column "case".
  std::vector<std::string> zips;
  std::string group;  // "" : the family's default; "none": one group
  std::map<std::string, std::string> presets;  // flag -> value, for the presets given that set fields (PresetDesc::sets_fields)
};

// One axis of a built space (or a fixed field), with how its values are written.
struct SpaceAxis {
  std::string name;  // column name: the axis name, a hardware axis's short name, or the --hw path
  const AxisDesc* axis = nullptr;  // a family axis, or
  const HwField* field = nullptr;  // a topology field, or
  std::size_t offset = 0;
  // a preset's value that the family's prepare step reads (--routing), as its column shows it
  // from a config; no field of its own (offset kNoOffset).
  std::function<nlohmann::json(const void* config)> shown;
  static constexpr std::size_t kNoOffset = static_cast<std::size_t>(-1);
  nlohmann::json value_json(std::int64_t v) const;
  // Its value in a config.
  nlohmann::json json_of(const void* config) const;
};

// An axis of a built space: one field, or several zipped together.
struct SweptAxis {
  std::string name;  // the field's column name; for a zipped axis the names joined by ','
  std::vector<SpaceAxis> members;
  // An axis of the combinations the family's prepare step runs for (Family::prepare_reads):
  // each tuple as JSON, since its values in the space also set the words the step wrote.
  std::vector<nlohmann::json> prepared;
  bool zipped() const { return members.size() > 1; }
  // The value of tuple `t` of `values` as written in JSON: a value, or an array for a zip.
  nlohmann::json tuple_json(const std::vector<std::int64_t>& values, std::size_t t) const;
};

struct BuiltSpace {
  batched::Space space;
  std::vector<SweptAxis> axes;  // per axis of space
  std::vector<SpaceAxis> columns;  // every config column: family axes, hardware axes, then other fields swept
  // Named cases (a zip whose tuples have names): the names, and the axis they name (-1:
  // one case, fixed). Empty when no zip names its tuples.
  std::vector<std::string> cases;
  int case_axis = -1;
  // The case of flat index i ("" without named cases).
  std::string case_of(std::int64_t i) const;
};

constexpr std::int64_t kMaxSpace = INT64_C(1) << 50;
constexpr std::int64_t kMaxGroups = INT64_C(1) << 20;

// Throws InputError naming the flag and the item at fault.
BuiltSpace build_space(const Family& f, const TopologySpec& topo, const SpaceRequest& req);

// Names of an enum as a sentence: "os, ws or is".
std::string one_of(const std::vector<std::string>& names);
// The values of an enum axis's list of names (each kept once, in order); `flag` names it in
// errors.
std::vector<std::int64_t> parse_names(const std::string& flag, const std::string& text,
                                      const std::vector<std::string>& names);

}  // namespace kb
