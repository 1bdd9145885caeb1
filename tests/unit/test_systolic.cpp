#include <gtest/gtest.h>

#include "device/common/units.h"
#include "device/models/systolic.h"

namespace kb {
namespace {

// Hand-computed: folds = ceil(Sr/R) * ceil(Sc/C), each T + R + C - 2 cycles for os and
// 2R + C + T - 2 for ws and is (SCALE-Sim v2, which reports one cycle less per GEMM).
TEST(Systolic, OutputStationaryExactFit) {
  // 32x32 array, m=n=32, k=128: one fold of 128 + 32 + 32 - 2 = 190.
  EXPECT_EQ(systolic_cycles(32, 32, 128, 32, 32, Dataflow::os), 190);
  // m=64, n=96: 2 x 3 folds.
  EXPECT_EQ(systolic_cycles(64, 96, 128, 32, 32, Dataflow::os), 6 * 190);
}

// SCALE-Sim v2's compute cycles for single-GEMM runs on a 32 x 32 array (scale-sim-v2,
// COMPUTE_REPORT.csv), one more here as SCALE-Sim v2 counts from cycle 0.
TEST(Systolic, AgreesWithScaleSimV2) {
  EXPECT_EQ(systolic_cycles(128, 64, 256, 32, 32, Dataflow::os), 2543 + 1);
  EXPECT_EQ(systolic_cycles(128, 64, 256, 32, 32, Dataflow::ws), 3551 + 1);
}

TEST(Systolic, ShapesThatDoNotDivideTheArray) {
  // os on 32x32, m=33 (2 folds), n=1 (1 fold), k=10: 2 * (10 + 32 + 32 - 2) = 144.
  EXPECT_EQ(systolic_cycles(33, 1, 10, 32, 32, Dataflow::os), 144);
  // ws: Sr = k = 100 -> 4 folds on 32 rows, Sc = n = 40 -> 2 folds, T = m = 7: 8 * (64 + 32 + 7 - 2).
  EXPECT_EQ(systolic_cycles(7, 40, 100, 32, 32, Dataflow::ws), 8 * 101);
}

TEST(Systolic, RectangularArrayAndEachDataflow) {
  // 16 rows x 64 cols; m=50, n=70, k=90.
  // os: Sr=m=50 -> 4, Sc=n=70 -> 2, T=90: 8 * (90 + 16 + 64 - 2) = 1344
  EXPECT_EQ(systolic_cycles(50, 70, 90, 16, 64, Dataflow::os), 1344);
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
