// The header every result document starts with: its schema and version, the program that
// wrote it, and the resolved topology (every field's value, not only its name).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "../topology/spec.h"

namespace kb {

nlohmann::json document(const std::string& schema, const std::string& version, const TopologySpec& topo);

}  // namespace kb
