#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "topologies.h"
#include "host/common/error.h"
#include "host/families/gemm/gemm_program.h"
#include "host/topology/load.h"

namespace kb {
namespace {

using kb::unittest::tiny;

GemmConfig params(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t t, std::int64_t pes = 1,
                  std::int64_t cubes = 1, std::int64_t buffers = 1) {
  GemmConfig p = gemm_request();
  p.m = m, p.n = n, p.k = k;
  p.tile_m = p.tile_n = p.tile_k = t;
  p.pes = pes, p.cubes = cubes, p.buffers = buffers;
  return p;
}

// tiny: 1 GHz, 4x4 os array, DMA 8 GB/s, HBM 16 GB/s + 10 ns shared by the launch's PEs.
// One 4x4x4 step: A and B are 32 bytes each, 4000 ps at 8 GB/s; the matmul is one
// output-stationary fold of T + R + C - 2 = 4 + 4 + 4 - 2 = 10 cycles; C is 32 bytes.
//   load A [0, 4000] done 14000; load B [4000, 8000] done 18000;
//   matmul [18000, 28000]; store C [28000, 32000] done 42000.
TEST(GemmKernel, OneStepByHand) {
  const RunReport r = run_gemm_reference(tiny(), params(4, 4, 4, 4)).report;
  EXPECT_EQ(r.summary.latency_ps, 42000);
  EXPECT_EQ(r.summary.mac_cycles, 10);
  EXPECT_EQ(r.summary.macs, 64);
  EXPECT_EQ(r.summary.hbm_read_bytes, 64);
  EXPECT_EQ(r.summary.hbm_write_bytes, 32);
  EXPECT_EQ(r.summary.busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)], 12000);
}

// Two k-slices, single-buffered: the second loads wait for the first matmul.
//   A0 [0,4000] B0 [4000,8000] done 18000; mm0 [18000,28000];
//   A1 [28000,32000] B1 [32000,36000] done 46000; mm1 [46000,56000]; C [56000,60000] done 70000.
// Double-buffered: A1, B1 follow at once: [8000,16000] done 26000; mm1 [28000,38000];
//   C [38000,42000] done 52000.
TEST(GemmKernel, BufferingByHand) {
  EXPECT_EQ(run_gemm_reference(tiny(), params(4, 4, 8, 4, 1, 1, 1)).report.summary.latency_ps, 70000);
  EXPECT_EQ(run_gemm_reference(tiny(), params(4, 4, 8, 4, 1, 1, 2)).report.summary.latency_ps, 52000);
}

// Two PEs of a cube each take one tile; with two sharers the HBM share is 8 GB/s,
// equal to the DMA rate, so each PE's timeline is the one-step case.
TEST(GemmKernel, TwoPesShareHbm) {
  const RunReport r = run_gemm_reference(tiny(), params(8, 4, 4, 4, 2)).report;
  EXPECT_EQ(r.summary.latency_ps, 42000);
  EXPECT_EQ(r.summary.busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)], 24000);
}

TEST(GemmKernel, PartialEdgeTiles) {
  // 5x6x7 with 4-tiles: tiles of 4 and 1 rows, 4 and 2 columns, 4 and 3 k.
  const RunReport r = run_gemm_reference(tiny(), params(5, 6, 7, 4)).report;
  EXPECT_EQ(r.summary.macs, 5 * 6 * 7);
  EXPECT_EQ(r.summary.hbm_read_bytes, 2 * (2 * 5 * 7 + 2 * 6 * 7));  // A read per tile column, B per tile row
  EXPECT_EQ(r.summary.hbm_write_bytes, 2 * 5 * 6);
  EXPECT_EQ(r.summary.ops, 4 * (3 * 2 + 1));
}

TEST(GemmKernel, InvalidRequestsAreErrors) {
  const TopologySpec t = tiny();
  EXPECT_THROW(validate_gemm(t, params(0, 4, 4, 1)), InputError);
  EXPECT_THROW(validate_gemm(t, params(4, 4, 4, 8)), InputError);  // tile larger than the matrix
  EXPECT_THROW(validate_gemm(t, params(4, 4, 4, 4, 3)), InputError);  // tiny has 2 PEs per cube
  EXPECT_THROW(validate_gemm(t, params(4, 4, 4, 4, 1, 3)), InputError);
  EXPECT_THROW(validate_gemm(t, params(4, 4, 4, 4, 1, 1, 3)), InputError);
  try {
    validate_gemm(t, params(256, 256, 256, 128));  // 2 x (32+32) KiB + 64 KiB > 64 KiB SRAM
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bytes of SRAM; a PE has 65536"), std::string::npos) << e.what();
  }
  // Split-K adds partial-sum slots: 64x64 tiles fill the 64 KiB double-buffered, so two
  // 16 KiB slots do not fit (one tile of 4 k-slices over 2 PEs: one to send, one to receive).
  GemmConfig k = params(64, 64, 256, 64, 2, 1, 2);
  validate_gemm(t, k);
  k.split = kGemmSplitRowsK;
  try {
    validate_gemm(t, k);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("and 2 fp32 partial-sum slot(s) need 98304 bytes of SRAM; a PE has 65536"),
              std::string::npos)
        << e.what();
  }
}

