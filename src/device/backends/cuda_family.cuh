// CUDA backend, one family's part: the generic Thrust code on thrust::cuda; CUB directly for
// the per-group arg-min when a chunk holds many groups, where a segmented reduction over
// known offsets (one block per group) beats reduce_by_key. Thrust's temporary storage comes
// from a cache, so a chunk allocates nothing once the first has run. Included by one
// generated unit per family (KB_CUDA_FAMILY_UNIT); the dispatch is cuda_backend.cu.
#pragma once

#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system/cuda/vector.h>
#include <thrust/transform_reduce.h>

#include <thrust/system/cuda/error.h>
#include <thrust/system_error.h>

#include <cub/device/device_segmented_reduce.cuh>
#include <new>
#include <map>
#include <stdexcept>
#include <string>

#include "family_units.h"
#include "../sweep/reduce.inl"

// A failed CUDA call: the machine's problem (no memory, no driver or device) is an
// EnvironmentError that says so; anything else is a bug.
[[noreturn]] inline void kb_cuda_fail(cudaError_t err, const char* file, int line, const char* expr) {
  switch (err) {
    case cudaErrorMemoryAllocation:
      throw kb::batched::DeviceUnavailable(std::string("the CUDA device ran out of memory (") + expr + ": " +
                                 cudaGetErrorString(err) + "); use --backend omp or a smaller --chunk");
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInitializationError:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorDevicesUnavailable:
    case cudaErrorCompatNotSupportedOnDevice:
      throw kb::batched::DeviceUnavailable(std::string("the CUDA driver or device is not usable (") + cudaGetErrorString(err) +
                                 "); use --backend omp");
    default:
      throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expr + ": " +
                               cudaGetErrorString(err));
  }
}

#define KB_CUDA_CALL(expr)                                                   \
  do {                                                                       \
    const cudaError_t kb_err = (expr);                                       \
    if (kb_err != cudaSuccess) kb_cuda_fail(kb_err, __FILE__, __LINE__, #expr); \
  } while (0)

namespace kb::batched {

namespace cuda_detail {

// Latency with invalid configs last; ties keep the lowest index because CUB's ArgMin
// returns the first minimum of a segment.
struct LatencyOf {
  __host__ __device__ std::int64_t operator()(const detail::Keyed& k) const { return k.latency; }
};

struct CudaSys {
  template <class T>
  using vec = thrust::cuda::vector<T>;
  static void check() { KB_CUDA_CALL(cudaGetLastError()); }
  static constexpr std::int64_t kEvalBlock = 1;  // one config per GPU thread
  static constexpr bool kOnDevice = true;        // the host reads its memory by copies (two_stage.h)
};

// Offset of group boundary g inside the chunk [start, start+len).
struct SegmentOffset {
  std::int64_t start, stride, len;
  __host__ __device__ std::int64_t operator()(std::int64_t g) const {
    const std::int64_t first_group = start / stride;
    const std::int64_t pos = (first_group + g) * stride - start;
    return pos < 0 ? 0 : (pos > len ? len : pos);
  }
};

// Temporary storage for Thrust algorithms (thrust::cuda::par(alloc)): blocks are kept and
// reused, since each cudaMalloc/cudaFree pair would synchronise the device.
class CachedAllocator {
 public:
  using value_type = char;
  CachedAllocator() = default;
  CachedAllocator(const CachedAllocator&) = delete;
  CachedAllocator& operator=(const CachedAllocator&) = delete;
  ~CachedAllocator() {
    for (auto& f : free_) cudaFree(f.second);
    for (auto& u : used_) cudaFree(u.first);
  }
  char* allocate(std::ptrdiff_t n) {
    char* p = nullptr;
    std::ptrdiff_t size = n;
    auto it = free_.lower_bound(n);  // the smallest free block that fits
    if (it != free_.end()) {
      size = it->first;
      p = it->second;
      free_.erase(it);
    } else {
      KB_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&p), static_cast<std::size_t>(n > 0 ? n : 1)));
    }
    used_.emplace(p, size);
    return p;
  }
  void deallocate(char* p, std::size_t) {
    auto it = used_.find(p);
    if (it == used_.end()) return;
    free_.emplace(it->second, p);
    used_.erase(it);
  }

 private:
  std::multimap<std::ptrdiff_t, char*> free_;
  std::map<char*, std::ptrdiff_t> used_;
};

// Below this many groups in a chunk, reduce_by_key (all SMs on every group) is used;
// from it on, CUB's segmented arg-min (a block per group).
constexpr int kSegmentedMinGroups = 256;
// Device memory a chunk config needs: keyed, picked and latency copies, a bin, sort scratch,
// and for a two-stage family its position where it is deferred (two_stage.h).
constexpr std::int64_t kBytesPerChunkConfig = 168;

template <class Model>
void eval_impl(const void* configs, std::size_t n, void* results) {
  using Config = typename Model::Config;
  using Result = typename Model::Result;
  const auto* c = static_cast<const Config*>(configs);
  thrust::cuda::vector<Config> in(c, c + n);
  thrust::cuda::vector<Result> res(n);
  // Two stages where the family offers a small state (two_stage.h): local memory is sized by
  // the largest frame of a kernel, so the large state runs only for the configs that need it.
  detail::eval_configs<CudaSys, Model>(thrust::cuda::par, thrust::raw_pointer_cast(in.data()), static_cast<std::int64_t>(n),
                                       thrust::raw_pointer_cast(res.data()), detail::EvalOne<Model>{});
  KB_CUDA_CALL(cudaGetLastError());
  thrust::copy(res.begin(), res.end(), static_cast<Result*>(results));
}

