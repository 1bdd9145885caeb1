// A per-thread memo of kernel evaluations, for models that compose other families' models
// (whole-model inference, docs/model.md section 13.5). A sweep over mappings and shapes
// evaluates the same kernel config many times: the GEMMs of a layer do not depend on the
// allreduce's algorithm or the attention's case, the allreduce not on the context, the
// attention not on the algorithm. Each model is a pure function of its config, so a result
// kept under its exact config (every byte compared, not a hash alone) is the result
// evaluating it again would give: bit-identical output, whatever the order, the thread
// count or what the memo held before. On the host (OpenMP) a thread keeps a few recent
// configs per model; a CUDA thread evaluates every time (no per-thread state to keep).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kb_hd.h"

namespace kb {

namespace memo_detail {

// A direct-mapped table of `Slots` entries, one per thread and model.
template <class Config, class Result, int Slots>
struct Table {
  Config config[Slots];
  Result result[Slots];
  bool used[Slots] = {};
};

inline std::uint64_t hash_bytes(const void* p, std::size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  std::uint64_t h = 0x9E3779B97F4A7C15ULL;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, b + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ b[i]) * 0x94D049BB133111EBULL;
  return h ^ (h >> 32);
}

template <class Config, class Result, int Slots, class Eval>
Result host_memo(const Config& c, const Eval& eval) {
  // Equal bytes must mean equal configs, and equal configs equal bytes (no padding).
  static_assert(std::has_unique_object_representations_v<Config>, "a memoised config must have no padding");
  static thread_local Table<Config, Result, Slots> t;
  const int slot = static_cast<int>(hash_bytes(&c, sizeof(Config)) % Slots);
  if (t.used[slot] && std::memcmp(&t.config[slot], &c, sizeof(Config)) == 0) return t.result[slot];
  const Result r = eval(c);
  t.config[slot] = c, t.result[slot] = r, t.used[slot] = true;
  return r;
}

}  // namespace memo_detail

// eval(c), or what it gave for the same config before on this thread.
template <class Config, class Result, int Slots = 64, class Eval>
KB_HD Result memo_eval(const Config& c, const Eval& eval) {
#if defined(__CUDA_ARCH__) || defined(KB_NO_KERNEL_MEMO)  // the latter: to measure without it
  return eval(c);
#else
  return memo_detail::host_memo<Config, Result, Slots>(c, eval);
#endif
}

}  // namespace kb
