// Two-stage evaluation (docs/adr/0023-two-stage-evaluation.md). A family whose full evaluation
// state is large (the allreduce model's scratch: its simulator's op arrays) may offer
// `Model::evaluate_small(Config)`: the same result as `evaluate` in a state of at most 16 KiB,
// or status kStatusDeferred where that state cannot hold the config. A system whose threads
// keep their state in scarce per-thread memory (CUDA: local memory, sized by the largest
// kernel frame) evaluates every config small first, then evaluates the deferred ones again
// with `evaluate`, in a kernel of their own. A family whose full state on a device may still
// defer (the collective's channels beyond its 1,024 ops) offers `Model::evaluate_host`, and a
// third stage evaluates those on the host (docs/adr/0032-collective-channels.md). The results
// are the one-stage results exactly.
#pragma once

#include <thrust/count.h>
#include <thrust/device_ptr.h>
#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/scatter.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>
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

// A family whose full state on a device can still defer (the collective's channels beyond
// its simulator: allreduce_model.h) offers `Model::evaluate_host(Config)`, the host's result:
// a third stage evaluates on the host what the second deferred.
template <class M, class = void>
struct HasHost : std::false_type {};
template <class M>
struct HasHost<M, std::void_t<decltype(M::evaluate_host(std::declval<const typename M::Config&>()))>>
    : std::true_type {};

// Whether a system's memory is a device's (`Sys::kOnDevice`): the host reads it by copies.
template <class S, class = void>
struct OnDevice : std::false_type {};
template <class S>
struct OnDevice<S, std::void_t<decltype(S::kOnDevice)>> : std::integral_constant<bool, S::kOnDevice> {};

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
// The positions [0, n) of `first` that `deferred` accepts, into `at` (grown when short); how many.
template <class Sys, class Policy, class It, class Deferred>
std::int64_t gather_deferred(const Policy& pol, It first, std::int64_t n, Deferred deferred,
                             typename Sys::template vec<std::int64_t>& at) {
  const std::int64_t m = thrust::count_if(pol, first, first + n, deferred);
  if (m == 0) return 0;
  if (static_cast<std::int64_t>(at.size()) < m) at.resize(static_cast<std::size_t>(m));
  thrust::counting_iterator<std::int64_t> pos(0);
  thrust::copy_if(pol, pos, pos + n, first, at.begin(), deferred);
  Sys::check();
  return m;
}

template <class Sys, class Policy, class It, class Deferred, class Redo>
std::int64_t redo_deferred(const Policy& pol, It first, std::int64_t n, Deferred deferred, Redo redo,
                           typename Sys::template vec<std::int64_t>& at) {
  const std::int64_t m = gather_deferred<Sys>(pol, first, n, deferred, at);
  if (m == 0) return 0;
  thrust::for_each(pol, at.begin(), at.begin() + m, redo);
  Sys::check();
  return m;
}

// The third stage: the positions [0, n) of `first` that `deferred` still accepts (gathered
// into `at`), each given `host(p)` (computed on the host) where it was: a device's results
// copied to the host and back, a host system's in place. Returns how many.
template <class Sys, class Policy, class It, class Deferred, class Host>
std::int64_t redo_on_host(const Policy& pol, It first, std::int64_t n, Deferred deferred, Host host,
                          typename Sys::template vec<std::int64_t>& at) {
  using T = typename std::iterator_traits<It>::value_type;
  const std::int64_t m = gather_deferred<Sys>(pol, first, n, deferred, at);
  if (m == 0) return 0;
  std::vector<std::int64_t> where(static_cast<std::size_t>(m));
  thrust::copy(at.begin(), at.begin() + m, where.begin());
  std::vector<T> values(static_cast<std::size_t>(m));
  for (std::int64_t i = 0; i < m; ++i) values[static_cast<std::size_t>(i)] = host(where[static_cast<std::size_t>(i)]);
  typename Sys::template vec<T> back(values.begin(), values.end());
  thrust::scatter(pol, back.begin(), back.end(), at.begin(), first);
  Sys::check();
  return m;
}

template <class Model>
struct HostOne {
  std::vector<typename Model::Config> in;  // the deferred configs' inputs, on the host
  typename Model::Result operator()(std::int64_t i) const { return Model::evaluate_host(in[static_cast<std::size_t>(i)]); }
};

// out[i] = Model::evaluate(in[i]) for i in [0, n): in two stages where the family offers a
// small state (and a third on the host where it offers evaluate_host). `in` and `out` are
// the system's memory.
template <class Sys, class Model, class Policy, class EvalOne>
void eval_configs(const Policy& pol, const typename Model::Config* in, std::int64_t n, typename Model::Result* out,
                  EvalOne one) {
  if constexpr (HasSmall<Model>::value) {
    thrust::transform(pol, in, in + n, out, EvalSmall<Model>{});
    Sys::check();
    typename Sys::template vec<std::int64_t> at;
    redo_deferred<Sys>(pol, out, n, ResultDeferred{}, RedoOne<Model>{in, out}, at);
    if constexpr (HasHost<Model>::value) {
      // Every config to the host (a deferral is rare: a copy of all beats a gather per config).
      const std::int64_t m = thrust::count_if(pol, out, out + n, ResultDeferred{});
      if (m > 0) {
        HostOne<Model> host{std::vector<typename Model::Config>(static_cast<std::size_t>(n))};
        if constexpr (OnDevice<Sys>::value)
          thrust::copy(thrust::device_pointer_cast(in), thrust::device_pointer_cast(in + n), host.in.begin());
        else
          std::copy(in, in + n, host.in.begin());
        redo_on_host<Sys>(pol, out, n, ResultDeferred{}, host, at);
      }
    }
  } else {
    thrust::transform(pol, in, in + n, out, one);
  }
}

// How many configs of a chunk took the later stages: the full state, and the host.
struct Stages {
  std::int64_t deferred = 0, on_host = 0;
};

// keyed[i - start] = small(i), then full(i) for the deferred ones, for i in [start, start + len);
// `at`: the deferred positions' scratch, kept across a sweep's chunks.
// `host(i)`: index i's keyed result computed on the host, for what the full state still
// defers (HasHost).
template <class Sys, class Model, class Policy, class Small, class Full, class Host>
Stages eval_indices(const Policy& pol, std::int64_t start, std::int64_t len, Keyed* keyed, Small small, Full full,
                    const Host& host, typename Sys::template vec<std::int64_t>& at) {
  thrust::counting_iterator<std::int64_t> first(start);
  Stages n;
  if constexpr (HasSmall<Model>::value) {
    thrust::transform(pol, first, first + len, keyed, small);
    Sys::check();
    n.deferred = redo_deferred<Sys>(pol, keyed, len, KeyedDeferred{}, RedoIndex<Model, Full>{full, start, keyed}, at);
    if constexpr (HasHost<Model>::value)
      if (n.deferred > 0)
        n.on_host = redo_on_host<Sys>(pol, keyed, len, KeyedDeferred{}, [&](std::int64_t p) { return host(start + p); }, at);
  } else {
    thrust::transform(pol, first, first + len, keyed, full);
  }
  return n;
}

}  // namespace kb::batched::detail
