// The topology loader with --set overrides: the bytes up to a line "--set" are the YAML
// file, each later line one PATH=VALUE override.
#include <string>
#include <vector>

#include "fuzz.h"
#include "host/common/error.h"
#include "host/topology/load.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t cut = text.find("\n--set\n");
  std::vector<std::string> sets;
  if (cut != std::string::npos) {
    std::size_t at = cut + 7;
    while (at < text.size()) {
      const std::size_t end = text.find('\n', at);
      sets.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  const std::string yaml = text.substr(0, cut);
  const std::string path = kb::fuzz::as_file(reinterpret_cast<const std::uint8_t*>(yaml.data()), yaml.size(), ".yaml");
  try {
    kb::load_topology(path, sets);
  } catch (const kb::InputError&) {
  }
  return 0;
}
