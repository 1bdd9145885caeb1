#pragma once

#include <string>
#include <vector>

#include "spec.h"

namespace kb {

// Reads and validates a topology file. `overrides` are "path=value" strings (from --set),
// applied before validation. Every problem throws InputError with FILE:LINE:COL.
TopologySpec load_topology(const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace kb
