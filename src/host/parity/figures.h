// Parity: the figures both engines must agree on (the family's columns marked parity),
// compared exactly.
#pragma once

#include <string>
#include <type_traits>

#include "../families/family.h"

namespace kb {

// "" when every parity figure of `ref` and `exec` (Results of `f` for `config`) is equal,
// else the figures that differ, e.g. "latency_ps 10 != 12, ops 4 != 5".
std::string figures_diff(const Family& f, const void* config, const void* ref, const void* exec);

// The same for typed PODs (a Config and two Results).
template <class Config, class Result,
          class = std::enable_if_t<std::is_class<Config>::value && std::is_class<Result>::value>>
std::string figures_diff(const Family& f, const Config& config, const Result& ref, const Result& exec) {
  return figures_diff(f, static_cast<const void*>(&config), static_cast<const void*>(&ref),
                      static_cast<const void*>(&exec));
}

}  // namespace kb
