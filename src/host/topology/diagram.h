// A topology as a Graphviz diagram: SIPs as clusters, each cube a node showing its PE
// grid, mesh links between neighbouring cubes and the SIP links, each labelled with its
// bandwidth and latency.
#pragma once

#include <string>

#include "spec.h"

namespace kb {

std::string topology_dot(const TopologySpec& t);

// Writes the diagram to `out`: DOT for a .dot file, else rendered by Graphviz's `dot`
// (.svg or .png). Throws InputError for another extension, or when Graphviz is missing.
void write_topology_diagram(const TopologySpec& t, const std::string& out);

}  // namespace kb
