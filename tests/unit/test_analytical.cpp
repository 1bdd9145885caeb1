// The alpha-beta-gamma model of allreduce against hand-computed values.
#include <gtest/gtest.h>

#include "host/analytical/collectives.h"
#include "host/common/error.h"

namespace kb::analytical {
namespace {

// a = 1000 ps per step, b = 10 ps per byte (100 GB/s), c = 1 ps per byte.
const StepCosts k{1000.0, 10.0, 1.0};

TEST(Analytical, AllreduceFormulas) {
  // ring, p = 8, n = 8000: 2*7*1000 + 2*(7/8)*8000*10 + (7/8)*8000*1 = 14000 + 140000 + 7000
  EXPECT_EQ(allreduce_ps(AllreduceAlgo::ring, 8, 8000, k), 161000);
  // hd, p = 8: 2*3*1000 + 140000 + 7000
  EXPECT_EQ(allreduce_ps(AllreduceAlgo::hd, 8, 8000, k), 153000);
  // tree, p = 6: lg = 3; 2*3*(1000 + 80000) + 3*8000
  EXPECT_EQ(allreduce_ps(AllreduceAlgo::tree, 6, 8000, k), 510000);
  // ring, p = 3, n = 1: 2*2*1000 + 2*(2/3)*10 + (2/3) = 4013.99... -> 4014
  EXPECT_EQ(allreduce_ps(AllreduceAlgo::ring, 3, 1, k), 4014);
  EXPECT_THROW(allreduce_ps(AllreduceAlgo::hd, 6, 8000, k), InputError);
  EXPECT_THROW(allreduce_ps(AllreduceAlgo::ring, 1, 8000, k), InputError);
  EXPECT_THROW(allreduce_ps(AllreduceAlgo::ring, 4, 0, k), InputError);
}

// nccl-tests: algbw = size / time, busbw = algbw * 2(n-1)/n.
TEST(Analytical, Bandwidths) {
  EXPECT_DOUBLE_EQ(algbw_gbps(1000000, 10000000), 100.0);  // 1 MB in 10 us
  EXPECT_DOUBLE_EQ(allreduce_busbw_gbps(1000000, 10000000, 8), 175.0);
  EXPECT_DOUBLE_EQ(algbw_gbps(1, 0), 0.0);
}

}  // namespace
}  // namespace kb::analytical
