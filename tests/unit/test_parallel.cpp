// parallel_for: every index once, and on failure the error a loop in order would raise.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/common/parallel.h"

namespace kb {
namespace {

TEST(Parallel, EveryIndexRunsOnce) {
  for (unsigned threads : {0u, 1u, 2u, 7u}) {
    std::vector<std::atomic<int>> hits(1000);
    parallel_for(hits.size(), [&](std::size_t i) { ++hits[i]; }, threads);
    for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << i << " threads " << threads;
  }
  parallel_for(0, [](std::size_t) { FAIL() << "no index to run"; });
}

TEST(Parallel, RaisesTheLowestFailingIndexAfterEveryLowerOneRan) {
  for (unsigned threads : {1u, 2u, 4u}) {
    std::vector<std::atomic<int>> hits(500);
    try {
      parallel_for(hits.size(), [&](std::size_t i) {
        ++hits[i];
        if (i == 123 || i == 124 || i == 400) throw std::runtime_error("point " + std::to_string(i));
      }, threads);
      FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "point 123") << threads;
    }
    for (std::size_t i = 0; i <= 123; ++i) ASSERT_EQ(hits[i].load(), 1) << i;
    if (threads == 1) {
      EXPECT_EQ(hits[124].load(), 0);  // in order: nothing after the first failure
    }
  }
}

}  // namespace
}  // namespace kb
