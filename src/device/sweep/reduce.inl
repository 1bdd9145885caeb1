// The generic sweep engine, written once against Thrust for every family and instantiated
// per system (thrust::omp in omp_backend.cpp, thrust::cuda in cuda_backend.cu) and per
// family (families.h). A backend describes its system as `Sys`: Sys::vec<T>, its vector
// type, Sys::check(), run after kernels, and Sys::kEvalBlock, the consecutive configs one
// thread evaluates in a row (1: one per thread). A family is a Model (src/device/models/gemm/gemm_model.h):
// Config and Result PODs (Result has `status`, 0 = valid, and `latency_ps`), kStatuses,
// complete(Config&), evaluate(Config) and cost(kind, Config, Result).
#pragma once

#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/reduce.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <utility>

#include "../common/area.h"
#include "../common/energy.h"
#include "batched_space.h"
#include "sweep_summary.h"
#include "keyed.h"
#include "two_stage.h"

namespace kb::batched::detail {

// Device-copyable view of a Space. The axes live in one flat array next to their values
// (not in arrays of the view itself), so decoding indexes memory, not a copy of the view.
template <class Config>
struct SpaceView {
  Config base;
  std::int32_t naxes;
  std::int32_t pareto;        // the family's cost kind EvalIndex computes; 0: none
  std::int64_t group_stride;  // product of the lengths of the non-group axes
  const std::int64_t* data;   // per axis: width, length, where its offsets and values start in data
};

// Sets the int64 at byte `offset` of a config (memcpy: no aliasing assumptions).
template <class Config>
KB_HD inline void set_at(Config& c, std::int64_t offset, std::int64_t v) {
  memcpy(reinterpret_cast<unsigned char*>(&c) + offset, &v, sizeof v);
}

// dst = src, word by word: GCC turns a struct copy of this size (and a plain loop, which
// it recognises as one) into `rep movsq`, whose start-up cost was a fifth of the OpenMP
// block's own time in profiles; kept a loop, it becomes vector moves.
#if defined(__GNUC__) && !defined(__clang__)
#define KB_PLAIN_COPY_LOOP __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define KB_PLAIN_COPY_LOOP
#endif
template <class Config>
KB_PLAIN_COPY_LOOP inline void copy_words(Config& dst, const Config& src) {
  static_assert(sizeof(Config) % 8 == 0, "a Config is int64 fields");
  auto* d = reinterpret_cast<unsigned char*>(&dst);
  const auto* s = reinterpret_cast<const unsigned char*>(&src);
  for (std::size_t i = 0; i < sizeof(Config); i += 8) memcpy(d + i, s + i, 8);
}

// Sets axis a's fields of c to its value number d.
template <class Config>
KB_HD inline void set_axis(const SpaceView<Config>& s, Config& c, std::int32_t a, std::int64_t d) {
  const std::int64_t* axis = s.data + 3 * a;
  const std::int64_t width = axis[0];
  const std::int64_t* offsets = s.data + axis[2];
  const std::int64_t* values = offsets + width + d * width;
  for (std::int64_t w = 0; w < width; ++w) set_at(c, offsets[w], values[w]);
}

// The base config with index i's axis values; digit[a], when given, receives axis a's
// value number.
template <class Config>
KB_HD inline Config decode_raw(const SpaceView<Config>& s, std::int64_t i, std::int64_t* digit = nullptr) {
  Config c = s.base;
  for (std::int32_t a = s.naxes - 1; a >= 0; --a) {
    const std::int64_t length = s.data[3 * a + 1], next = div_fast(i, length), d = i - next * length;
    i = next;
    if (digit) digit[a] = d;
    set_axis(s, c, a, d);
  }
  return c;
}

template <class Model>
KB_HD inline typename Model::Config decode(const SpaceView<typename Model::Config>& s, std::int64_t i) {
  typename Model::Config c = decode_raw(s, i);
  Model::complete(c);
  return c;
}

// Whether Model has uncomplete(Config& c, const Config& raw): puts back into c, completed
// from raw, every field complete() may have written.
template <class Model, class = void>
constexpr bool kUndoesComplete = false;
template <class Model>
constexpr bool kUndoesComplete<Model, std::void_t<decltype(Model::uncomplete(std::declval<typename Model::Config&>(),
                                                                             std::declval<const typename Model::Config&>()))>> =
    true;

template <class Model>
struct EvalOne {
  KB_HD typename Model::Result operator()(const typename Model::Config& c) const { return Model::evaluate(c); }
};

// `--pareto energy`: a valid config's energy_fj (INT64_MAX on an overflow); a family that
// does not count its actions never offers it.
template <class Model>
KB_HD inline std::int64_t energy_cost(const typename Model::Config& c, const typename Model::Result& r) {
  if constexpr (Model::kCounts) {
    const Energy e = Model::energy(c, r);
    return e.status == kEnergyOk ? e.total : INT64_MAX;
  } else {
    return 0;
  }
}

// Config i of group `group`, completed as c and evaluated as r, as the reductions see it.
template <class Model>
KB_HD inline Keyed keyed_of(const SpaceView<typename Model::Config>& s, std::int64_t group, std::int64_t i,
                            const typename Model::Config& c, const typename Model::Result& r) {
  const bool ok = r.status == 0;
  if (!ok) return Keyed{group, INT64_MAX, i, r.status};
  std::int64_t cost = 0;
  if (!s.pareto) cost = 0;
  else if (s.pareto == kCostArea) cost = hw_area(c.hw).machine;
  else if (s.pareto == kCostEnergy) cost = energy_cost<Model>(c, r);
  else cost = Model::cost(s.pareto, c, r);
  return Keyed{group, r.latency_ps, i, cost};
}

template <class Model>
struct EvalIndex {
  SpaceView<typename Model::Config> s;
  KB_HD Keyed operator()(std::int64_t i) const {
    const typename Model::Config c = decode<Model>(s, i);
    return keyed_of<Model>(s, div_fast(i, s.group_stride), i, c, Model::evaluate(c));
  }
};
// The host's evaluation (Model::evaluate_host) of index i: a third stage's (two_stage.h).
template <class Model>
struct EvalIndexHost {
  SpaceView<typename Model::Config> s;
  Keyed operator()(std::int64_t i) const {
    const typename Model::Config c = decode<Model>(s, i);
    return keyed_of<Model>(s, div_fast(i, s.group_stride), i, c, Model::evaluate_host(c));
  }
};
// The same with the family's small state (two_stage.h): kStatusDeferred where it cannot hold
// the config.
template <class Model>
struct EvalIndexSmall {
  SpaceView<typename Model::Config> s;
  KB_HD Keyed operator()(std::int64_t i) const {
    const typename Model::Config c = decode<Model>(s, i);
    return keyed_of<Model>(s, div_fast(i, s.group_stride), i, c, Model::evaluate_small(c));
  }
};

// Where an OpenMP chunk's blocks also put what the GPU computes in passes of their own over
// the keyed configs: counts by status and the latency checksum, the latency histogram
// (both summed with relaxed atomics, once per block), and each block's winners.
struct BlockSums {
  std::int64_t* by_status;  // [kMaxStatuses]
  std::uint64_t* checksum;  // the sum of valid latencies, mod 2^64
  std::int64_t* histogram;  // [kHistBins], or null when not asked for
  // Per block: the best config of its first group and of its last (latency INT64_MAX:
  // none). Null when groups are shorter than a block (a block would have more winners).
  Keyed *first_best, *last_best;
  Keyed* fastest;  // per block: its fastest config (a bound for the top k)
};

// The same keys, a block of consecutive indices per work item: the item decodes its first
// index and counts on like an odometer, rewriting only the axes that change (decoding
// costs one division per axis). Items visit the chunk's blocks in a scattered order,
// block (j·stride) mod blocks with stride coprime to blocks: a static schedule hands each
// thread a contiguous range of items, and regions of a space differ widely in cost (small
// shapes with invalid tilings are cheap), so contiguous blocks would leave threads idle.
// For systems whose threads are plentiful and cheap (CUDA: EvalIndex, one index each).
// Host code (OpenMP); it also marks the configs its block keeps off the Pareto front and
// adds to `sums`.
template <class Model, int N>
struct EvalBlock {
  SpaceView<typename Model::Config> s;
  std::int64_t start, len;      // the chunk: indices [start, start + len)
  std::int64_t block, blocks;   // indices per work item; items (= ceil(len / block))
  std::int64_t stride;          // coprime to blocks
  Keyed* out;                   // out[i - start]
  BlockSums sums;
  void operator()(std::int64_t j) const {
    const std::int64_t b = j * stride % blocks;  // j, stride < blocks <= 2^30
    std::int64_t i = start + b * block;
    const std::int64_t end = imin(i + block, start + len);
    std::int64_t digit[64];  // the sweep engine accepts at most 64 axes (validate_sweep)
    typename Model::Config raw = decode_raw(s, i, digit);
    const std::int64_t first = i;
    std::int64_t group = div_fast(i, s.group_stride), in_group = i - group * s.group_stride;
    std::int64_t by_status[N] = {};
    std::uint64_t checksum = 0;
    std::int32_t hist[kHistBins];
    if (sums.histogram) std::memset(hist, 0, sizeof hist);
    const Keyed none{0, INT64_MAX, 0, 0};
    Keyed best = none;  // of the current group
    Keyed fastest = none;
    bool first_group = true;
    // c is raw completed. A family that says which fields its complete() writes
    // (Model::uncomplete) has them put back between configs, and the axes that change set
    // in both, instead of copying the whole config (hundreds of bytes) per config.
    typename Model::Config c;
    copy_words(c, raw);
    for (;;) {
      if constexpr (!kUndoesComplete<Model>) copy_words(c, raw);
      Model::complete(c);
      const typename Model::Result r = Model::evaluate(c);
      const bool ok = r.status == 0;
      const Keyed k = keyed_of<Model>(s, group, i, c, r);
      out[i - start] = k;
      ++by_status[ok ? 0 : r.status];
      if (ok) {
        checksum += static_cast<std::uint64_t>(r.latency_ps);
        if (sums.histogram) ++hist[hist_bin(r.latency_ps)];
        if (k.latency < best.latency) best = k;  // indices rise: ties keep the first
        if (k.latency < fastest.latency) fastest = k;
      }
      if (++i == end) break;
      if (++in_group == s.group_stride) {
        if (sums.first_best && first_group) sums.first_best[b] = best;
        first_group = false;
        best = none;
        ++group, in_group = 0;
      }
      if constexpr (kUndoesComplete<Model>) Model::uncomplete(c, raw);
      for (std::int32_t a = s.naxes - 1; a >= 0; --a) {
        const bool carry = ++digit[a] == s.data[3 * a + 1];
        if (carry) digit[a] = 0;
        set_axis(s, raw, a, digit[a]);
        if constexpr (kUndoesComplete<Model>) set_axis(s, c, a, digit[a]);
        if (!carry) break;
      }
    }
    if (sums.first_best) {
      if (first_group) sums.first_best[b] = best, sums.last_best[b] = none;
      else sums.last_best[b] = best;
    }
    sums.fastest[b] = fastest;
    if (s.pareto) mark_beaten(out + (first - start), end - first);
    for (int x = 0; x < N; ++x)
      if (by_status[x]) __atomic_fetch_add(&sums.by_status[x], by_status[x], __ATOMIC_RELAXED);
    __atomic_fetch_add(sums.checksum, checksum, __ATOMIC_RELAXED);
    if (sums.histogram)
      for (int x = 0; x < kHistBins; ++x)
        if (hist[x]) __atomic_fetch_add(&sums.histogram[x], static_cast<std::int64_t>(hist[x]), __ATOMIC_RELAXED);
  }
};

// A stride coprime to n near n·0.618 (a golden-ratio step scatters consecutive items).
inline std::int64_t scatter_stride(std::int64_t n) {
  std::int64_t st = n * 618 / 1000;
  auto gcd = [](std::int64_t a, std::int64_t b) {
    while (b != 0) {
      const std::int64_t t = a % b;
      a = b, b = t;
    }
    return a;
  };
  if (st < 1) st = 1;
  while (gcd(st, n) != 1) ++st;
  return st;
}

struct BetterOf {
  KB_HD Keyed operator()(const Keyed& a, const Keyed& b) const {
    if (a.latency != b.latency) return a.latency < b.latency ? a : b;
    return a.index < b.index ? a : b;
  }
};

struct GroupOf {
  KB_HD std::int64_t operator()(const Keyed& k) const { return k.group; }
};

// Per chunk: configs per status (N: the family's status count), and the sum of valid
// latencies (mod 2^64).
template <int N>
struct Tally {
  std::int64_t by_status[N];
  std::uint64_t checksum;
};

template <int N>
struct TallyOf {
  KB_HD Tally<N> operator()(const Keyed& k) const {
    Tally<N> t{};
    const bool ok = k.latency != INT64_MAX;
    const std::int64_t status = ok ? 0 : k.cost;
    for (int s = 0; s < N; ++s) t.by_status[s] = s == status ? 1 : 0;
    t.checksum = ok ? static_cast<std::uint64_t>(k.latency) : 0;
    return t;
  }
};

template <int N>
struct AddTally {
  KB_HD Tally<N> operator()(const Tally<N>& a, const Tally<N>& b) const {
    Tally<N> t{};
    for (int s = 0; s < N; ++s) t.by_status[s] = a.by_status[s] + b.by_status[s];
    t.checksum = a.checksum + b.checksum;
    return t;
  }
};

template <int N>
inline void add_tally(SweepSummary& sum, const Tally<N>& t) {
  for (int s = 0; s < N; ++s) sum.by_status[static_cast<std::size_t>(s)] += t.by_status[s];
  sum.valid += t.by_status[0];
  sum.latency_checksum = static_cast<std::int64_t>(static_cast<std::uint64_t>(sum.latency_checksum) + t.checksum);
}

// The flat array of a SpaceView: axis records (width, length, start), then per axis its
// offsets and its values, tuple after tuple.
inline std::vector<std::int64_t> flatten_values(const Space& space) {
  const std::size_t naxes = space.axes.size();
  std::vector<std::int64_t> flat(3 * naxes);
  for (std::size_t a = 0; a < naxes; ++a) {
    const Space::Axis& ax = space.axes[a];
    flat[3 * a] = ax.width();
    flat[3 * a + 1] = ax.length();
    flat[3 * a + 2] = static_cast<std::int64_t>(flat.size());
    flat.insert(flat.end(), ax.offsets.begin(), ax.offsets.end());
    flat.insert(flat.end(), ax.values.begin(), ax.values.end());
  }
  return flat;
}

// `data`: flatten_values(space), where the backend's code can read it.
template <class Config>
inline SpaceView<Config> make_view(const Space& space, const std::int64_t* data, int pareto = 0) {
  SpaceView<Config> v{};
  std::memcpy(&v.base, space.base.data(), sizeof(Config));
  v.naxes = static_cast<std::int32_t>(space.axes.size());
  v.pareto = pareto;
  v.group_stride = 1;
  for (std::size_t a = static_cast<std::size_t>(space.group_axes); a < space.axes.size(); ++a)
    v.group_stride *= space.axes[a].length();
  v.data = data;
  return v;
}

// Folds one chunk's per-group winners into the running summary (host side, few groups).
inline void merge(SweepSummary& sum, const std::vector<Keyed>& winners) {
  for (const Keyed& k : winners) {
    if (k.latency == INT64_MAX) continue;
    GroupBest& b = sum.best[static_cast<std::size_t>(k.group)];
    if (b.index < 0 || k.latency < b.latency_ps || (k.latency == b.latency_ps && k.index < b.index)) b = GroupBest{k.latency, k.index};
  }
}

// Each group's best config in a chunk by one reduce_by_key over the group keys (groups are
// contiguous in index order). The buffers hold the most groups a chunk can touch.
template <class Sys>
struct BestByKey {
  typename Sys::template vec<std::int64_t> groups_out;
  typename Sys::template vec<Keyed> best_out;

