// An extension family's batched part, from its Model: the OpenMP system's evaluation and
// sweep engine and the host helpers, instantiated in the unit that includes this header
// (host/families/extension.h registers the family with one line).
#pragma once

#include "host_helpers.h"
#include "omp_family.h"

namespace kb::batched {

template <class Model>
ExtensionFamily extension_of(const char* name) {
  KB_CHECK_LAYOUT(extension, Model)
  ExtensionFamily e;
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
