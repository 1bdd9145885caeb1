// Whether this process is sampling a space to estimate a sweep's time (host code). While it
// is, host caches that a sweep amortises over many configs (the allreduce model's recorded
// levels, allreduce_replay.h) take nothing new: what a small sample pays to fill them is paid
// once per structure in a sweep, and would make the estimate many times the sweep's time.
#pragma once

#include <atomic>

namespace kb {

inline std::atomic<bool>& host_sampling() {
  static std::atomic<bool> on{false};
  return on;
}

// Sets host_sampling() for its lifetime.
struct HostSampling {
  HostSampling() { host_sampling().store(true, std::memory_order_relaxed); }
  ~HostSampling() { host_sampling().store(false, std::memory_order_relaxed); }
  HostSampling(const HostSampling&) = delete;
  HostSampling& operator=(const HostSampling&) = delete;
};

}  // namespace kb
