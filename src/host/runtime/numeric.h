// Element types of tensors and the rounding they imply. Values are held as float and
// rounded to the tensor's type whenever they are written (data mode).
#pragma once

#include <cstdint>
#include <string>

namespace kb {

// fp8: OCP e4m3 (4 exponent bits, bias 7, 3 fraction bits, largest finite 448).
enum class DType : std::int32_t { f16 = 0, bf16, f32, fp8 };

inline std::int64_t dtype_bytes(DType t) { return t == DType::f32 ? 4 : t == DType::fp8 ? 1 : 2; }
const char* to_string(DType t);
// Nearest representable value of type t (round to nearest, ties to even).
float round_to(DType t, float x);

// splitmix64's finalizer (Steele, Lea and Flood 2014).
inline std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

// A seeded splitmix64 stream.
struct SplitMix64 {
  std::uint64_t x;
  std::uint64_t next() { return splitmix64_mix(x += UINT64_C(0x9E3779B97F4A7C15)); }
  double unit() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }  // in (0, 1]
  // Uniform in [0, n), without the modulo's bias.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t cut = (0 - n) % n;  // 2^64 mod n: draws below it are redrawn
    for (;;) {
      const std::uint64_t r = next();
      if (r >= cut) return r % n;
    }
  }
};

// Deterministic uniform values in [-1, 1) from a seed and an index (splitmix64).
float uniform_pm1(std::uint64_t seed, std::uint64_t index);

}  // namespace kb
