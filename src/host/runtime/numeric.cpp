#include "numeric.h"

#include <cmath>
#include <cstring>

namespace kb {

const char* to_string(DType t) {
  switch (t) {
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::fp8: return "fp8";
  }
  return "?";
}

namespace {

// IEEE binary16: 10 fraction bits, exponents -14..15; subnormals below 2^-14.
float round_f16(float x) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  const float ax = std::fabs(x);
  if (ax >= 65520.0f) return std::copysign(INFINITY, x);  // rounds past the largest finite (65504)
  int e;
  std::frexp(ax, &e);  // ax = f * 2^e, f in [0.5, 1)
  const int exp = e - 1 < -14 ? -14 : e - 1;  // unbiased exponent of the binade, clamped for subnormals
  const float quantum = std::ldexp(1.0f, exp - 10);
  return std::copysign(std::nearbyint(ax / quantum) * quantum, x);  // default rounding: ties to even
}

// OCP fp8 e4m3: 3 fraction bits, exponents -6..8, subnormals below 2^-6; it has no
// infinity, so a value past the largest finite (448) saturates to it (the usual conversion
// of weights and KV caches).
float round_fp8(float x) {
  if (!std::isfinite(x) || x == 0.0f) return x;
  const float ax = std::fabs(x);
  if (ax >= 448.0f) return std::copysign(448.0f, x);
  int e;
  std::frexp(ax, &e);
  const int exp = e - 1 < -6 ? -6 : e - 1;
  const float quantum = std::ldexp(1.0f, exp - 3);
  return std::copysign(std::fmin(std::nearbyint(ax / quantum) * quantum, 448.0f), x);
}

float round_bf16(float x) {
  if (!std::isfinite(x)) return x;
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

}  // namespace

float round_to(DType t, float x) {
  switch (t) {
    case DType::f16: return round_f16(x);
    case DType::bf16: return round_bf16(x);
    case DType::f32: return x;
    case DType::fp8: return round_fp8(x);
  }
  return x;
}

float uniform_pm1(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t z = splitmix64_mix(seed * 0x9E3779B97F4A7C15ULL + index + 0x632BE59BD9B4E019ULL);
  return static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

}  // namespace kb
