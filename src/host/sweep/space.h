// The sweep front end: a family's space from value lists as written on the command line,
// over its axes and over any topology field (--hw PATH=LIST).
#pragma once

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

struct SweepRequest {
  std::map<std::string, std::string> axes;  // axis name -> value list, for the axes given
  std::vector<HwList> hw;
  std::string group;  // "" : the family's default; "none": one group
};

// One axis of a built space (or a fixed field), with how its values are written.
struct SpaceAxis {
  std::string name;  // column name: the axis name, a hardware axis's short name, or the --hw path
  const AxisDesc* axis = nullptr;  // a family axis, or
  const HwField* field = nullptr;  // a topology field
  std::size_t offset = 0;
  nlohmann::json value_json(std::int64_t v) const;
};

struct BuiltSpace {
  batched::Space space;
  std::vector<SpaceAxis> axes;  // per axis of space
  std::vector<SpaceAxis> columns;  // every config column: family axes, hardware axes, then --hw fields swept
};

constexpr std::int64_t kMaxSpace = INT64_C(1) << 50;
constexpr std::int64_t kMaxGroups = INT64_C(1) << 20;

// Throws InputError naming the flag and the item at fault.
BuiltSpace build_space(const Family& f, const TopologySpec& topo, const SweepRequest& req);

// Names of an enum as a sentence: "os, ws or is".
std::string one_of(const std::vector<std::string>& names);

}  // namespace kb