// Data mode: the simulated kernel computes the product; compare with float64. Returns the
// run's op count.
std::int64_t check_numerics(const GemmConfig& p, std::uint64_t seed) {
  RuntimeContext ctx(tiny(), ContextOptions{true});
  const GemmTensors t = gemm_tensors(ctx, p, seed);
  ctx.launch("gemm", LaunchGrid{1, p.cubes, p.pes}, gemm_kernel, p, t);
  const RunReport r = ctx.run();
  EXPECT_EQ(r.status, engine::Status::ok) << r.message;
  if (r.status != engine::Status::ok) return 0;
  const auto& A = ctx.values(t.a);
  const auto& B = ctx.values(t.b);
  const auto& C = ctx.values(t.c);
  double worst = 0;
  for (std::int64_t i = 0; i < p.m; ++i)
    for (std::int64_t j = 0; j < p.n; ++j) {
      double ref = 0, mag = 0;
      for (std::int64_t q = 0; q < p.k; ++q) {
        const double x = A[static_cast<std::size_t>(i * p.k + q)], y = B[static_cast<std::size_t>(q * p.n + j)];
        ref += x * y;
        mag += std::fabs(x * y);
      }
      const double got = C[static_cast<std::size_t>(i * p.n + j)];
      // fp16 output rounding is at most half an ulp (2^-11 relative); fp32 accumulation
      // adds about k * 2^-24 of the magnitude.
      const double bound = std::ldexp(std::fabs(ref), -11) * 1.001 + p.k * std::ldexp(mag, -24) + 1e-7;
      EXPECT_LE(std::fabs(got - ref), bound) << "C[" << i << "," << j << "]";
      if (std::fabs(got - ref) > bound) return 0;
      worst = std::max(worst, std::fabs(got - ref) / std::max(1e-3, std::fabs(ref)));
    }
  EXPECT_LT(worst, 1e-3);
  return r.summary.ops;
}

TEST(GemmKernel, DataModeMatchesFloat64) {
  check_numerics(params(4, 4, 4, 4), 1);
  GemmConfig p = params(37, 29, 45, 8, 2, 2, 2);
  p.tile_k = 16;
  p.tile_n = 12;
  check_numerics(p, 2);
  check_numerics(params(13, 17, 19, 5, 1, 2, 1), 3);
}

