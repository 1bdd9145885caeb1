// The validated, plain hardware description: the flattened hardware POD plus where it
// came from. Field names carry their units.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../../device/common/hw.h"

namespace kb {

struct TopologySpec : HwConfig {
  std::int64_t schema_version = 0;
  std::string name;
  // Where it came from (not part of the hardware).
  std::string source;  // file path
  std::uint64_t hash = 0;  // FNV-1a over every resolved field, overrides included
  std::vector<std::string> overrides;  // the --set PATH=VALUE strings applied, in order

  const HwConfig& hw() const { return *this; }
  HwConfig& hw() { return *this; }
};

// The topology a config's flattened hardware describes (what a reference program runs on).
inline TopologySpec topology_of(const HwConfig& h) {
  TopologySpec topo;
  topo.hw() = h;
  topo.schema_version = 1;
  topo.name = "config";
  return topo;
}

const char* to_string(Dataflow d);
const char* to_string(SipTopology t);
std::string hash_hex(std::uint64_t h);

}  // namespace kb
