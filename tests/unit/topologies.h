// The topologies the unit tests load, by name (topologies/NAME).
#pragma once

#include <string>

#include "host/topology/load.h"

namespace kb::unittest {

inline TopologySpec topo(const char* name) { return load_topology(std::string(KB_TEST_TOPOLOGIES) + "/" + name); }
inline TopologySpec tiny() { return topo("tiny.yaml"); }

}  // namespace kb::unittest
