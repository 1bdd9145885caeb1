// The typed API's descriptions (ADR 0029): what `list --json` and `topo show --json` print,
// as values, for the command line and for Python (kb.families(), kb.benches(), kb.topology()).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "host/api/eval.h"

namespace kb::api {

// Every bench and every family: what eval and sweep take (axes with their types and ranges,
// hardware axes with their units, presets) and what they report (`list --json`).
nlohmann::json list_document();

// A topology's summary and every field's resolved value (`topo show FILE --json`).
nlohmann::json topology_document(const TopologyRequest& request);
// The same summary as the lines `topo show FILE` prints.
std::string topology_text(const TopologyRequest& request);
// The topology drawn to `out` (`topo diagram FILE -o OUT`): OUT.dot, OUT.svg or OUT.png.
void topology_diagram(const TopologyRequest& request, const std::string& out);

// The family of that name or alias; InputError as the command line words an unknown one
// (`eval NAME`).
const Family& family_named(const std::string& name);

}  // namespace kb::api
