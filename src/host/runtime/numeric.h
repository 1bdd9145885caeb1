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

// Deterministic uniform values in [-1, 1) from a seed and an index (splitmix64).
float uniform_pm1(std::uint64_t seed, std::uint64_t index);

}  // namespace kb
