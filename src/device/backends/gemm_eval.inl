// Backend-generic evaluation, written once against Thrust and instantiated per system
// (thrust::omp in omp_backend.cpp, thrust::cuda in cuda_backend.cu). Include after
// defining the execution policy and vector types.
#pragma once

#include <thrust/copy.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

#include "backends.h"

namespace kb::batched::detail {

// Device-copyable view of a GemmSpace.
struct SpaceView {
  GemmConfig base;
  std::int32_t naxes;
  std::int32_t field[kMaxAxes];
  std::int64_t len[kMaxAxes];
  std::int64_t offset[kMaxAxes];  // into the flattened value array
  const std::int64_t* values;
  std::int64_t group_stride;  // product of the lengths of the non-group axes
};

KB_HD inline void set_field(GemmConfig& c, std::int32_t f, std::int64_t v) {
  switch (static_cast<GemmAxis>(f)) {
    case GemmAxis::m: c.m = v; break;
    case GemmAxis::n: c.n = v; break;
    case GemmAxis::k: c.k = v; break;
    case GemmAxis::tile_m: c.tile_m = v; break;
    case GemmAxis::tile_n: c.tile_n = v; break;
    case GemmAxis::tile_k: c.tile_k = v; break;
    case GemmAxis::pes: c.pes = v; break;
    case GemmAxis::cubes: c.cubes = v; break;
    case GemmAxis::buffers: c.buffers = v; break;
    case GemmAxis::dataflow: c.dataflow = static_cast<std::int32_t>(v); break;
    case GemmAxis::array_rows: c.array_rows = v; break;
    case GemmAxis::array_cols: c.array_cols = v; break;
    default: break;
  }
}

KB_HD inline GemmConfig decode(const SpaceView& s, std::int64_t i) {
  GemmConfig c = s.base;
  for (std::int32_t a = s.naxes - 1; a >= 0; --a) {
    const std::int64_t d = i % s.len[a];
    i /= s.len[a];
    set_field(c, s.field[a], s.values[s.offset[a] + d]);
  }
  return c;
}

struct EvalOne {
  KB_HD GemmResult operator()(const GemmConfig& c) const { return gemm_model(c); }
};

// Per config of a chunk: its group and a sortable key (latency, index), invalid last.
struct Keyed {
  std::int64_t group;
  std::int64_t latency;  // INT64_MAX when invalid
  std::int64_t index;
};

struct EvalIndex {
  SpaceView s;
  KB_HD Keyed operator()(std::int64_t i) const {
    const GemmResult r = gemm_model(decode(s, i));
    return Keyed{i / s.group_stride, r.status == kGemmOk ? r.latency_ps : INT64_MAX, i};
  }
};

struct BetterOf {
  KB_HD Keyed operator()(const Keyed& a, const Keyed& b) const {
    if (a.latency != b.latency) return a.latency < b.latency ? a : b;
    return a.index < b.index ? a : b;
  }
};

struct GroupOf {
  KB_HD std::int64_t operator()(const Keyed& k) const { return k.group; }
};

struct ValidLatency {
  KB_HD thrust::tuple<std::int64_t, std::uint64_t> operator()(const Keyed& k) const {
    return k.latency == INT64_MAX ? thrust::make_tuple(std::int64_t{0}, std::uint64_t{0})
                                  : thrust::make_tuple(std::int64_t{1}, static_cast<std::uint64_t>(k.latency));
  }
};

struct AddPair {
  KB_HD thrust::tuple<std::int64_t, std::uint64_t> operator()(const thrust::tuple<std::int64_t, std::uint64_t>& a,
                                                              const thrust::tuple<std::int64_t, std::uint64_t>& b) const {
    return thrust::make_tuple(thrust::get<0>(a) + thrust::get<0>(b), thrust::get<1>(a) + thrust::get<1>(b));
  }
};

inline SpaceView make_view(const GemmSpace& space, const std::int64_t* device_values) {
  SpaceView v{};
  v.base = space.base;
  v.naxes = static_cast<std::int32_t>(space.axes.size());
  std::int64_t off = 0, stride = 1;
  for (std::size_t a = 0; a < space.axes.size(); ++a) {
    v.field[a] = static_cast<std::int32_t>(space.axes[a]);
    v.len[a] = static_cast<std::int64_t>(space.values[a].size());
    v.offset[a] = off;
    off += v.len[a];
    if (static_cast<int>(a) >= space.group_axes) stride *= v.len[a];
  }
  v.values = device_values;
  v.group_stride = stride;
  return v;
}

inline std::vector<std::int64_t> flatten_values(const GemmSpace& space) {
  std::vector<std::int64_t> flat;
  for (const auto& vals : space.values) flat.insert(flat.end(), vals.begin(), vals.end());
  return flat;
}

// Folds one chunk's per-group winners into the running summary (host side, few groups).
inline void merge(GemmSweepSummary& sum, const std::vector<Keyed>& winners) {
  for (const Keyed& k : winners) {
    if (k.latency == INT64_MAX) continue;
    GroupBest& b = sum.best[static_cast<std::size_t>(k.group)];
    if (b.index < 0 || k.latency < b.latency_ps || (k.latency == b.latency_ps && k.index < b.index)) b = GroupBest{k.latency, k.index};
  }
}

}  // namespace kb::batched::detail
