// The host-side helpers of a family, as templates of its Model: completing a config,
// evaluating one, what a sweep's reductions see of it, and decoding a space's index.
// omp_backend.cpp instantiates them for the families of the list, extension_family.h for
// an extension family.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../sweep/reduce.inl"
#include "backends.h"

namespace kb::batched::host_detail {

template <class Model>
void complete_impl(void* config) {
  Model::complete(*static_cast<typename Model::Config*>(config));
}
template <class Model>
void evaluate_impl(const void* config, void* result) {
  *static_cast<typename Model::Result*>(result) = Model::evaluate(*static_cast<const typename Model::Config*>(config));
}
template <class Model>
HostFigures figures_impl(const void* config, int pareto) {
  const auto& c = *static_cast<const typename Model::Config*>(config);
  const typename Model::Result r = Model::evaluate(c);
  detail::SpaceView<typename Model::Config> s{};
  s.pareto = pareto;
  const detail::Keyed k = detail::keyed_of<Model>(s, 0, 0, c, r);
  return HostFigures{r.status, k.latency, k.cost};
}
template <class Model>
void decode_impl(const Space& space, const std::int64_t* flat, std::int64_t i, void* config) {
  *static_cast<typename Model::Config*>(config) =
      detail::decode<Model>(detail::make_view<typename Model::Config>(space, flat), i);
}

}  // namespace kb::batched::host_detail

// What the generic engine and the type-erased boundary assume of every family's PODs.
#define KB_CHECK_LAYOUT(id, Model)                                                                        \
  static_assert(std::is_trivially_copyable<typename Model::Config>::value && sizeof(typename Model::Config) % 8 == 0,       \
                #id ": a Config is a POD of int64 fields (sweep axes write int64s at offsets)");          \
  static_assert(std::is_same<decltype(Model::Config::hw), ::kb::HwConfig>::value, #id ": a Config embeds HwConfig hw"); \
  static_assert(std::is_trivially_copyable<typename Model::Result>::value && offsetof(typename Model::Result, status) == 0 &&  \
                    std::is_same<decltype(Model::Result::status), std::int32_t>::value,                    \
                #id ": a Result starts with its int32 status");                                           \
  static_assert(std::is_same<decltype(Model::Result::latency_ps), ::kb::ps_t>::value, #id ": a Result has ps_t latency_ps"); \
  static_assert(Model::kStatuses >= 1 && Model::kStatuses <= ::kb::batched::kMaxStatuses, #id ": 1..16 statuses");
