// The runtime's memory and compute: HBM shared by the PEs that use it and its write port,
// vector ops against float64, copies from and to HBM, four-dimensional tensors and boxes,
// zero-latency heads, and buffer mistakes as input errors (placement, copies and links:
// test_runtime.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "runtime_kernels.h"
#include "topologies.h"
#include "host/common/error.h"
#include "host/runtime/context.h"
#include "host/topology/load.h"


namespace kb {
namespace {
using kb::unittest::everywhere;
using kb::unittest::launch_cubes_0_and_1;
using kb::unittest::send_to;
using kb::unittest::tiny;
}  // namespace
}  // namespace kb

namespace kb {
namespace {

// fp8 (e4m3) rounding, as 8-bit weights and KV caches hold their values: 3 fraction bits,
// ties to even, subnormals from 2^-9, saturating at 448; one byte a value.
TEST(Runtime, Fp8RoundsToE4m3) {
  EXPECT_EQ(dtype_bytes(DType::fp8), 1);
  EXPECT_STREQ(to_string(DType::fp8), "fp8");
  const float cases[][2] = {{1.0f, 1.0f},         {0.3f, 0.3125f},  {-1.0625f, -1.0f},     {1.1875f, 1.25f},
                            {0.001953125f, 0.001953125f}, {0.0009f, 0.0f}, {0.0030f, 0.00390625f}, {448.0f, 448.0f},
                            {500.0f, 448.0f},     {-1e6f, -448.0f}, {240.0f, 240.0f},      {0.0f, 0.0f}};
  for (const auto& c : cases) EXPECT_EQ(round_to(DType::fp8, c[0]), c[1]) << c[0];
  // Every value it gives is its own rounding, and has at most 4 significant bits.
  for (int i = -2000; i <= 2000; ++i) {
    const float r = round_to(DType::fp8, static_cast<float>(i) / 37.0f);
    EXPECT_EQ(round_to(DType::fp8, r), r);
    int e;
    const float f = std::frexp(std::fabs(r), &e);
    if (r != 0.0f && e - 1 >= -6) {
      EXPECT_EQ(std::ldexp(f, 4), std::nearbyint(std::ldexp(f, 4))) << r;
    }
  }
}

// A cube's HBM is shared by the PEs that access it in the launch: one PE working alone
// gets min(DMA rate, HBM rate), two working split the stack.
TEST(Runtime, HbmIsSharedByThePesThatAccessIt) {
  TopologySpec t = tiny();
  t.hbm_bandwidth_gbps = 8;  // as fast as one PE's DMA
  for (int working : {1, 2}) {
    RuntimeContext ctx(t);
    const Tensor x = ctx.zeros({2, 400}, DType::f16, Placement{}, "x");
    OpId load = engine::kNoOp;
    ctx.launch("load", LaunchGrid{1, 1, 2}, [&](PeProgram& p) {
      if (p.rank().pe >= working) return;
      const SramBuf b = p.sram(800, DType::f16);
      const OpId l = p.load(x, Region{p.rank().pe, 1, 0, 400}, b);
      if (p.rank().pe == 0) load = l;
    });
    const RunReport r = ctx.run();
    ASSERT_EQ(r.status, engine::Status::ok);
    // 800 bytes: 100 ns at the DMA rate; with two sharers, 200 ns at half the stack.
    EXPECT_EQ(r.result.timing[static_cast<std::size_t>(load)].busy_end, working == 1 ? 100000 : 200000) << working;
  }
  // A launch with co-tenants (identical launches on the cube's other PEs, as tensor-parallel
  // ranks of one PE run) shares the cube as if they were in it: one PE with one co-tenant
  // loads as two PEs of one launch do.
  t.hbm_tenants = 2;
  RuntimeContext ctx(t);
  const Tensor x = ctx.zeros({2, 400}, DType::f16, Placement{}, "x");
  OpId load = engine::kNoOp;
  ctx.launch("load", LaunchGrid{1, 1, 1}, [&](PeProgram& p) { load = p.load(x, Region{0, 1, 0, 400}, p.sram(800, DType::f16)); });
  const RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok);
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(load)].busy_end, 200000);
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// Vector ops in data mode: f32 compute, f16 storage, against float64 references; and their
// cycles (tiny: 4 lanes at 1 GHz).
TEST(Runtime, VectorOpsMatchFloat64AndTheirCycleCosts) {
  RuntimeContext ctx(tiny(), ContextOptions{true});
  const Tensor a = ctx.random({4, 8}, DType::f16, Placement{}, "a", 3);
  const Tensor b = ctx.random({4, 8}, DType::f16, Placement{}, "b", 4);
  const VecOp ops[] = {VecOp::add, VecOp::mul, VecOp::max, VecOp::scale, VecOp::exp, VecOp::row_sum, VecOp::row_max};
  std::vector<Tensor> outs;
  for (int i = 0; i < 7; ++i) outs.push_back(ctx.zeros({4, 8}, DType::f16, Placement{}, "out" + std::to_string(i)));
  std::vector<OpId> vec(7);
  ctx.launch("vec", LaunchGrid{}, [&](PeProgram& p) {
    for (int i = 0; i < 7; ++i) {
      const SramBuf x = p.sram(64, DType::f16), y = p.sram(64, DType::f16), r = p.sram(64, DType::f16);
      const OpId lx = p.load(a, Region{0, 4, 0, 8}, x), ly = p.load(b, Region{0, 4, 0, 8}, y);
      switch (ops[i]) {
        case VecOp::add: vec[i] = p.vector_add(x, y, 32, {lx, ly}); break;
        case VecOp::mul: vec[i] = p.vector_mul(x, y, 32, {lx, ly}); break;
        case VecOp::max: vec[i] = p.vector_max(x, y, 32, {lx, ly}); break;
        case VecOp::scale: vec[i] = p.vector_scale(x, 32, 0.1f, {lx}); break;
        case VecOp::exp: vec[i] = p.vector_exp(x, 32, {lx}); break;
        case VecOp::row_sum: vec[i] = p.row_sum(r, x, 4, 8, {lx}); break;
        case VecOp::row_max: vec[i] = p.row_max(r, x, 4, 8, {lx}); break;
        default: break;
      }
      const bool reduce = ops[i] == VecOp::row_sum || ops[i] == VecOp::row_max;
      p.store(reduce ? r : x, outs[static_cast<std::size_t>(i)], reduce ? Region{0, 1, 0, 4} : Region{0, 4, 0, 8}, {vec[i]});
    }
  });
  const RunReport rep = ctx.run();
  ASSERT_EQ(rep.status, engine::Status::ok) << rep.message;
  const auto& A = ctx.values(a);
  const auto& B = ctx.values(b);
  auto f16 = [](double v) { return round_to(DType::f16, static_cast<float>(v)); };
  auto ulp16 = [](float v) { return std::ldexp(1.0f, std::max(-24, static_cast<int>(std::floor(std::log2(std::fabs(v) + 1e-30f))) - 10)); };
  for (int i = 0; i < 7; ++i) {
    SCOPED_TRACE(i);
    const auto& out = ctx.values(outs[static_cast<std::size_t>(i)]);
    for (int e = 0; e < 32; ++e) {
      const double x = A[static_cast<std::size_t>(e)], y = B[static_cast<std::size_t>(e)];
      const float got = out[static_cast<std::size_t>(e)];
      switch (ops[i]) {
        case VecOp::add: EXPECT_EQ(got, f16(x + y)) << e; break;
        case VecOp::mul: EXPECT_EQ(got, f16(x * y)) << e; break;
        case VecOp::max: EXPECT_EQ(got, f16(std::max(x, y))) << e; break;
        case VecOp::scale: EXPECT_EQ(got, f16(static_cast<float>(x) * 0.1f)) << e; break;
        case VecOp::exp: EXPECT_LE(std::fabs(got - f16(std::exp(x))), ulp16(f16(std::exp(x)))) << e; break;
        default: break;
      }
    }
    if (ops[i] == VecOp::row_sum || ops[i] == VecOp::row_max)
      for (int r = 0; r < 4; ++r) {
        double sum = 0, mx = -1e30;
        for (int c = 0; c < 8; ++c) {
          sum += A[static_cast<std::size_t>(r * 8 + c)];
          mx = std::max(mx, static_cast<double>(A[static_cast<std::size_t>(r * 8 + c)]));
        }
        const float got = out[static_cast<std::size_t>(r)];
        if (ops[i] == VecOp::row_max) EXPECT_EQ(got, f16(mx)) << r;
        else EXPECT_LE(std::fabs(got - f16(sum)), ulp16(f16(sum))) << r;
      }
  }
  // Cycles: 32 elements on 4 lanes = 8; exp four passes = 32; a 4 x 8 row reduction
  // = 4 rows x (2 + log2(4)) = 16.
  const std::int64_t want[] = {8, 8, 8, 8, 32, 16, 16};
  for (int i = 0; i < 7; ++i) {
    const auto& t = rep.result.timing[static_cast<std::size_t>(vec[i])];
    EXPECT_EQ(t.busy_end - t.start, want[i] * 1000) << i;
  }
  EXPECT_EQ(vector_cycles(VecOp::row_sum, 3, 2, 4), 3 * (1 + 1));  // short rows: a 2-lane tree
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// Copies with an end in HBM: a DMA read on the sender's queue, the route, a DMA write
// through the receiver's HBM write port, cut-through, each hop held for the slowest one;
// values move in data mode, local or remote, across SIPs too.
TEST(Runtime, CopiesFromAndToHbm) {
  RuntimeContext ctx(tiny(), ContextOptions{true});  // HBM 16 GB/s, DMA 8 GB/s, mesh 20 GB/s
  const SymBuf inbox = everywhere(ctx, 800);
  const Placement both_cubes{Split::replicate, 2, 1, 0};
  const Tensor x = ctx.random({2, 400}, DType::f16, both_cubes, "x", 5);
  const Tensor y = ctx.zeros({2, 400}, DType::f16, both_cubes, "y");
  const Tensor z = ctx.zeros({2, 400}, DType::f16, Placement{Split::replicate, 2, 1, 1}, "z");  // on SIP 1
  OpId to_sram = engine::kNoOp, to_hbm = engine::kNoOp, far = engine::kNoOp;
  ctx.launch("hbm", LaunchGrid{}, [&](PeProgram& p) {
    // Row 0 of x from this cube's HBM into cube 1's PE 0, which stores it into y there.
    to_sram = p.copy(x, Region{0, 1, 0, 400}, Rank{0, 1, 0}, p.at(inbox, Rank{0, 1, 0}));
    // Row 1 of x from HBM to HBM: into z on SIP 1.
    far = p.copy(x, Region{1, 1, 0, 400}, Rank{1, 0, 0}, z, Region{1, 1, 0, 400});
  });
  ctx.launch("land", LaunchGrid{1, 2, 1}, [&](PeProgram& p) {
    if (p.rank().cube != 1) return;
    const SramBuf in = p.sram(800, DType::f16);
    // Cube 1 sends row 0 of its copy of x from SRAM into cube 0's y (remote HBM).
    const OpId l = p.load(x, Region{0, 1, 0, 400}, in);
    to_hbm = p.copy(in, Rank{0, 0, 0}, y, Region{0, 1, 0, 400}, {l});
  });
  const RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  const auto& tm = r.result.timing;
  // HBM read: max(800 B at 8 GB/s, at 16 GB/s) = 100 ns; the mesh hop alone would take 40 ns,
  // but a chain streams at its slowest hop. The read's head leaves after 10 ns of HBM latency.
  EXPECT_EQ(tm[static_cast<std::size_t>(to_sram)].start, 10000);
  EXPECT_EQ(tm[static_cast<std::size_t>(to_sram)].busy_end - tm[static_cast<std::size_t>(to_sram)].start, 100000);
  EXPECT_EQ(tm[static_cast<std::size_t>(to_sram)].end, 120000);
  EXPECT_EQ(ctx.values(z).size(), 800u);
  for (int c = 0; c < 400; ++c) {
    EXPECT_EQ(ctx.values(z)[static_cast<std::size_t>(400 + c)], ctx.values(x)[static_cast<std::size_t>(400 + c)]) << c;
    EXPECT_EQ(ctx.values(y)[static_cast<std::size_t>(c)], ctx.values(x)[static_cast<std::size_t>(c)]) << c;
  }
  EXPECT_GT(tm[static_cast<std::size_t>(far)].end, 0);
  EXPECT_GT(tm[static_cast<std::size_t>(to_hbm)].end, 0);
  // HBM traffic: 3 reads (2 copies and a load) of 800 B, 2 writes.
  EXPECT_EQ(r.summary.hbm_read_bytes, 3 * 800);
  EXPECT_EQ(r.summary.hbm_write_bytes, 2 * 800);
}

// Two ranks writing into one PE's HBM queue at its write port, in the order they arrive.
TEST(Runtime, HbmWritePortServesArrivalsInOrder) {
  TopologySpec t = tiny();
  t.pe_cols = 3;
  RuntimeContext ctx(t);
  const Tensor y = ctx.zeros({2, 400}, DType::f16, Placement{}, "y");
  OpId w[2];
  ctx.launch("incast", LaunchGrid{1, 1, 3}, [&](PeProgram& p) {
    if (p.rank().pe == 2) return;
    const SramBuf b = p.sram(800, DType::f16);
    w[p.rank().pe] = p.copy(b, Rank{0, 0, 2}, y, Region{p.rank().pe, 1, 0, 400});
  });
  const RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  // Each: out-port, in-port (ipcq 8 GB/s: 100 ns) and the write (one HBM user: 100 ns).
  // The in-port serialises them: the second write starts 100 ns after the first.
  const auto& tm = r.result.timing;
  EXPECT_EQ(tm[static_cast<std::size_t>(w[1])].start - tm[static_cast<std::size_t>(w[0])].start, 100000);
  EXPECT_EQ(tm[static_cast<std::size_t>(w[0])].end, 5000 + 100000 + 10000);
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// A KV cache [batch 2, kv_heads 4, seq 6, d_head 8]: heads split over 2 cubes, the sequence
// over the 2 PEs of each; a PE loads a strided box of its part, scales it and stores it.
TEST(Runtime, FourDimensionalTensorsAndStridedBoxes) {
  RuntimeContext ctx(tiny(), ContextOptions{true});
  Placement pl{Split::row_wise, 2, 1, 0, Split::row_wise, 2};
  pl.cube_dim = 1;  // heads
  pl.pe_dim = 2;    // sequence
  const Tensor kv = ctx.random({2, 4, 6, 8}, DType::f16, pl, "kv", 9);
  const Tensor out = ctx.zeros({2, 4, 6, 8}, DType::f16, pl, "out");
  EXPECT_EQ(ctx.shape(kv), (std::vector<std::int64_t>{2, 4, 6, 8}));
  EXPECT_EQ(ctx.rows(kv), 48);
  EXPECT_EQ(ctx.cols(kv), 8);
  // Cube 1 holds heads 2..3; its PE 1 the sequence positions 3..5 of them.
  const Box box{{1, 2, 3, 2}, {1, 2, 3, 4}};  // batch 1, heads 2-3, positions 3-5, dims 2-5
  OpId load = engine::kNoOp;
  ctx.launch("kv", LaunchGrid{1, 2, 2}, [&](PeProgram& p) {
    if (p.rank().cube != 1 || p.rank().pe != 1) return;
    const SramBuf b = p.sram(2 * 24, DType::f16);
    load = p.load(kv, box, b);
    const OpId s = p.vector_scale(b, 24, 2.0f, {load});
    p.store(b, out, box, {s});
  });
  const RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  EXPECT_EQ(r.summary.hbm_read_bytes, 24 * 2);
  // Each cube holds two heads of each tensor: 2 x 2 x 6 x 8 f16 values, for both tensors.
  EXPECT_EQ(r.hbm_footprint_bytes[0], 2 * (2 * 2 * 6 * 8 * 2));
  const auto& in = ctx.values(kv);
  const auto& o = ctx.values(out);
  int inside = 0;
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 4; ++h)
      for (int s = 0; s < 6; ++s)
        for (int d = 0; d < 8; ++d) {
          const std::size_t at = static_cast<std::size_t>(((b * 4 + h) * 6 + s) * 8 + d);
          const bool in_box = b == 1 && h >= 2 && h <= 3 && s >= 3 && d >= 2 && d <= 5;
          inside += in_box;
          EXPECT_EQ(o[at], in_box ? round_to(DType::f16, 2.0f * in[at]) : 0.0f) << at;
        }
  EXPECT_EQ(inside, 24);
  // A box in another PE's part, a 2-D region of a 4-D tensor, a box of the wrong rank.
  auto fails = [&](auto&& body, const char* what) {
    try {
      ctx.launch("bad", LaunchGrid{1, 2, 2}, [&](PeProgram& p) {
        if (p.rank().cube == 1 && p.rank().pe == 0) body(p);
      });
      ADD_FAILURE() << "no error for " << what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails([&](PeProgram& p) { p.load(kv, box, p.sram(48, DType::f16)); }, "no shard on its cube");
  fails([&](PeProgram& p) { p.load(kv, Region{0, 1, 0, 8}, p.sram(48, DType::f16)); }, "address it with a Box");
  fails([&](PeProgram& p) { p.load(kv, Box{{0, 0}, {1, 1}}, p.sram(48, DType::f16)); }, "a box needs 4 starts");
  EXPECT_THROW(ctx.zeros({1, 2, 3, 4, 5}, DType::f16, Placement{}, "five"), InputError);
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// Zero-latency links: a message whose head crosses a hop at an instant competes for the
// next link in the following arbitration round of that instant, whatever the launch order.
TEST(Runtime, ZeroLatencyHeadsCompeteInTheNextRound) {
  TopologySpec t = tiny();
  t.cube_cols = 3;
  t.cube_link.latency_ns = 0;
  for (bool reversed : {false, true}) {
    RuntimeContext ctx(t);
    const SymBuf s = everywhere(ctx, 4096);
    OpId from[2] = {engine::kNoOp, engine::kNoOp};
    auto kernel = [&](PeProgram& p) {
      if (p.rank().cube > 1) return;
      const SramBuf b = p.sram(800, DType::f16);
      from[p.rank().cube] = send_to(p, s, Rank{0, 2, 0}, 800, {p.vector_add(b, b, 160)});  // ready at 40 ns
    };
    launch_cubes_0_and_1(ctx, reversed, kernel);
    const RunReport r = ctx.run();
    ASSERT_EQ(r.status, engine::Status::ok) << r.message;
    SCOPED_TRACE(reversed ? "cube 1 launched first" : "launch order");
    // Cube 1's message is at link 1->2 at 40 ns; cube 0's head reaches it at 40 ns too, one
    // round later: it goes second.
    EXPECT_EQ(r.result.timing[static_cast<std::size_t>(from[1])].start, 40000);
    EXPECT_EQ(r.result.timing[static_cast<std::size_t>(from[0])].start, 80000);
    EXPECT_EQ(r.result.timing[static_cast<std::size_t>(from[0])].end, 120000);
  }
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// Mistakes a kernel author makes with buffers and tensors are input errors, in both modes.
TEST(Runtime, BufferMistakesAreInputErrors) {
  for (bool data : {false, true}) {
    RuntimeContext ctx(tiny(), ContextOptions{data});
    const SymBuf s = ctx.symmetric(64, DType::f16, LaunchGrid{1, 2, 2}, "s");
    const Tensor x = ctx.zeros({1, 400}, DType::f16, Placement{}, "x");
    SramBuf old;
    ctx.launch("first", LaunchGrid{}, [&](PeProgram& p) { old = p.sram(64, DType::f16); });
    auto error_of = [&](auto&& body) -> std::string {
      try {
        ctx.launch("k", LaunchGrid{}, [&](PeProgram& p) { body(p); });
      } catch (const InputError& e) {
        return e.what();
      }
      return "";
    };
    SCOPED_TRACE(data ? "data mode" : "timing mode");
    EXPECT_NE(error_of([&](PeProgram& p) { p.copy(SramBuf{}, Rank{0, 1, 0}, p.at(s, Rank{0, 1, 0}), 64); }).find("not an SRAM buffer"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.copy(p.local(s), Rank{0, 1, 0}, p.at(s, Rank{0, 1, 0}), 4096); }).find("do not fit"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.copy(p.at(s, Rank{0, 0, 1}), Rank{0, 1, 0}, p.at(s, Rank{0, 1, 0}), 64); }).find("another PE than sip0.cube0.pe0"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.copy(p.local(s), Rank{0, 1, 0}, p.local(s), 64); }).find("another PE than sip0.cube1.pe0"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.load(x, Region{0, 1, 0, 400}, p.at(s, Rank{0, 1, 0})); }).find("another PE"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.load(x, Region{0, 1, 0, 400}, p.local(s)); }).find("800 bytes do not fit"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.vector_add(old, old, 4); }).find("launch has ended"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) {
                const SramBuf b = p.sram(64, DType::f16);
                p.free(b);
                p.vector_add(b, b, 4);
              }).find("was freed"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) {
                const SramBuf f = p.sram(64, DType::f32);
                p.copy(f, Rank{0, 1, 0}, p.at(s, Rank{0, 1, 0}), 64);
              }).find("holds f32 and the destination f16"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.load(Tensor{}, Region{0, 1, 0, 1}, p.local(s)); }).find("not a tensor"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.matmul(SramBuf{-1}, p.local(s), p.local(s), 1, 1, 1, false); }).find("matmul A: not an SRAM buffer"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.matmul(p.local(s), SramBuf{999}, p.local(s), 1, 1, 1, false); }).find("matmul B: not an SRAM buffer"), std::string::npos);
    EXPECT_THROW(ctx.free(SymBuf{}), InputError);
    const Channel ch = ctx.channel("c");
    EXPECT_NE(error_of([&](PeProgram& p) { p.recv(ch, Rank{7, 0, 0}); }).find("does not exist"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.recv(ch, p.rank()); }).find("from itself"), std::string::npos);
    EXPECT_NE(error_of([&](PeProgram& p) { p.recv(Channel{}, Rank{0, 1, 0}); }).find("unknown channel"), std::string::npos);
  }
}

