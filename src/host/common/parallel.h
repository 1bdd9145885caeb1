// Independent host-side work spread over the machine's cores: the reference engine's runs of
// a study's points, each on its own config and result slot.
#pragma once

#include <cstddef>
#include <functional>

namespace kb {

// Calls fn(i) for every i in [0, n), on up to `threads` threads (0: one per core), each
// index at most once. If a call throws, no further index starts, every index below it runs
// to its end, and the exception of the lowest index that threw is rethrown: the one a loop
// in order would have raised.
void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn, unsigned threads = 0);

}  // namespace kb
