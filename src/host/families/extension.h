// A family defined outside the one list (families.h), registered by one line:
//
//   KB_EXTENSION_FAMILY(toy, ToyModel, toy_descriptor);
//
// with `ToyModel` a model as in docs/adding-a-family.md and `toy_descriptor` a function
// `Family (batched::Family id)` that returns its host descriptor with that id. The line
// instantiates the family's OpenMP evaluation and sweep engine in its unit, and eval,
// sweep, merge, the writers and the parity comparison then serve it like any other family;
// only the CUDA backend does not (it compiles the families of the list).
#pragma once

#include "device/backends/extension_family.h"
#include "family.h"

namespace kb {

template <class Model>
bool register_extension_family(const char* name, Family (*describe)(batched::Family id)) {
  return register_family(describe(batched::register_extension(batched::extension_of<Model>(name))));
}

}  // namespace kb

#define KB_EXTENSION_FAMILY(name, Model, describe) \
  static const bool kb_extension_family_##name = ::kb::register_extension_family<Model>(#name, describe)