  BestByKey(std::int64_t cap, std::int64_t group_stride)
      : groups_out(static_cast<std::size_t>(cap / group_stride + 2)), best_out(groups_out.size()) {}

  template <class Policy, class It>
  std::vector<Keyed> operator()(const Policy& pol, It keyed, std::int64_t len) {
    auto keys = thrust::make_transform_iterator(keyed, GroupOf{});
    auto ends = thrust::reduce_by_key(pol, keys, keys + len, keyed, groups_out.begin(), best_out.begin(),
                                      thrust::equal_to<std::int64_t>{}, BetterOf{});
    std::vector<Keyed> winners(static_cast<std::size_t>(ends.second - best_out.begin()));
    if (!winners.empty())
      thrust::copy(best_out.begin(), best_out.begin() + static_cast<std::ptrdiff_t>(winners.size()), winners.begin());
    return winners;
  }
};

// --- optional reductions, one chunk at a time ------------------------------------------
// Each keeps a small running result on the host; per chunk the device filters the configs
// that could still enter it, sorts the few survivors and hands back at most a few hundred.

struct FasterThan {  // valid and ahead of (latency, index) in the ranking
  std::int64_t latency, index;
  KB_HD bool operator()(const Keyed& k) const {
    return k.latency != INT64_MAX && (k.latency < latency || (k.latency == latency && k.index < index));
  }
};

struct ByLatency {
  KB_HD bool operator()(const Keyed& a, const Keyed& b) const {
    return a.latency != b.latency ? a.latency < b.latency : a.index < b.index;
  }
};

struct ByGroupCost {
  KB_HD bool operator()(const Keyed& a, const Keyed& b) const {
    if (a.group != b.group) return a.group < b.group;
    if (a.cost != b.cost) return a.cost < b.cost;
    return a.latency != b.latency ? a.latency < b.latency : a.index < b.index;
  }
};

struct SameGroupCost {
  KB_HD bool operator()(const Keyed& a, const Keyed& b) const { return a.group == b.group && a.cost == b.cost; }
};

// Of configs sorted by (group, cost, ...), the first of each (group, cost): a stencil over
// indices that never reads before the range (thrust::unique's head flags do, in Thrust 1.17).
struct FirstOfRun {
  const Keyed* p;
  KB_HD bool operator()(std::int64_t i) const { return i == 0 || !SameGroupCost{}(p[i - 1], p[i]); }
};

// Valid and not beaten by a point of group `group`'s running front (sorted by cost, latency
// strictly falling): the front point with the largest cost <= k.cost has the lowest latency
// of all points that cost no more. Configs of other groups pass; the sort does the rest.
struct NotBeaten {
  const ParetoPoint* front;
  std::int64_t size, group;
  KB_HD bool operator()(const Keyed& k) const {
    if (k.latency == INT64_MAX || k.cost == kBeaten) return false;
    if (k.group != group) return true;
    std::int64_t lo = 0, hi = size;  // first point with cost > k.cost
    while (lo < hi) {
      const std::int64_t mid = (lo + hi) / 2;
      if (front[mid].cost <= k.cost) lo = mid + 1;
      else hi = mid;
    }
    if (lo == 0) return true;
    const ParetoPoint& f = front[lo - 1];
    if (f.latency_ps != k.latency) return f.latency_ps > k.latency;
    return f.cost == k.cost && f.index > k.index;
  }
};

struct BinOf {
  KB_HD std::int32_t operator()(const Keyed& k) const {
    return k.latency == INT64_MAX ? kHistBins : hist_bin(k.latency);
  }
};

inline bool pareto_order(const ParetoPoint& a, const ParetoPoint& b) {
  if (a.group != b.group) return a.group < b.group;
  if (a.cost != b.cost) return a.cost < b.cost;
  return a.latency_ps != b.latency_ps ? a.latency_ps < b.latency_ps : a.index < b.index;
}

// Merges a chunk's candidates (in pareto_order, groups >= g0, the chunk's first group) into
// the running fronts, one per group. Chunks come in index order, so the fronts of groups
// before g0 are final and only the tail from g0 on is touched (host side).
inline void merge_front(std::vector<ParetoPoint>& front, const std::vector<ParetoPoint>& more, std::int64_t g0) {
  const auto tail = std::lower_bound(front.begin(), front.end(), g0,
                                     [](const ParetoPoint& p, std::int64_t g) { return p.group < g; });
  std::vector<ParetoPoint> merged;
  merged.reserve(static_cast<std::size_t>(front.end() - tail) + more.size());
  std::merge(tail, front.end(), more.begin(), more.end(), std::back_inserter(merged), pareto_order);
  front.erase(tail, front.end());
  for (const ParetoPoint& p : merged)
    if (front.empty() || p.group != front.back().group || p.latency_ps < front.back().latency_ps) front.push_back(p);
}

template <class Sys>
struct Extras {
  Reductions red;
  typename Sys::template vec<Keyed> pick;
  typename Sys::template vec<ParetoPoint> front_dev;
  typename Sys::template vec<std::int32_t> bins, bin_keys;
  typename Sys::template vec<std::int64_t> bin_counts;

