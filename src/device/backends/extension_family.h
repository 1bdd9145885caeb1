// An extension family's batched part, from its Model: its table entry (family_ops.h), with
// the OpenMP system's evaluation and sweep engine instantiated in the unit that includes
// this header (host/families/extension.h registers the family with one line).
#pragma once

#include "family_ops.h"
#include "omp_family.h"

namespace kb::batched {

template <class Model>
FamilyOps extension_of(const char* name) {
  KB_CHECK_LAYOUT(extension, Model)
  return family_ops_of<Model>(name);
}

}  // namespace kb::batched
