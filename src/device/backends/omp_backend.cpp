// OpenMP backend: the generic Thrust code on thrust::omp, built by the host compiler.
#include <omp.h>
#include <thrust/reduce.h>
#include <thrust/system/omp/execution_policy.h>
#include <thrust/system/omp/vector.h>
#include <thrust/transform_reduce.h>

#include "gemm_eval.inl"

namespace kb::batched {

namespace {
struct ThreadScope {
  int saved;
  explicit ThreadScope(int threads) : saved(omp_get_max_threads()) {
    if (threads > 0) omp_set_num_threads(threads);
  }
  ~ThreadScope() { omp_set_num_threads(saved); }
};
struct OmpSys {
  template <class T>
  using vec = thrust::omp::vector<T>;
};
}  // namespace

void eval_gemm_omp(const GemmConfig* configs, std::size_t n, GemmResult* out, int threads) {
  ThreadScope scope(threads);
  thrust::transform(thrust::omp::par, configs, configs + n, out, detail::EvalOne{});
}

GemmSweepSummary sweep_gemm_omp(const GemmSpace& space, const GemmReductions& red, std::int64_t chunk, int threads) {
  using namespace detail;
  ThreadScope scope(threads);
  const std::vector<std::int64_t> flat = flatten_values(space);
  const SpaceView view = make_view(space, flat.data(), red.pareto);
  GemmSweepSummary sum;
  sum.best.assign(static_cast<std::size_t>(space.groups()), GroupBest{});
  const std::int64_t total = space.size();
  thrust::omp::vector<Keyed> keyed(static_cast<std::size_t>(std::min(chunk, total)));
  // A chunk spans at most cap / stride + 2 groups.
  const std::size_t max_groups = keyed.size() / static_cast<std::size_t>(view.group_stride) + 2;
  thrust::omp::vector<std::int64_t> groups_out(max_groups);
  thrust::omp::vector<Keyed> best_out(max_groups);
  Extras<OmpSys> extras(red, static_cast<std::int64_t>(keyed.size()));
  for (std::int64_t start = 0; start < total; start += chunk) {
    const std::int64_t len = std::min(chunk, total - start);
    thrust::counting_iterator<std::int64_t> first(start);
    thrust::transform(thrust::omp::par, first, first + len, keyed.begin(), EvalIndex{view});
    add_tally(sum, thrust::transform_reduce(thrust::omp::par, keyed.begin(), keyed.begin() + len, TallyOf{}, Tally{}, AddTally{}));
    // Groups are contiguous in index order, so one reduce_by_key finds each group's best.
    auto keys = thrust::make_transform_iterator(keyed.begin(), GroupOf{});
    auto ends = thrust::reduce_by_key(thrust::omp::par, keys, keys + len, keyed.begin(), groups_out.begin(),
                                      best_out.begin(), thrust::equal_to<std::int64_t>{}, BetterOf{});
    const std::size_t ngroups = static_cast<std::size_t>(ends.second - best_out.begin());
    std::vector<Keyed> winners(ngroups);
    thrust::copy(best_out.begin(), best_out.begin() + static_cast<std::ptrdiff_t>(ngroups), winners.begin());
    merge(sum, winners);
    extras.chunk(thrust::omp::par, keyed.begin(), len, start / view.group_stride, sum);
    sum.evaluated += len;
    if (red.progress) red.progress(sum.evaluated);
  }
  return sum;
}

}  // namespace kb::batched

namespace kb::batched {

GemmSpaceDecoder::GemmSpaceDecoder(const GemmSpace& space) : space_(space), flat_(detail::flatten_values(space)) {}

GemmConfig GemmSpaceDecoder::operator()(std::int64_t i) const {
  return detail::decode(detail::make_view(space_, flat_.data()), i);
}

void gemm_space_set(GemmConfig& c, GemmAxis a, std::int64_t v) { detail::set_field(c, static_cast<std::int32_t>(a), v); }

}  // namespace kb::batched
