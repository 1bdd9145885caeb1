// Integer time and size helpers shared by both engines. All simulated time is int64
// picoseconds; nothing here touches floating point, so results are bit-identical on
// every backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kb_hd.h"

namespace kb {

using ps_t = std::int64_t;

constexpr std::int64_t kPsPerNs = 1000;
// A finite result never exceeds this; anything larger is treated as overflow. It leaves
// a factor of four of headroom below INT64_MAX for sums of already-checked terms.
constexpr std::int64_t kTimeLimitPs = INT64_C(2305843009213693952);  // 2^61
// A result's status where a model's small evaluation state cannot hold the config: the config
// is evaluated again with the full state (docs/adr/0023-two-stage-evaluation.md). Never a
// status a user sees.
constexpr std::int32_t kStatusDeferred = -1;

// a / b, through a 32-bit division when both fit one (several times cheaper than a 64-bit
// one on CPUs, and native rather than emulated on GPUs); the same quotient either way.
KB_HD constexpr std::int64_t div_fast(std::int64_t a, std::int64_t b) {
  return ((a | b) >> 32) == 0 ? static_cast<std::int64_t>(static_cast<std::uint32_t>(a) / static_cast<std::uint32_t>(b))
                              : a / b;
}
KB_HD constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return div_fast(a + b - 1, b); }
KB_HD constexpr std::int64_t imax(std::int64_t a, std::int64_t b) { return a > b ? a : b; }
KB_HD constexpr std::int64_t imin(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
// ceil(log2(x)) for x >= 1 (0 for x <= 1): the bit length of x - 1.
KB_HD constexpr std::int64_t ceil_log2(std::int64_t x) {
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
  return x <= 1 ? 0 : 64 - __builtin_clzll(static_cast<unsigned long long>(x - 1));
#else
  std::int64_t n = 0;
  while ((INT64_C(1) << n) < x) ++n;
  return n;
#endif
}

// Time to move `bytes` at `gbps` gigabytes per second (10^9 B/s): 1 byte at 1 GB/s is 1 ns.
KB_HD constexpr ps_t transfer_ps(std::int64_t bytes, std::int64_t gbps) {
  return ceil_div(bytes * kPsPerNs, gbps);
}

// Whether moving `bytes` at a share of `sharers` (at 1 GB/s or more) could take longer than
// int64 picoseconds can hold.
KB_HD constexpr bool transfer_overflows(std::int64_t bytes, std::int64_t sharers) {
  return bytes > kTimeLimitPs / (kPsPerNs * sharers);
}

// Time to move `bytes` through a port whose rate is min(port_gbps, shared_gbps / sharers):
// the slower of the two limits, computed without dividing the shared bandwidth.
KB_HD constexpr ps_t shared_transfer_ps(std::int64_t bytes, std::int64_t port_gbps,
                                        std::int64_t shared_gbps, std::int64_t sharers) {
  return imax(transfer_ps(bytes, port_gbps), ceil_div(bytes * kPsPerNs * sharers, shared_gbps));
}

// Duration of `cycles` clock cycles at `clock_mhz`, rounded up to a whole picosecond.
KB_HD constexpr ps_t cycles_ps(std::int64_t cycles, std::int64_t clock_mhz) {
  return ceil_div(cycles * INT64_C(1000000), clock_mhz);
}

// Sums and products of non-negative times and counts that stop at kTimeLimitPs instead of
// overflowing (bounds a model compares against the limit).
KB_HD constexpr std::int64_t sat_add(std::int64_t a, std::int64_t b) { return a >= kTimeLimitPs - b ? kTimeLimitPs : a + b; }
// Whether a·b > kTimeLimitPs, for a, b >= 0: the same as a > floor(kTimeLimitPs / b) for
// b >= 1, without the division where both factors are below 2^31 (their product fits),
// which is the common case in the models' sums.
KB_HD constexpr bool over_limit(std::int64_t a, std::int64_t b) {
  return ((a | b) >> 31) == 0 ? a * b > kTimeLimitPs : b != 0 && a > kTimeLimitPs / b;
}
KB_HD constexpr std::int64_t sat_mul(std::int64_t a, std::int64_t b) { return over_limit(a, b) ? kTimeLimitPs : a * b; }

// Zeroes a POD of int64 words one word at a time. GCC turns a brace-initialised struct of
// more than 128 bytes (and a plain zeroing loop, which it recognises) into `rep stos`, whose
// start-up cost showed in the models' profiles; kept a loop, it becomes vector stores.
template <class T>
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
__attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif
KB_HD inline void zero_words(T& t) {
  static_assert(sizeof(T) % 8 == 0, "a POD of int64 words");
  auto* p = reinterpret_cast<unsigned char*>(&t);
  const std::int64_t zero = 0;
  for (std::size_t i = 0; i < sizeof(T); i += 8) memcpy(p + i, &zero, 8);  // memcpy: no aliasing assumptions
}

// `total` items over `parts` in contiguous runs, part p getting [floor(p·total / parts),
// floor((p+1)·total / parts)) (cubes' blocks, PEs' tiles and PEs' split-K units alike),
// visited in order with the floor carried as a remainder: no division per part, and no
// product that could overflow.
struct Span {
  std::int64_t lo, hi;
};
struct EvenParts {
  std::int64_t per, left, parts;  // total = per·parts + left
  std::int64_t lo = 0, carry = 0;
  KB_HD EvenParts(std::int64_t total, std::int64_t parts_)
      : per(div_fast(total, parts_)), left(total - per * parts_), parts(parts_) {}
  // The next part, in order.
  KB_HD Span next() {
    carry += left;
    const bool longer = carry >= parts;
    if (longer) carry -= parts;
    const Span part{lo, lo + per + (longer ? 1 : 0)};
    lo = part.hi;
    return part;
  }
};

}  // namespace kb
