// OpenMP backend, one family's part: the generic Thrust code on thrust::omp, built by the
// host compiler. Included by one generated unit per family (KB_OMP_FAMILY_UNIT); the
// dispatch and the host-side helpers are omp_backend.cpp.
#pragma once

#include <thrust/reduce.h>
#include <thrust/system/omp/execution_policy.h>
#include <thrust/system/omp/vector.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <cstddef>

#include "../sweep/reduce.inl"
#include "family_units.h"

namespace kb::batched {

namespace omp_detail {
struct OmpSys {
  template <class T>
  using vec = thrust::omp::vector<T>;
  static void check() {}
  static constexpr std::int64_t kEvalBlock = 256;
};

template <class Model>
void eval_impl(const void* configs, std::size_t n, void* results) {
  const auto* in = static_cast<const typename Model::Config*>(configs);
  thrust::transform(thrust::omp::par, in, in + n, static_cast<typename Model::Result*>(results),
                    detail::EvalOne<Model>{});
}

template <class Model>
SweepSummary sweep_impl(const Space& space, const Reductions& red, std::int64_t chunk) {
  using namespace detail;
  const std::vector<std::int64_t> flat = flatten_values(space);
  BestByKey<OmpSys> best(std::min(chunk, space.size()), space.size() / space.groups());
  return sweep_chunks<OmpSys, Model>(thrust::omp::par, space, flat.data(), red, chunk,
                                     [&](auto keyed, std::int64_t, std::int64_t len) { return best(thrust::omp::par, keyed, len); });
}
}  // namespace omp_detail

template <class Model>
void eval_omp_family(const void* configs, std::size_t n, void* results) {
  omp_detail::eval_impl<Model>(configs, n, results);
}

template <class Model>
SweepSummary sweep_omp_family(const Space& space, const Reductions& red, std::int64_t chunk) {
  return omp_detail::sweep_impl<Model>(space, red, chunk);
}

}  // namespace kb::batched

// The body of a generated per-family unit.
#define KB_OMP_FAMILY_UNIT(Model)                                                                      \
  template void kb::batched::eval_omp_family<Model>(const void*, std::size_t, void*);                \
  template kb::batched::SweepSummary kb::batched::sweep_omp_family<Model>(                           \
      const kb::batched::Space&, const kb::batched::Reductions&, std::int64_t);