  // own_histogram: the histogram is counted here (else the evaluation counts it).
  Extras(const Reductions& r, std::int64_t cap, bool own_histogram) : red(r) {
    if (red.top_k > 0 || red.pareto != 0) pick.resize(static_cast<std::size_t>(cap));
    if (red.histogram && own_histogram) {
      bins.resize(static_cast<std::size_t>(cap));
      bin_keys.resize(static_cast<std::size_t>(kHistBins) + 1);
      bin_counts.resize(static_cast<std::size_t>(kHistBins) + 1);
    }
  }

  // One chunk: `len` keyed configs from `keyed`, whose first group is g0.
  template <class Policy, class It>
  // histogram_done: the chunk's latencies are already in sum.histogram.
  // known: some of the chunk's configs (the OpenMP blocks' fastest), or none: the k-th
  // fastest of them bounds the chunk's k-th, so only configs up to it can enter the top k.
  void chunk(const Policy& pol, It keyed, std::int64_t len, std::int64_t g0, SweepSummary& sum, bool histogram_done,
             std::vector<Keyed> known) {
    if (red.top_k > 0) {
      const std::size_t k = static_cast<std::size_t>(red.top_k);
      FasterThan cut = sum.top.size() < k ? FasterThan{INT64_MAX, 0}
                                          : FasterThan{sum.top.back().latency_ps, sum.top.back().index};
      known.erase(std::remove_if(known.begin(), known.end(), [](const Keyed& x) { return x.latency == INT64_MAX; }),
                  known.end());
      if (known.size() >= k) {
        std::nth_element(known.begin(), known.begin() + static_cast<std::ptrdiff_t>(k - 1), known.end(), ByLatency{});
        const Keyed& kth = known[k - 1];
        if (kth.latency < cut.latency || (kth.latency == cut.latency && kth.index < cut.index))
          cut = FasterThan{kth.latency, kth.index + 1};  // the k-th itself stays in
      }
      const auto pk = pick.begin();
      const std::int64_t n = thrust::copy_if(pol, keyed, keyed + len, pk, cut) - pk;
      thrust::sort(pol, pk, pk + n, ByLatency{});
      std::vector<Keyed> best(std::min<std::size_t>(k, static_cast<std::size_t>(n)));
      if (!best.empty()) thrust::copy(pk, pk + static_cast<std::ptrdiff_t>(best.size()), best.begin());
      for (const Keyed& b : best) sum.top.push_back(Ranked{b.latency, b.index});
      std::sort(sum.top.begin(), sum.top.end(), [](const Ranked& a, const Ranked& b) {
        return a.latency_ps != b.latency_ps ? a.latency_ps < b.latency_ps : a.index < b.index;
      });
      if (sum.top.size() > k) sum.top.resize(k);
    }
    if (red.histogram && !histogram_done) {
      if (sum.histogram.empty()) sum.histogram.assign(static_cast<std::size_t>(kHistBins), 0);
      thrust::transform(pol, keyed, keyed + len, bins.begin(), BinOf{});
      thrust::sort(pol, bins.begin(), bins.begin() + len);
      const auto ends = thrust::reduce_by_key(pol, bins.begin(), bins.begin() + len,
                                              thrust::constant_iterator<std::int64_t>(1), bin_keys.begin(),
                                              bin_counts.begin());
      const std::size_t used = static_cast<std::size_t>(ends.first - bin_keys.begin());
      std::vector<std::int32_t> keys(used);
      std::vector<std::int64_t> counts(used);
      if (used > 0) {
        thrust::copy(bin_keys.begin(), bin_keys.begin() + static_cast<std::ptrdiff_t>(used), keys.begin());
        thrust::copy(bin_counts.begin(), bin_counts.begin() + static_cast<std::ptrdiff_t>(used), counts.begin());
      }
      for (std::size_t i = 0; i < used; ++i)
        if (keys[i] < kHistBins) sum.histogram[static_cast<std::size_t>(keys[i])] += counts[i];
    }
    if (red.pareto != 0) {
      // Group g0 may already have a front from earlier chunks: filter its configs by it.
      const auto tail = std::lower_bound(sum.pareto.begin(), sum.pareto.end(), g0,
                                         [](const ParetoPoint& p, std::int64_t g) { return p.group < g; });
      front_dev.resize(static_cast<std::size_t>(sum.pareto.end() - tail));
      if (tail != sum.pareto.end()) thrust::copy(tail, sum.pareto.end(), front_dev.begin());
      const NotBeaten keep{thrust::raw_pointer_cast(front_dev.data()), static_cast<std::int64_t>(front_dev.size()), g0};
      const auto pk = pick.begin();
      const std::int64_t n = thrust::copy_if(pol, keyed, keyed + len, pk, keep) - pk;
      thrust::sort(pol, pk, pk + n, ByGroupCost{});
      // The first of each (group, cost) run, written over the chunk's keyed configs: the
      // Pareto step is their last reader.
      thrust::counting_iterator<std::int64_t> idx(0);
      const std::int64_t m =
          thrust::copy_if(pol, pk, pk + n, idx, keyed, FirstOfRun{thrust::raw_pointer_cast(pick.data())}) - keyed;
      std::vector<Keyed> cand(static_cast<std::size_t>(m));
      if (m > 0) thrust::copy(keyed, keyed + m, cand.begin());
      std::vector<ParetoPoint> more;
      more.reserve(cand.size());
      for (const Keyed& c : cand) more.push_back(ParetoPoint{c.group, c.cost, c.latency, c.index});
      merge_front(sum.pareto, more, g0);
    }
  }
};

// A chunk's latencies into red.latencies (when asked for), before any reduction reorders
// the keyed configs.
template <class It>
void copy_latencies(It keyed, std::int64_t len, std::int64_t start, const Reductions& red) {
  if (!red.latencies) return;
  std::vector<Keyed> host(static_cast<std::size_t>(len));
  thrust::copy(keyed, keyed + len, host.begin());
  std::int64_t* out = red.latencies + (start - red.begin);
  for (std::int64_t i = 0; i < len; ++i) {
    const std::int64_t l = host[static_cast<std::size_t>(i)].latency;
    out[i] = l == INT64_MAX ? -1 : l;
  }
}

// The chunk loop of a sweep: configs generated from flat indices and evaluated, tallied,
// reduced to each group's best by `best_of(keyed, start, len)` (the backend's choice), and
// fed to the optional reductions. `data`: flatten_values(space), readable by the system.
template <class Sys, class Model, class Policy, class BestOf>
SweepSummary sweep_chunks(const Policy& pol, const Space& space, const std::int64_t* data, const Reductions& red,
                          std::int64_t chunk, BestOf&& best_of) {
  constexpr int N = Model::kStatuses;
  static_assert(N <= kMaxStatuses, "too many statuses");
  const SpaceView<typename Model::Config> view = make_view<typename Model::Config>(space, data, red.pareto);
  SweepSummary sum;
  sum.best.assign(static_cast<std::size_t>(space.groups()), GroupBest{});
  sum.by_status.assign(static_cast<std::size_t>(N), 0);
  const std::int64_t total = red.end < 0 ? space.size() : red.end;
  const std::int64_t cap = std::max<std::int64_t>(1, std::min(chunk, total - red.begin));
  typename Sys::template vec<Keyed> keyed_store(static_cast<std::size_t>(cap));
  const auto keyed = keyed_store.begin();
  Extras<Sys> extras(red, cap, Sys::kEvalBlock == 1);
  typename Sys::template vec<std::int64_t> deferred_at;  // two stages: the deferred positions of a chunk
  // A third stage (two_stage.h) evaluates on the host: the space's values there too.
  std::vector<std::int64_t> flat_host;
  SpaceView<typename Model::Config> host_view = view;
  if constexpr (Sys::kEvalBlock == 1 && HasHost<Model>::value) {
    flat_host = flatten_values(space);
    host_view = make_view<typename Model::Config>(space, flat_host.data(), red.pareto);
  }
  for (std::int64_t start = red.begin; start < total; start += chunk) {
    const std::int64_t len = std::min(chunk, total - start);
    bool histogram_done = false;
    std::vector<Keyed> fastest;  // OpenMP: each block's fastest config
    if constexpr (Sys::kEvalBlock > 1) {  // one pass: evaluation, tally, winners, histogram
      const std::int64_t blocks = (len + Sys::kEvalBlock - 1) / Sys::kEvalBlock;
      std::vector<std::int64_t> by_status(kMaxStatuses, 0), hist(red.histogram ? kHistBins : 0, 0);
      std::uint64_t checksum = 0;
      const bool winners = view.group_stride >= Sys::kEvalBlock;  // at most two groups per block
      std::vector<Keyed> firsts(winners ? static_cast<std::size_t>(blocks) : 0), lasts(firsts.size());
      fastest.resize(static_cast<std::size_t>(blocks));
      const BlockSums sums{by_status.data(), &checksum, red.histogram ? hist.data() : nullptr,
                           winners ? firsts.data() : nullptr, winners ? lasts.data() : nullptr, fastest.data()};
      thrust::counting_iterator<std::int64_t> items(0);
      thrust::for_each(pol, items, items + blocks,
                       EvalBlock<Model, N>{view, start, len, Sys::kEvalBlock, blocks, scatter_stride(blocks),
                                           thrust::raw_pointer_cast(&*keyed), sums});
      copy_latencies(keyed, len, start, red);
      Tally<N> t{};
      for (int x = 0; x < N; ++x) t.by_status[x] = by_status[static_cast<std::size_t>(x)];
      t.checksum = checksum;
      add_tally(sum, t);
      if (winners) {
        merge(sum, firsts);
        merge(sum, lasts);
      } else {
        merge(sum, best_of(keyed, start, len));
      }
      if (red.histogram) {
        if (sum.histogram.empty()) sum.histogram.assign(static_cast<std::size_t>(kHistBins), 0);
        for (std::size_t x = 0; x < hist.size(); ++x) sum.histogram[x] += hist[x];
        histogram_done = true;
      }
    } else {
      const Stages n = eval_indices<Sys, Model>(pol, start, len, thrust::raw_pointer_cast(keyed_store.data()),
                                                EvalIndexSmall<Model>{view}, EvalIndex<Model>{view},
                                                EvalIndexHost<Model>{host_view}, deferred_at);
      sum.deferred += n.deferred, sum.on_host += n.on_host;
      Sys::check();
      copy_latencies(keyed, len, start, red);
      add_tally(sum, thrust::transform_reduce(pol, keyed, keyed + len, TallyOf<N>{}, Tally<N>{},
                                              AddTally<N>{}));
      merge(sum, best_of(keyed, start, len));
    }
    extras.chunk(pol, keyed, len, start / view.group_stride, sum, histogram_done, fastest);
    Sys::check();
    sum.evaluated += len;
    if (red.progress) red.progress(sum.evaluated);
  }
  return sum;
}

}  // namespace kb::batched::detail
