// The typed API's descriptions (ADR 0029): what `list --json` and `topo show --json` print,
// as values, for the command line and for Python (kb.families(), kb.benches(), kb.topology()).
#pragma once

#include <nlohmann/json.hpp>

#include "host/api/eval.h"

namespace kb::api {

// Every bench and every family: what eval and sweep take (axes with their types and ranges,
// hardware axes with their units, presets) and what they report (`list --json`).
nlohmann::json list_document();

// A topology's summary and every field's resolved value (`topo show FILE --json`).
nlohmann::json topology_document(const TopologyRequest& request);

}  // namespace kb::api
