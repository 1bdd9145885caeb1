// Parity: the figures both engines must agree on (the family's columns marked parity),
// compared exactly.
#pragma once

#include <string>
#include <type_traits>

#include "../common/error.h"
#include "../families/family.h"

namespace kb {

// "" when every parity figure of `ref` and `exec` (Results of `f` for `config`) is equal,
// else the figures that differ, e.g. "latency_ps 10 != 12, ops 4 != 5".
std::string figures_diff(const Family& f, const void* config, const void* ref, const void* exec);

// The same for typed PODs: the family's Config and two of its Results (sizes checked).
template <class Config, class Result,
          class = std::enable_if_t<std::is_trivially_copyable<Config>::value && std::is_class<Config>::value &&
                                   std::is_trivially_copyable<Result>::value && std::is_class<Result>::value>>
std::string figures_diff(const Family& f, const Config& config, const Result& ref, const Result& exec) {
  KB_INTERNAL_CHECK(sizeof(Config) == f.config_size() && sizeof(Result) == f.result_size(),
                    "figures_diff: a config or result of another family than " + f.name);
  return figures_diff(f, static_cast<const void*>(&config), static_cast<const void*>(&ref),
                      static_cast<const void*>(&exec));
}

}  // namespace kb
