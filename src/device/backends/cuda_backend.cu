// CUDA backend: the generic Thrust code on thrust::cuda; CUB directly for the per-group
// arg-min, where a segmented reduction over known offsets beats reduce_by_key.
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system/cuda/vector.h>
#include <thrust/transform_reduce.h>

#include <cub/device/device_segmented_reduce.cuh>
#include <stdexcept>
#include <string>

#include "gemm_eval.inl"

#define KB_CUDA_CALL(expr)                                                                              \
  do {                                                                                                  \
    const cudaError_t kb_err = (expr);                                                                  \
    if (kb_err != cudaSuccess)                                                                          \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #expr ": " + \
                               cudaGetErrorString(kb_err));                                             \
  } while (0)

namespace kb::batched {

bool cuda_built() { return true; }

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device is present";
  return n;
}

void eval_gemm_cuda(const GemmConfig* configs, std::size_t n, GemmResult* out) {
  thrust::cuda::vector<GemmConfig> in(configs, configs + n);
  thrust::cuda::vector<GemmResult> res(n);
  thrust::transform(thrust::cuda::par, in.begin(), in.end(), res.begin(), detail::EvalOne{});
  KB_CUDA_CALL(cudaGetLastError());
  thrust::copy(res.begin(), res.end(), out);
}

namespace {

// Latency with invalid configs last; ties keep the lowest index because CUB's ArgMin
// returns the first minimum of a segment.
struct LatencyOf {
  __host__ __device__ std::int64_t operator()(const detail::Keyed& k) const { return k.latency; }
};

struct CudaSys {
  template <class T>
  using vec = thrust::cuda::vector<T>;
  static auto policy() { return thrust::cuda::par; }
};

struct SegmentOffset {
  std::int64_t start, stride, len;
  __host__ __device__ std::int64_t operator()(std::int64_t g) const {
    // Offset of group boundary g inside the chunk [start, start+len).
    const std::int64_t first_group = start / stride;
    const std::int64_t pos = (first_group + g) * stride - start;
    return pos < 0 ? 0 : (pos > len ? len : pos);
  }
};

}  // namespace

GemmSweepSummary sweep_gemm_cuda(const GemmSpace& space, const GemmReductions& red, std::int64_t chunk) {
  using namespace detail;
  const std::vector<std::int64_t> flat_host = flatten_values(space);
  thrust::cuda::vector<std::int64_t> flat(flat_host.begin(), flat_host.end());
  const SpaceView view = make_view(space, thrust::raw_pointer_cast(flat.data()), red.pareto);
  GemmSweepSummary sum;
  sum.best.assign(static_cast<std::size_t>(space.groups()), GroupBest{});
  const std::int64_t total = space.size();
  const std::int64_t cap = std::min(chunk, total);
  thrust::cuda::vector<Keyed> keyed(static_cast<std::size_t>(cap));
  thrust::cuda::vector<std::int64_t> latency(static_cast<std::size_t>(cap));
  const std::int64_t max_segments = cap / view.group_stride + 2;
  thrust::cuda::vector<std::int64_t> offsets(static_cast<std::size_t>(max_segments + 1));
  using Pair = cub::KeyValuePair<int, std::int64_t>;
  thrust::cuda::vector<Pair> argmin(static_cast<std::size_t>(max_segments));
  thrust::cuda::vector<unsigned char> temp;
  Extras<CudaSys> extras(red, cap, space.groups());

  for (std::int64_t start = 0; start < total; start += chunk) {
    const std::int64_t len = std::min(chunk, total - start);
    thrust::counting_iterator<std::int64_t> first(start);
    thrust::transform(thrust::cuda::par, first, first + len, keyed.begin(), EvalIndex{view});
    KB_CUDA_CALL(cudaGetLastError());
    const auto counted = thrust::transform_reduce(thrust::cuda::par, keyed.begin(), keyed.begin() + len,
                                                  ValidLatency{}, thrust::make_tuple(std::int64_t{0}, std::uint64_t{0}),
                                                  AddPair{});
    sum.valid += thrust::get<0>(counted);
    sum.latency_checksum = static_cast<std::int64_t>(static_cast<std::uint64_t>(sum.latency_checksum) + thrust::get<1>(counted));
    thrust::transform(thrust::cuda::par, keyed.begin(), keyed.begin() + len, latency.begin(), LatencyOf{});

    const std::int64_t g0 = start / view.group_stride, g1 = (start + len - 1) / view.group_stride;
    const int segments = static_cast<int>(g1 - g0 + 1);
    thrust::counting_iterator<std::int64_t> gi(0);
    thrust::transform(thrust::cuda::par, gi, gi + segments + 1, offsets.begin(),
                      SegmentOffset{start, view.group_stride, len});
    std::size_t temp_bytes = 0;
    const std::int64_t* off = thrust::raw_pointer_cast(offsets.data());
    KB_CUDA_CALL(cub::DeviceSegmentedReduce::ArgMin(nullptr, temp_bytes, thrust::raw_pointer_cast(latency.data()),
                                                    thrust::raw_pointer_cast(argmin.data()), segments, off, off + 1));
    if (temp.size() < temp_bytes) temp.resize(temp_bytes);
    KB_CUDA_CALL(cub::DeviceSegmentedReduce::ArgMin(thrust::raw_pointer_cast(temp.data()), temp_bytes,
                                                    thrust::raw_pointer_cast(latency.data()),
                                                    thrust::raw_pointer_cast(argmin.data()), segments, off, off + 1));
    KB_CUDA_CALL(cudaDeviceSynchronize());
    std::vector<Pair> host(static_cast<std::size_t>(segments));
    thrust::copy(argmin.begin(), argmin.begin() + segments, host.begin());
    std::vector<std::int64_t> host_off(static_cast<std::size_t>(segments + 1));
    thrust::copy(offsets.begin(), offsets.begin() + segments + 1, host_off.begin());
    std::vector<Keyed> winners;
    for (int s = 0; s < segments; ++s) {
      if (host_off[static_cast<std::size_t>(s)] == host_off[static_cast<std::size_t>(s) + 1]) continue;
      // CUB reports the position inside the segment.
      const std::int64_t idx = start + host_off[static_cast<std::size_t>(s)] + host[static_cast<std::size_t>(s)].key;
      winners.push_back(Keyed{g0 + s, host[static_cast<std::size_t>(s)].value, idx});
    }
    merge(sum, winners);
    extras.chunk(keyed.begin(), len, sum);
    KB_CUDA_CALL(cudaGetLastError());
    sum.evaluated += len;
  }
  return sum;
}

}  // namespace kb::batched
