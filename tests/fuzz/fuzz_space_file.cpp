// The space-file loader (`sweep --space FILE`), then the space it describes.
#include <string>

#include "fuzz.h"
#include "host/common/error.h"
#include "host/families/family.h"
#include "host/sweep/space_file.h"
#include "host/topology/load.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const kb::TopologySpec topo = kb::load_topology(std::string(KB_FUZZ_TOPOLOGIES) + "/default.yaml");
  const std::string path = kb::fuzz::as_file(data, size, ".yaml");
  try {
    const kb::SpaceFile s = kb::load_space_file(path);
    kb::build_space_from_file(kb::family(s.family), topo, s);
  } catch (const kb::InputError&) {
  }
  return 0;
}
