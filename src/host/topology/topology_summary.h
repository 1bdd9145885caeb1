#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spec.h"

namespace kb {

// Totals of a topology for `topo show`.
nlohmann::json topology_summary(const TopologySpec& t);
std::string topology_summary_text(const TopologySpec& t);

}  // namespace kb
