#include <gtest/gtest.h>

#include "device/common/units.h"
#include "device/models/systolic.h"

namespace kb {
namespace {

// Hand-computed: folds = ceil(Sr/R) * ceil(Sc/C), each 2R + C + T - 2 cycles.
TEST(Systolic, OutputStationaryExactFit) {
  // 32x32 array, m=n=32, k=128: one fold of 64 + 32 + 128 - 2 = 222.
  EXPECT_EQ(systolic_cycles(32, 32, 128, 32, 32, Dataflow::os), 222);
  // m=64, n=96: 2 x 3 folds.
  EXPECT_EQ(systolic_cycles(64, 96, 128, 32, 32, Dataflow::os), 6 * 222);
}

TEST(Systolic, ShapesThatDoNotDivideTheArray) {
  // os on 32x32, m=33 (2 folds), n=1 (1 fold), k=10: 2 * (64 + 32 + 10 - 2) = 208.
  EXPECT_EQ(systolic_cycles(33, 1, 10, 32, 32, Dataflow::os), 208);
  // ws: Sr = k = 100 -> 4 folds on 32 rows, Sc = n = 40 -> 2 folds, T = m = 7: 8 * (64 + 32 + 7 - 2).
  EXPECT_EQ(systolic_cycles(7, 40, 100, 32, 32, Dataflow::ws), 8 * 101);
}

TEST(Systolic, RectangularArrayAndEachDataflow) {
  // 16 rows x 64 cols; m=50, n=70, k=90.
  // os: Sr=m=50 -> 4, Sc=n=70 -> 2, T=90: 8 * (32 + 64 + 90 - 2) = 1472
  EXPECT_EQ(systolic_cycles(50, 70, 90, 16, 64, Dataflow::os), 1472);
  // ws: Sr=k=90 -> 6, Sc=n=70 -> 2, T=m=50: 12 * (32 + 64 + 50 - 2) = 1728
  EXPECT_EQ(systolic_cycles(50, 70, 90, 16, 64, Dataflow::ws), 1728);
  // is: Sr=k=90 -> 6, Sc=m=50 -> 1, T=n=70: 6 * (32 + 64 + 70 - 2) = 984
  EXPECT_EQ(systolic_cycles(50, 70, 90, 16, 64, Dataflow::is), 984);
}

TEST(Units, IntegerHelpers) {
  EXPECT_EQ(transfer_ps(1, 1), 1000);        // 1 byte at 1 GB/s is 1 ns
  EXPECT_EQ(transfer_ps(1000, 3), 333334);   // rounded up
  EXPECT_EQ(cycles_ps(3, 1500), 2000);       // 3 cycles at 1.5 GHz
  EXPECT_EQ(cycles_ps(1, 1500), 667);
  EXPECT_EQ(shared_transfer_ps(800, 200, 819, 8), 7815);  // HBM share 102.375 GB/s is the limit
  EXPECT_EQ(shared_transfer_ps(800, 100, 819, 1), 8000);  // DMA is the limit
}

}  // namespace
}  // namespace kb
