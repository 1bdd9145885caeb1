#include <gtest/gtest.h>

#include "host/bench/registry.h"
#include "host/common/error.h"
#include "host/families/family.h"

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
BenchInfo test_bench(const char* name) {
  BenchInfo b;
  b.name = name;
  b.description = "d";
  b.domain = "test";
  b.fn = noop;
  return b;
}

TEST(Registry, DuplicateAndMalformedNamesAreRecorded) {
  const std::size_t before = bench_registry_errors().size();
  EXPECT_TRUE(register_bench(test_bench("test-only-bench")));
  EXPECT_FALSE(register_bench(test_bench("test-only-bench")));
  EXPECT_FALSE(register_bench(test_bench("Bad_Name")));
  ASSERT_EQ(bench_registry_errors().size(), before + 2);
  EXPECT_EQ(bench_registry_errors()[before], "bench 'test-only-bench' is registered twice");
  ASSERT_NE(find_bench("test-only-bench"), nullptr);
}

}  // namespace
}  // namespace kb


namespace kb {
namespace {

// Every family's descriptor agrees with its model (checked when the list is built), and
// every status has a name and a message of its own.
TEST(Families, DescriptorsAgreeWithTheirModels) {
  ASSERT_FALSE(families().empty());
  for (const Family* f : families()) {
    EXPECT_EQ(static_cast<int>(f->statuses.size()), batched::status_count(f->id)) << f->name;
    std::vector<unsigned char> cfg(f->config_size(), 0);
    for (std::int32_t s = 1; s < static_cast<std::int32_t>(f->statuses.size()); ++s) {
      const std::string m = f->status_message(s, cfg.data());
      EXPECT_EQ(m.find("unknown"), std::string::npos) << f->name << " status " << s << ": " << m;
      EXPECT_FALSE(m.empty());
    }
  }
  EXPECT_EQ(family("gemm").statuses.back(), "bad_split");
  EXPECT_THROW(family("nope"), InputError);
}

}  // namespace
}  // namespace kb
