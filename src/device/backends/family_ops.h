// A family's table entry (backends.h, FamilyOps) from its Model: the host helpers, and the
// OpenMP entry points by their declarations (family_units.h), which the family's generated
// unit instantiates for a family of the list, and extension_family.h for an extension.
#pragma once

#include <cstddef>

#include "family_units.h"
#include "host_helpers.h"

namespace kb::batched {

template <class Model>
FamilyOps family_ops_of(const char* name) {
  FamilyOps e;
  e.name = name;
  e.config_size = sizeof(typename Model::Config);
  e.result_size = sizeof(typename Model::Result);
  e.hw_offset = offsetof(typename Model::Config, hw);
  e.statuses = Model::kStatuses;
  e.complete = host_detail::complete_impl<Model>;
  e.evaluate = host_detail::evaluate_impl<Model>;
  e.figures = host_detail::figures_impl<Model>;
  e.decode = host_detail::decode_impl<Model>;
  e.eval_omp = eval_omp_family<Model>;
  e.sweep_omp = sweep_omp_family<Model>;
  return e;
}

}  // namespace kb::batched