template <class Model>
SweepSummary sweep_impl(const Space& space, const Reductions& red, std::int64_t chunk) {
  using namespace detail;
  CachedAllocator alloc;
  const auto pol = thrust::cuda::par(alloc);
  const std::vector<std::int64_t> flat_host = flatten_values(space);
  thrust::cuda::vector<std::int64_t> flat(flat_host.begin(), flat_host.end());
  // Results do not depend on the chunk size, so a chunk is kept to half the free memory.
  std::size_t free_bytes = 0, total_bytes = 0;
  KB_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
  chunk = std::max<std::int64_t>(1, std::min<std::int64_t>(chunk, static_cast<std::int64_t>(free_bytes / 2) / kBytesPerChunkConfig));
  const std::int64_t cap = std::min(chunk, space.size()), stride = space.size() / space.groups();
  const std::int64_t max_segments = cap / stride + 2;
  BestByKey<CudaSys> by_key(cap, stride);
  thrust::cuda::vector<std::int64_t> latency(static_cast<std::size_t>(cap));
  thrust::cuda::vector<std::int64_t> offsets(static_cast<std::size_t>(max_segments + 1));
  using Pair = cub::KeyValuePair<int, std::int64_t>;
  thrust::cuda::vector<Pair> argmin(static_cast<std::size_t>(max_segments));
  thrust::cuda::vector<unsigned char> temp;

  auto best_of = [&](auto keyed, std::int64_t start, std::int64_t len) {
    const std::int64_t g0 = start / stride, g1 = (start + len - 1) / stride;
    const int segments = static_cast<int>(g1 - g0 + 1);
    if (segments < kSegmentedMinGroups) return by_key(pol, keyed, len);
    thrust::transform(pol, keyed, keyed + len, latency.begin(), LatencyOf{});
    thrust::counting_iterator<std::int64_t> gi(0);
    thrust::transform(pol, gi, gi + segments + 1, offsets.begin(), SegmentOffset{start, stride, len});
    std::size_t temp_bytes = 0;
    const std::int64_t* off = thrust::raw_pointer_cast(offsets.data());
    KB_CUDA_CALL(cub::DeviceSegmentedReduce::ArgMin(nullptr, temp_bytes, thrust::raw_pointer_cast(latency.data()),
                                                    thrust::raw_pointer_cast(argmin.data()), segments, off, off + 1));
    if (temp.size() < temp_bytes) temp.resize(temp_bytes);
    KB_CUDA_CALL(cub::DeviceSegmentedReduce::ArgMin(thrust::raw_pointer_cast(temp.data()), temp_bytes,
                                                    thrust::raw_pointer_cast(latency.data()),
                                                    thrust::raw_pointer_cast(argmin.data()), segments, off, off + 1));
    KB_CUDA_CALL(cudaGetLastError());
    std::vector<Pair> host(static_cast<std::size_t>(segments));
    thrust::copy(argmin.begin(), argmin.begin() + segments, host.begin());
    std::vector<std::int64_t> host_off(static_cast<std::size_t>(segments + 1));
    thrust::copy(offsets.begin(), offsets.begin() + segments + 1, host_off.begin());
    std::vector<Keyed> winners;
    for (int s = 0; s < segments; ++s) {
      const auto u = static_cast<std::size_t>(s);
      if (host_off[u] == host_off[u + 1]) continue;
      // CUB reports the position inside the segment.
      winners.push_back(Keyed{g0 + s, host[u].value, start + host_off[u] + host[u].key, 0});
    }
    return winners;
  };
  return sweep_chunks<CudaSys, Model>(pol, space, thrust::raw_pointer_cast(flat.data()), red, chunk, best_of);
}

// Thrust reports a failed allocation as std::bad_alloc and other CUDA failures as
// thrust::system_error: both are turned into the errors KB_CUDA_CALL raises.
template <class Fn>
auto guarded(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    kb_cuda_fail(cudaErrorMemoryAllocation, __FILE__, __LINE__, "a Thrust allocation");
  } catch (const thrust::system_error& e) {
    if (e.code().category() == thrust::cuda_category())
      kb_cuda_fail(static_cast<cudaError_t>(e.code().value()), __FILE__, __LINE__, e.what());
    throw;
  }
}

}  // namespace cuda_detail

template <class Model>
void eval_cuda_family(const void* configs, std::size_t n, void* results) {
  cuda_detail::guarded([&] { cuda_detail::eval_impl<Model>(configs, n, results); });
}

template <class Model>
SweepSummary sweep_cuda_family(const Space& space, const Reductions& red, std::int64_t chunk) {
  return cuda_detail::guarded([&] { return cuda_detail::sweep_impl<Model>(space, red, chunk); });
}

}  // namespace kb::batched

// The body of a generated per-family unit.
#define KB_CUDA_FAMILY_UNIT(Model)                                                                     \
  template void kb::batched::eval_cuda_family<Model>(const void*, std::size_t, void*);               \
  template kb::batched::SweepSummary kb::batched::sweep_cuda_family<Model>(                          \
      const kb::batched::Space&, const kb::batched::Reductions&, std::int64_t);
