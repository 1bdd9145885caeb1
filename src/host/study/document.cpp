#include "document.h"

#include "../topology/fields.h"

namespace kb {

nlohmann::json document(const std::string& schema, const std::string& version, const TopologySpec& topo) {
  nlohmann::json j;
  j["schema"] = schema;
  j["schema_version"] = version;
  j["generator"] = std::string("kernbench-gpu ") + KB_VERSION;
  j["topology"] = topology_record(topo);
  return j;
}

}  // namespace kb
