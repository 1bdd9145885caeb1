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
  static void check() {}
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
  BestByKey<OmpSys> best(std::min(chunk, space.size()), space.size() / space.groups());
  return sweep_chunks<OmpSys>(thrust::omp::par, space, flat.data(), red, chunk,
                              [&](auto keyed, std::int64_t, std::int64_t len) { return best(thrust::omp::par, keyed, len); });
}

}  // namespace kb::batched

namespace kb::batched {

GemmSpaceDecoder::GemmSpaceDecoder(const GemmSpace& space) : space_(space), flat_(detail::flatten_values(space)) {}

GemmConfig GemmSpaceDecoder::operator()(std::int64_t i) const {
  return detail::decode(detail::make_view(space_, flat_.data()), i);
}

void gemm_space_set(GemmConfig& c, GemmAxis a, std::int64_t v) { detail::set_field(c, static_cast<std::int32_t>(a), v); }

}  // namespace kb::batched
