// Two-stage evaluation (docs/adr/0023-two-stage-evaluation.md). A family whose full evaluation
// state is large (the allreduce model's scratch: its simulator's op arrays) may offer
// `Model::evaluate_small(Config)`: the same result as `evaluate` in a state of at most 16 KiB,
// or status kStatusDeferred where that state cannot hold the config. A system whose threads
// keep their state in scarce per-thread memory (CUDA: local memory, sized by the largest
// kernel frame) evaluates every config small first, then evaluates the deferred ones again
// with `evaluate`, in a kernel of their own. The results are the one-stage results exactly.
#pragma once

#include <thrust/count.h>
#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "../common/units.h"
#include "keyed.h"

namespace kb::batched::detail {

template <class M, class = void>
struct HasSmall : std::false_type {};
template <class M>
struct HasSmall<M, std::void_t<decltype(M::evaluate_small(std::declval<const typename M::Config&>()))>>
    : std::true_type {};

template <class Model>
struct EvalSmall {
  KB_HD typename Model::Result operator()(const typename Model::Config& c) const { return Model::evaluate_small(c); }
};

struct ResultDeferred {
  template <class Result>
  KB_HD bool operator()(const Result& r) const {
    return r.status == kStatusDeferred;
  }
};

// A keyed config whose small evaluation was deferred (keyed_of: invalid, its status as cost).
struct KeyedDeferred {
  KB_HD bool operator()(const Keyed& k) const { return k.latency == INT64_MAX && k.cost == kStatusDeferred; }
};

// The second stage: config i evaluated with the full state.
template <class Model>
struct RedoOne {
  const typename Model::Config* in;
  typename Model::Result* out;
  KB_HD void operator()(std::int64_t i) const { out[i] = Model::evaluate(in[i]); }
};
template <class Model, class Eval>
struct RedoIndex {
  Eval eval;  // EvalIndex<Model>
  std::int64_t start;
  Keyed* out;
  KB_HD void operator()(std::int64_t at) const { out[at] = eval(start + at); }  // at: the position in the chunk
};

// The positions [0, n) whose element `deferred` accepts, gathered into `at` (the system's
// memory, grown when it is too short: a sweep keeps one across its chunks, so a chunk with
// deferred configs allocates nothing), and the second stage run over them; `redo(p)`
// evaluates position p again.
template <class Sys, class Policy, class It, class Deferred, class Redo>
void redo_deferred(const Policy& pol, It first, std::int64_t n, Deferred deferred, Redo redo,
                   typename Sys::template vec<std::int64_t>& at) {
  const std::int64_t m = thrust::count_if(pol, first, first + n, deferred);
  if (m == 0) return;
  if (static_cast<std::int64_t>(at.size()) < m) at.resize(static_cast<std::size_t>(m));
  thrust::counting_iterator<std::int64_t> pos(0);
  thrust::copy_if(pol, pos, pos + n, first, at.begin(), deferred);
  Sys::check();
  thrust::for_each(pol, at.begin(), at.begin() + m, redo);
  Sys::check();
}

// out[i] = Model::evaluate(in[i]) for i in [0, n): in two stages where the family offers a
// small state. `in` and `out` are the system's memory.
template <class Sys, class Model, class Policy, class EvalOne>
void eval_configs(const Policy& pol, const typename Model::Config* in, std::int64_t n, typename Model::Result* out,
                  EvalOne one) {
  if constexpr (HasSmall<Model>::value) {
    thrust::transform(pol, in, in + n, out, EvalSmall<Model>{});
    Sys::check();
    typename Sys::template vec<std::int64_t> at;
    redo_deferred<Sys>(pol, out, n, ResultDeferred{}, RedoOne<Model>{in, out}, at);
  } else {
    thrust::transform(pol, in, in + n, out, one);
  }
}

// keyed[i - start] = small(i), then full(i) for the deferred ones, for i in [start, start + len);
// `at`: the deferred positions' scratch, kept across a sweep's chunks.
template <class Sys, class Model, class Policy, class Small, class Full>
void eval_indices(const Policy& pol, std::int64_t start, std::int64_t len, Keyed* keyed, Small small, Full full,
                  typename Sys::template vec<std::int64_t>& at) {
  thrust::counting_iterator<std::int64_t> first(start);
  if constexpr (HasSmall<Model>::value) {
    thrust::transform(pol, first, first + len, keyed, small);
    Sys::check();
    redo_deferred<Sys>(pol, keyed, len, KeyedDeferred{}, RedoIndex<Model, Full>{full, start, keyed}, at);
  } else {
    thrust::transform(pol, first, first + len, keyed, full);
  }
}

}  // namespace kb::batched::detail
