#include <gtest/gtest.h>

#include "host/bench/registry.h"

namespace kb {
namespace {

TEST(Registry, BenchNamesAreKebabCase) {
  EXPECT_TRUE(valid_bench_name("milestone-1h-gemm"));
  EXPECT_TRUE(valid_bench_name("a"));
  EXPECT_FALSE(valid_bench_name("1h-gemm"));
  EXPECT_FALSE(valid_bench_name("Gemm"));
  EXPECT_FALSE(valid_bench_name("gemm_sweep"));
  EXPECT_FALSE(valid_bench_name("gemm-"));
  EXPECT_FALSE(valid_bench_name("gemm--x"));
  EXPECT_FALSE(valid_bench_name(""));
}

void noop(BenchContext&) {}

TEST(Registry, DuplicateAndMalformedNamesAreRecorded) {
  const std::size_t before = bench_registry_errors().size();
  EXPECT_TRUE(register_bench({"test-only-bench", "d", {"x"}, "test", noop}));
  EXPECT_FALSE(register_bench({"test-only-bench", "d", {"x"}, "test", noop}));
  EXPECT_FALSE(register_bench({"Bad_Name", "d", {}, "test", noop}));
  ASSERT_EQ(bench_registry_errors().size(), before + 2);
  EXPECT_EQ(bench_registry_errors()[before], "bench 'test-only-bench' is registered twice");
  ASSERT_NE(find_bench("test-only-bench"), nullptr);
}

}  // namespace
}  // namespace kb
