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
#include <utility>
#ifndef __CUDA_ARCH__
#include <atomic>
#include <mutex>
#include <unordered_map>
#endif

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

// Whether a config starts with a machine of its own (`hw`, a HwConfig: every family's).
template <class Config, class = void>
struct HasHw : std::false_type {};
template <class Config>
struct HasHw<Config, std::void_t<decltype(std::declval<const Config&>().hw)>> : std::true_type {};

// A config's hash. Most of a kernel's config is its machine (336 of a GEMM's 424 bytes), and
// the kernels a thread meets in a row run on one machine: its hash is kept for the last
// machine the thread hashed, so that only the rest is hashed again. Any hash finds the same
// entries (a hit compares every byte), so this changes speed only.
template <class Config>
std::uint64_t config_hash(const Config& c) {
  if constexpr (HasHw<Config>::value) {
    using Hw = std::remove_cv_t<std::remove_reference_t<decltype(c.hw)>>;
    const auto* base = reinterpret_cast<const unsigned char*>(&c);
    if (reinterpret_cast<const unsigned char*>(&c.hw) == base && sizeof(Config) > sizeof(Hw)) {
      static thread_local Hw last;
      static thread_local std::uint64_t last_hash = 0;
      static thread_local bool have = false;
      if (!have || std::memcmp(&last, &c.hw, sizeof(Hw)) != 0) {
        std::memcpy(&last, &c.hw, sizeof(Hw));
        last_hash = hash_bytes(&c.hw, sizeof(Hw)), have = true;
      }
      return hash_bytes(base + sizeof(Hw), sizeof(Config) - sizeof(Hw)) ^ (last_hash * 0x9E3779B97F4A7C15ULL);
    }
  }
  return hash_bytes(&c, sizeof(Config));
}

template <class Config, class Result, int Slots, class Eval>
Result host_memo(const Config& c, const Eval& eval) {
  // Equal bytes must mean equal configs, and equal configs equal bytes (no padding).
  static_assert(std::has_unique_object_representations_v<Config>, "a memoised config must have no padding");
  static thread_local Table<Config, Result, Slots> t;
  const int slot = static_cast<int>(config_hash(c) % Slots);
  if (t.used[slot] && std::memcmp(&t.config[slot], &c, sizeof(Config)) == 0) return t.result[slot];
  const Result r = eval(c);
  t.config[slot] = c, t.result[slot] = r, t.used[slot] = true;
  return r;
}

#ifndef __CUDA_ARCH__
// Bumped to empty every Shared table (forget_shared_memos).
inline std::atomic<std::uint64_t>& shared_generation() {
  static std::atomic<std::uint64_t> g{0};
  return g;
}

// Every thread's results of one kind, in one table of the process (shards, each under its
// own lock; a shard that reaches its bound starts again empty). eval runs outside the
// locks: two threads may both evaluate a config, and they get the same result.
template <class Config, class Result>
class Shared {
 public:
  template <class Eval>
  Result get(const Config& c, const Eval& eval) {
    static_assert(std::has_unique_object_representations_v<Config>, "a memoised config must have no padding");
    Key k{c};
    Shard& s = shards_[config_hash(c) % kShards];
    const std::uint64_t generation = shared_generation().load();
    {
      const std::lock_guard<std::mutex> lock(s.m);
      if (s.generation != generation) s.map.clear(), s.generation = generation;
      const auto it = s.map.find(k);
      if (it != s.map.end()) return it->second;
    }
    const Result r = eval(c);
    const std::lock_guard<std::mutex> lock(s.m);
    if (s.map.size() >= kBound / kShards) s.map.clear();
    s.map.emplace(k, r);
    return r;
  }

 private:
  struct Key {
    Config c;
    bool operator==(const Key& o) const { return std::memcmp(&c, &o.c, sizeof(Config)) == 0; }
  };
  struct Hash {
    std::size_t operator()(const Key& k) const { return static_cast<std::size_t>(config_hash(k.c)); }
  };
  struct Shard {
    std::mutex m;
    std::unordered_map<Key, Result, Hash> map;
    std::uint64_t generation = 0;
  };
  static constexpr std::size_t kShards = 16, kBound = std::size_t(1) << 18;
  Shard shards_[kShards];
};

// The process's table of one kind, behind this thread's recent ones.
template <class Config, class Result, class Eval>
Result host_shared_memo(const Config& c, const Eval& eval) {
  static Shared<Config, Result> shared;  // the process's, by design
  return host_memo<Config, Result, 64>(c, [&](const Config& x) { return shared.get(x, eval); });
}
#endif

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

#ifndef __CUDA_ARCH__
// Empties the process's shared memos (a benchmark's cold start; results never depend on it).
inline void forget_shared_memos() { ++memo_detail::shared_generation(); }
#endif

// eval(c), or what it gave for the same config before on any thread of the process: for a
// costly evaluation that many threads meet (a kernel's tuning, gemm_tune.h). A host thread
// looks in its own recent ones first; a CUDA thread evaluates every time.
template <class Config, class Result, class Eval>
KB_HD Result shared_memo_eval(const Config& c, const Eval& eval) {
#if defined(__CUDA_ARCH__) || defined(KB_NO_KERNEL_MEMO)
  return eval(c);
#else
  return memo_detail::host_shared_memo<Config, Result>(c, eval);
#endif
}

}  // namespace kb