// A region outside its tensor is refused, also right after a load from the shard it would
// otherwise fall in (an empty region inside that shard, or one that runs past the tensor).
TEST(Runtime, RegionsOutsideTheTensorAreInputErrors) {
  RuntimeContext ctx(tiny());
  const Tensor x = ctx.zeros({4, 8}, DType::f16, Placement{}, "x");
  auto error_after_a_load = [&](const Region& bad) -> std::string {
    try {
      ctx.launch("k", LaunchGrid{}, [&](PeProgram& p) {
        const SramBuf b = p.sram(64, DType::f16);
        p.load(x, Region{0, 4, 0, 8}, b);
        p.load(x, bad, b);
      });
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  for (const Region& bad : {Region{1, 0, 0, 8}, Region{0, 1, 2, 0}, Region{0, -1, 0, 8}, Region{3, 2, 0, 8},
                            Region{0, 1, 4, 5}, Region{-1, 2, 0, 8}, Region{0, 1, -1, 4}})
    EXPECT_NE(error_after_a_load(bad).find("tensor 'x': region is outside the tensor"), std::string::npos)
        << bad.row0 << " " << bad.rows << " " << bad.col0 << " " << bad.cols;
  EXPECT_EQ(error_after_a_load(Region{3, 1, 7, 1}), "");
}

// A tensor that does not fit charges nothing; a symmetric buffer that does not fit every
// rank is allocated on none.
TEST(Runtime, FailedAllocationsChargeNothing) {
  RuntimeContext ctx(tiny());  // 1 MiB of HBM per cube, 64 KiB of SRAM per PE
  // Three rows over two cubes: one row (320 KiB) on cube 0, two (640 KiB) on cube 1.
  ctx.zeros({3, 160 * 1024}, DType::f16, Placement{Split::row_wise, 2, 1, 0}, "uneven");
  // Fits cube 0 (256 KiB), not cube 1 (512 KiB): nothing is charged, on either.
  EXPECT_THROW(ctx.zeros({3, 128 * 1024}, DType::f16, Placement{Split::row_wise, 2, 1, 0}, "too big"), InputError);
  EXPECT_EQ(ctx.run().hbm_footprint_bytes[0], 320 * 1024);
  RuntimeContext ctx2(tiny());
  ctx2.launch("k", LaunchGrid{1, 2, 2}, [&](PeProgram& p) {
    // PE 1 of cube 1 holds 30 KiB: a 40 KiB symmetric buffer fits the three other PEs, not it.
    if (p.rank().cube != 1 || p.rank().pe != 1) return;
    p.sram(30 * 1024, DType::f16);
    EXPECT_THROW(ctx2.symmetric(40 * 1024, DType::f16, LaunchGrid{1, 2, 2}, "s"), InputError);
  });
  // Neither the three partial instances nor the launch's buffer are still charged.
  EXPECT_NO_THROW(ctx2.symmetric(60 * 1024, DType::f16, LaunchGrid{1, 2, 2}, "after"));
}

// A PE's DMA queue and its HBM write port each take a share of the cube's HBM.
TEST(Runtime, HbmWritePortTakesItsOwnShare) {
  TopologySpec t = tiny();
  t.hbm_bandwidth_gbps = 8;  // as fast as one PE's DMA
  RuntimeContext ctx(t);
  const Tensor x = ctx.zeros({2, 400}, DType::f16, Placement{}, "x");
  const SymBuf s = ctx.symmetric(800, DType::f16, LaunchGrid{1, 1, 2}, "s");
  OpId load = engine::kNoOp, write = engine::kNoOp;
  ctx.launch("both", LaunchGrid{1, 1, 2}, [&](PeProgram& p) {
    if (p.rank().pe == 0) {
      load = p.load(x, Region{0, 1, 0, 400}, p.local(s));
    } else {
      write = p.copy(p.local(s), Rank{0, 0, 0}, x, Region{1, 1, 0, 400});
    }
  });
  const RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  const auto& tm = r.result.timing;
  EXPECT_EQ(tm[static_cast<std::size_t>(load)].busy_end - tm[static_cast<std::size_t>(load)].start, 200000);
  EXPECT_EQ(tm[static_cast<std::size_t>(write)].busy_end - tm[static_cast<std::size_t>(write)].start, 200000);
}

// Loads round to the buffer's type; 4-D tensors copy box to box, across cubes.
TEST(Runtime, LoadsRoundAndBoxesCopyBetweenTensors) {
  RuntimeContext ctx(tiny(), ContextOptions{true});
  const Tensor x = ctx.random({1, 8}, DType::f32, Placement{}, "x", 21);
  const Tensor y = ctx.zeros({1, 8}, DType::f32, Placement{}, "y");
  Placement by_head{Split::row_wise, 2, 1, 0};
  by_head.cube_dim = 1;
  const Tensor kv = ctx.random({1, 2, 3, 4}, DType::f16, by_head, "kv", 4);
  const Tensor moved = ctx.zeros({1, 2, 3, 4}, DType::f16, by_head, "moved");
  ctx.launch("k", LaunchGrid{1, 2, 1}, [&](PeProgram& p) {
    if (p.rank().cube == 0) {
      const SramBuf h = p.sram(16, DType::f16);
      p.store(h, y, Region{0, 1, 0, 8}, {p.load(x, Region{0, 1, 0, 8}, h)});
      // head 0 (on cube 0) -> head 1 of `moved` (on cube 1)
      p.copy(kv, Box{{0, 0, 0, 0}, {1, 1, 3, 4}}, Rank{0, 1, 0}, moved, Box{{0, 1, 0, 0}, {1, 1, 3, 4}});
    }
  });
  ASSERT_EQ(ctx.run().status, engine::Status::ok);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(ctx.values(y)[static_cast<std::size_t>(i)], round_to(DType::f16, ctx.values(x)[static_cast<std::size_t>(i)]));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(ctx.values(moved)[static_cast<std::size_t>(12 + i)], ctx.values(kv)[static_cast<std::size_t>(i)]);
}

}  // namespace
}  // namespace kb
