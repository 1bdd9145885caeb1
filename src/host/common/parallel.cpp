#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace kb {

void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, n));
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::vector<std::exception_ptr> failed(n);
  // Indices are handed out in increasing order, so when a call throws every lower index has
  // been handed out and runs to its end: no index after it need start.
  auto work = [&] {
    for (std::size_t i = next++; i < n && !stop; i = next++) {
      try {
        fn(i);
      } catch (...) {
        failed[i] = std::current_exception();
        stop = true;
      }
    }
  };
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace kb