// Split-K: the partial sums of a tile, copied to its owner and added there, make the product.
TEST(GemmKernel, SplitKDataModeMatchesFloat64) {
  for (std::int64_t split : {kGemmSplitRowsK, kGemmSplitColsK})
    for (std::int64_t buffers = 1; buffers <= 2; ++buffers) {
      // 3 x 3 tiles of 15 slices over 2 cubes of 2 PEs: cube 0's block has 3 tiles, so a
      // tile falls to both of its PEs.
      GemmConfig p = params(17, 14, 45, 8, 2, 2, buffers);
      p.tile_n = 5, p.tile_k = 3, p.split = split;
      const std::int64_t tiles = 3 * 3, kt = 15;
      EXPECT_GT(check_numerics(p, 4 + static_cast<std::uint64_t>(split)), tiles * (3 * kt + 1));  // partials were sent
      GemmConfig one = params(5, 6, 33, 6, 2, 1, buffers);  // one tile, its 11 slices on 2 PEs
      one.tile_k = 3, one.split = split;
      EXPECT_EQ(check_numerics(one, 9), 3 * 11 + 1 + 5);  // and one partial sum: 2 hops, signal, wait, add
    }
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// docs/model.md, section 8 (M = N = 8, K = 12, tiles 4 x 4 x 8: four tiles of two steps):
// 184 000 ps double-buffered; single-buffered the PE is serial (9.3), its busy times plus
// a latency per step and one more: 96 000 + 112 000 + 9 * 10 000 = 298 000 ps. The model's
// closed form and the reference engine's op-by-op run agree.
TEST(GemmModel, WorkedExampleBothBufferings) {
  for (const auto& [buffers, latency] : {std::pair<std::int64_t, std::int64_t>{2, 184000}, {1, 298000}}) {
    GemmConfig p = params(8, 8, 12, 4, 1, 1, buffers);
    p.tile_k = 8;
    const GemmResult r = gemm_model(gemm_config(tiny(), p));
    ASSERT_EQ(r.status, kGemmOk);
    EXPECT_EQ(r.latency_ps, latency) << "buffers " << buffers;
    EXPECT_EQ(r.matrix_busy_ps, 96000);
    EXPECT_EQ(r.dma_busy_ps, 112000);
    EXPECT_EQ(run_gemm_reference(tiny(), p).report.summary.latency_ps, latency) << "buffers " << buffers;
  }
}

// docs/model.md section 14.4: the same GEMM's counts and energy, by hand, on both engines.
TEST(GemmModel, WorkedExampleEnergy) {
  GemmConfig p = params(8, 8, 12, 4, 1, 1, 2);
  p.tile_k = 8;
  const GemmConfig c = gemm_config(tiny(), p);
  const GemmResult r = gemm_model(c);
  ASSERT_EQ(r.status, kGemmOk);
  EXPECT_EQ(r.sram_read_bytes, 768 + 256 + 256);
  EXPECT_EQ(r.sram_write_bytes, 768 + 512);
  EXPECT_EQ(r.vector_ops, 0);
  const Energy e = GemmModel::energy(c, r);
  ASSERT_EQ(e.status, kEnergyOk);
  EXPECT_EQ(e.matrix, 768 * 500);
  EXPECT_EQ(e.sram, 2 * 1280 * 1750);
  EXPECT_EQ(e.hbm, (768 + 128) * 31200);
  EXPECT_EQ(e.static_, INT64_C(1624) * 184000);
  EXPECT_EQ(e.total, 331635200);
  const GemmResult ref = gemm_reference(c);
  EXPECT_EQ(ref.sram_read_bytes, r.sram_read_bytes);
  EXPECT_EQ(ref.sram_write_bytes, r.sram_write_bytes);
  EXPECT_EQ(GemmModel::energy(c, ref).total, 331635200);
}

// An energy past int64 is a status, never a wrapped value.
TEST(GemmModel, EnergyPastInt64IsAnOverflow) {
  GemmConfig p = params(8, 8, 12, 4, 1, 1, 2);
  const GemmConfig base = gemm_config(tiny(), p);
  GemmConfig c = base;
  c.hw.pe_static_mw = c.hw.cube_static_mw = c.hw.sip_static_mw = 1000000000;  // 10^9 mW each
  c.hw.pe_rows = c.hw.pe_cols = 64;
  c.hw.cube_rows = c.hw.cube_cols = 16;  // 2^21 PEs' static power over the run passes 2^63 fJ
  const GemmResult r = gemm_model(c);
  ASSERT_EQ(r.status, kGemmOk);
  EXPECT_EQ(GemmModel::energy(c, r).status, kEnergyOverflow);
  EXPECT_EQ(GemmModel::energy(base, gemm_model(base)).status, kEnergyOk);
}

TEST(GemmModel, BadHardwareInABatchIsAStatus) {
  GemmConfig p = params(64, 64, 64, 32);
  GemmConfig c = gemm_config(tiny(), p);
  c.hw.matrix_rows = 0;
  EXPECT_EQ(gemm_model(c).status, kGemmBadHardware);
  c = gemm_config(tiny(), p);
  c.hw.dataflow = static_cast<Dataflow>(3);
  EXPECT_EQ(gemm_model(c).status, kGemmBadHardware);
}

// A 1x1 array at 100 GHz with huge tiles: one matmul alone overflows int64 picoseconds.
TEST(GemmModel, TimesThatWouldOverflowAreRefused) {
  TopologySpec t = tiny();
  t.matrix_rows = t.matrix_cols = 1;
  t.sram_kib = INT64_C(1) << 30;
  t.hbm_capacity_mib = INT64_C(1) << 30;
  t.clock_mhz = 100000;
  const GemmConfig big = params(262144, 262144, 262144, 262144);
  EXPECT_EQ(gemm_model(gemm_config(t, big)).status, kGemmTimeOverflow);
  EXPECT_THROW(validate_gemm(t, big), InputError);
  // Many small steps whose sum overflows.
  GemmConfig many = params(1 << 20, 1 << 20, 1 << 20, 1);
  const GemmResult r = gemm_model(gemm_config(t, many));
  EXPECT_EQ(r.status, kGemmTimeOverflow);
  EXPECT_EQ(r.mac_cycles, 0);  // an invalid config's result is its status alone
  EXPECT_EQ(r.matrix_busy_ps, 0);
  // Below the limit everything is representable and both engines agree.
  const GemmConfig ok = params(64, 64, 64, 16);
  EXPECT_EQ(gemm_model(gemm_config(t, ok)).status, kGemmOk);
}

}  // namespace
}  // namespace kb
