// Space files: a sweep written down (`kernbench-gpu sweep --space FILE.yaml`): the family,
// its axes (any family field, any topology field by its --set path; value lists or range
// strings as on the command line), zipped fields, groups, objectives and reductions. Every
// problem is one line with FILE:LINE:COL. See docs/spaces.md and spaces/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "space.h"

namespace kb {

struct SpaceFile {
  std::string path;
  std::string family;
  std::string topology;  // "" or a path, relative to the current folder (resolved from the file's)
  SpaceRequest req;
  std::optional<int> top, recheck;
  std::optional<std::string> pareto;
  std::optional<bool> histogram;
  // Where each axis, zip and the group were written: "FILE:LINE:COL".
  std::map<std::string, std::string> where;
};

// The family a space file names (for `sweep --space FILE` without a family).
std::string space_file_family(const std::string& path);
// A space file is read once per command, however often it is parsed; a new command (in a
// process that runs several, as the Python module does) reads it again.
void forget_space_files();
SpaceFile load_space_file(const std::string& path);
// build_space for a file's request: an error names the line of the axis at fault.
BuiltSpace build_space_from_file(const Family& f, const TopologySpec& topo, const SpaceFile& s);

}  // namespace kb
