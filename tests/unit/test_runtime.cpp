// The runtime: capacities, placement over cubes and PEs, launches, copies per link level
// and shared links, symmetric buffers and channels (memory and compute:
// test_runtime_memory.cpp).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime_kernels.h"
#include "topologies.h"
#include "host/common/error.h"
#include "host/runtime/context.h"
#include "host/topology/load.h"

namespace kb {
namespace {

using engine::LinkLevel;

using kb::unittest::tiny;
using kb::unittest::everywhere;
using kb::unittest::launch_cubes_0_and_1;
using kb::unittest::send_to;

TEST(Runtime, HbmCapacityIsEnforced) {
  RuntimeContext ctx(tiny());  // 1 MiB per cube
  ctx.zeros({512, 512}, DType::f16, Placement{}, "half");  // 512 KiB
  try {
    ctx.zeros({512, 1024}, DType::f16, Placement{}, "big");
    FAIL() << "expected out of memory";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "out of HBM memory: tensor 'big' needs 1048576 bytes on sip0.cube0, which has 524288 of 1048576 bytes free");
  }
}

TEST(Runtime, PlacementSplitsShardsAndFootprint) {
  RuntimeContext ctx(tiny());
  ctx.zeros({10, 8}, DType::f32, Placement{Split::row_wise, 2, 4, 0}, "rows");  // rows 0..3 | 4..9 in granules of 4
  ctx.zeros({4, 6}, DType::f16, Placement{Split::col_wise, 2, 1, 0}, "cols");   // 3 + 3 columns
  ctx.zeros({2, 2}, DType::bf16, Placement{Split::replicate, 2, 1, 0}, "rep");
  const RunReport rep = ctx.run();
  EXPECT_EQ(rep.status, engine::Status::no_work);
  EXPECT_EQ(rep.hbm_footprint_bytes[0], 4 * 8 * 4 + 4 * 3 * 2 + 8);
  EXPECT_EQ(rep.hbm_footprint_bytes[1], 6 * 8 * 4 + 4 * 3 * 2 + 8);
}

TEST(Runtime, SramCapacityIsEnforced) {
  RuntimeContext ctx(tiny());  // 64 KiB per PE
  EXPECT_THROW(ctx.launch("k", LaunchGrid{}, [](PeProgram& p) {
    p.sram(40 * 1024, DType::f16);
    p.sram(40 * 1024, DType::f16);
  }), InputError);
}

TEST(Runtime, LaunchLargerThanMachineIsRejected) {
  RuntimeContext ctx(tiny());
  EXPECT_THROW(ctx.launch("k", LaunchGrid{1, 1, 3}, [](PeProgram&) {}), InputError);
  EXPECT_THROW(ctx.launch("k", LaunchGrid{3, 1, 1}, [](PeProgram&) {}), InputError);
}

// tiny: ipcq 8 GB/s + 5 ns; cube link 20 GB/s + 10 ns; SIP ring 10 GB/s + 100 ns.
TEST(Runtime, CopyTimingPerLinkLevel) {
  RuntimeContext ctx(tiny());
  const SymBuf s = everywhere(ctx, 4096);
  OpId pe = 0, cube = 0, sip = 0;
  ctx.launch("copies", LaunchGrid{}, [&](PeProgram& p) {
    pe = send_to(p, s, Rank{0, 0, 1}, 800);
    cube = send_to(p, s, Rank{0, 1, 0}, 800);
    sip = send_to(p, s, Rank{1, 0, 0}, 800);
  });
  const RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok);
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(pe)].end, 100000 + 5000);
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(cube)].end, 40000 + 10000);
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(sip)].end, 80000 + 100000);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(r.summary.link_bytes[static_cast<std::size_t>(l)], 800);
    EXPECT_EQ(r.summary.link_copies[static_cast<std::size_t>(l)], 1);
  }
}

// Cut-through: a hop starts once the message's head has crossed the previous one, so two
// uncontended hops cost one transfer plus two latencies; each link records what it carried.
TEST(Runtime, MeshCopyIsCutThroughPerHop) {
  TopologySpec t = tiny();
  t.cube_rows = 2;  // 2x2 cubes: cube 0 -> cube 3 is two hops, east then south
  RuntimeContext ctx(t);
  const SymBuf s = everywhere(ctx, 4096);
  OpId last = 0;
  ctx.launch("copies", LaunchGrid{}, [&](PeProgram& p) {
    last = send_to(p, s, Rank{0, 3, 0}, 800);
  });
  const RunReport r = ctx.run();
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(last)].start, 10000);
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(last)].end, 10000 + 40000 + 10000);
  EXPECT_EQ(r.summary.link_copies[static_cast<std::size_t>(LinkLevel::cube)], 2);
  ASSERT_EQ(r.links.size(), 2u);
  EXPECT_EQ(r.links[0].name, "sip0.cube0->cube1");
  EXPECT_EQ(r.links[1].name, "sip0.cube1->cube3");
  for (const LinkUse& l : r.links) {
    EXPECT_EQ(l.bytes, 800);
    EXPECT_EQ(l.busy_ps, 40000);
    EXPECT_EQ(l.cls, engine::ResourceClass::cube_link);
  }
  // The trace: one track per link direction, and each link's totals.
  const auto trace = nlohmann::json::parse(ctx.trace_json(r));
  int tracks = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M") tracks += e["args"]["name"] == "sip0.cube0->cube1" || e["args"]["name"] == "sip0.cube1->cube3";
  EXPECT_EQ(tracks, 2);
  ASSERT_EQ(trace["links"].size(), 2u);
  EXPECT_EQ(trace["links"][1]["name"], "sip0.cube1->cube3");
  EXPECT_EQ(trace["links"][1]["bytes"], 800);
  EXPECT_EQ(trace["links"][1]["busy_ps"], 40000);
}

// PE-to-PE copies pass the sender's out-port and the receiver's in-port: two senders to one
// receiver (incast) queue at its in-port, one sender to two receivers at its out-port.
TEST(Runtime, CopyQueuePortsSerialiseIncastAndFanOut) {
  TopologySpec t = tiny();
  t.pe_cols = 3;
  RuntimeContext ctx(t);
  const SymBuf s = everywhere(ctx, 4096);
  OpId in[2] = {engine::kNoOp, engine::kNoOp}, out[2] = {engine::kNoOp, engine::kNoOp};
  ctx.launch("ports", LaunchGrid{1, 1, 3}, [&](PeProgram& p) {
    if (p.rank().pe != 2) in[p.rank().pe] = send_to(p, s, Rank{0, 0, 2}, 800);  // incast into PE 2
  });
  RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  // 800 bytes at 8 GB/s = 100 ns, then 5 ns.
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(in[0])].end, 105000);
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(in[1])].start, 100000);
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(in[1])].end, 205000);
  RuntimeContext fan(t);
  const SymBuf sf = everywhere(fan, 4096);
  fan.launch("ports", LaunchGrid{1, 1, 1}, [&](PeProgram& p) {
    out[0] = send_to(p, sf, Rank{0, 0, 1}, 800);
    out[1] = send_to(p, sf, Rank{0, 0, 2}, 800);
  });
  r = fan.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(out[0])].end, 105000);
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(out[1])].end, 205000);
  EXPECT_EQ(r.summary.link_copies[static_cast<std::size_t>(LinkLevel::pe)], 2);  // counted once per copy
  EXPECT_EQ(r.summary.busy_ps[static_cast<std::size_t>(engine::ResourceClass::ipcq_out)], 200000);
  EXPECT_EQ(r.summary.busy_ps[static_cast<std::size_t>(engine::ResourceClass::ipcq)], 200000);
}

TEST(Runtime, DataModeCopyAndVectorAdd) {
  RuntimeContext ctx(tiny(), ContextOptions{true});
  Tensor x = ctx.random({1, 8}, DType::f32, Placement{Split::replicate, 2, 1, 0}, "x", 7);
  Tensor y = ctx.zeros({1, 8}, DType::f32, Placement{Split::replicate, 2, 1, 0}, "y");
  const Signal arrived = ctx.signal("arrived");
  SramBuf inbox;
  // Rank (0,0,0) runs first, so its inbox exists when rank (0,1,0) copies into it.
  ctx.launch("move", LaunchGrid{1, 2, 1}, [&](PeProgram& p) {
    if (p.rank().cube == 0) {
      inbox = p.sram(32, DType::f32);
      p.store(inbox, y, Region{0, 1, 0, 8}, {p.wait({arrived.op})});
    } else {
      const SramBuf mine = p.sram(32, DType::f32);
      const OpId l = p.load(x, Region{0, 1, 0, 8}, mine);
      p.raise(arrived, p.copy(mine, Rank{0, 0, 0}, inbox, 32, {l}));
    }
  });
  RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  EXPECT_EQ(ctx.values(y), ctx.values(x));
  RuntimeContext ctx2(tiny(), ContextOptions{true});
  Tensor a = ctx2.random({1, 8}, DType::f32, Placement{}, "a", 1);
  Tensor out = ctx2.zeros({1, 8}, DType::f32, Placement{}, "out");
  ctx2.launch("add", LaunchGrid{}, [&](PeProgram& p) {
    const SramBuf u = p.sram(32, DType::f32), v = p.sram(32, DType::f32);
    const OpId la = p.load(a, Region{0, 1, 0, 8}, u);
    const OpId lb = p.load(a, Region{0, 1, 0, 8}, v);
    const OpId add = p.vector_add(u, v, 8, {la, lb});
    p.store(u, out, Region{0, 1, 0, 8}, {add});
  });
  r = ctx2.run();
  ASSERT_EQ(r.status, engine::Status::ok);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(ctx2.values(out)[static_cast<std::size_t>(i)], 2 * ctx2.values(a)[static_cast<std::size_t>(i)]);
  // vector op: 8 elements on 4 lanes = 2 cycles = 2000 ps
  EXPECT_EQ(r.summary.busy_ps[static_cast<std::size_t>(engine::ResourceClass::vector)], 2000);
}

TEST(Runtime, CrossRankWaitDeadlockIsReported) {
  RuntimeContext ctx(tiny());
  const SymBuf s = everywhere(ctx, 4096);
  const Signal from0 = ctx.signal("pe0 sent"), from1 = ctx.signal("pe1 sent");
  ctx.launch("exchange", LaunchGrid{1, 1, 2}, [&](PeProgram& p) {
    const bool zero = p.rank().pe == 0;
    // Each PE waits for the other's data before sending its own: a classic deadlock.
    const OpId got = p.wait({(zero ? from1 : from0).op});
    const OpId sent = send_to(p, s, Rank{0, 0, zero ? 1 : 0}, 64, {got});
    p.raise(zero ? from0 : from1, sent);
  });
  const RunReport r = ctx.run();
  EXPECT_EQ(r.status, engine::Status::deadlock);
  EXPECT_NE(r.message.find("signal pe1 sent"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("never ran"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

TEST(Runtime, PlacementOverPes) {
  RuntimeContext ctx(tiny());  // 2 cubes of 2 PEs
  // Rows over 2 cubes, then columns over the 2 PEs of each cube.
  const Tensor t = ctx.zeros({8, 6}, DType::f16, Placement{Split::row_wise, 2, 1, 0, Split::col_wise, 2}, "t");
  const RunReport empty = ctx.run();
  EXPECT_EQ(empty.hbm_footprint_bytes[0], 4 * 6 * 2);
  EXPECT_EQ(empty.hbm_footprint_bytes[1], 4 * 6 * 2);
  // PE 1 of cube 1 owns rows 4..7, columns 3..5.
  ctx.launch("own", LaunchGrid{1, 2, 2}, [&](PeProgram& p) {
    const SramBuf b = p.sram(64, DType::f16);
    if (p.rank().cube == 1 && p.rank().pe == 1) p.load(t, Region{4, 4, 3, 3}, b);
  });
  EXPECT_EQ(ctx.run().status, engine::Status::ok);
  // Any other PE touching that part is an error.
  EXPECT_THROW(ctx.launch("steal", LaunchGrid{1, 2, 1}, [&](PeProgram& p) {
    const SramBuf b = p.sram(64, DType::f16);
    if (p.rank().cube == 1) p.load(t, Region{4, 4, 3, 3}, b);
  }), InputError);
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// A row of three cubes: cube 1 copies to cube 2; cube 0 copies to cube 2 (hops 0->1,
// 1->2) only after cube 1's copy has landed. Cube 0's hop on link 1->2 is issued first in
// the launch loop, but cube 1's message is ready first and must go first.
TEST(Runtime, SharedLinkServesReadyMessageFirst) {
  TopologySpec t = tiny();
  t.cube_cols = 3;
  RuntimeContext ctx(t);
  const SymBuf s = everywhere(ctx, 4096);
  const Signal landed = ctx.signal("cube1 landed");
  OpId from1 = engine::kNoOp, from0 = engine::kNoOp;
  ctx.launch("probe", LaunchGrid{1, 3, 1}, [&](PeProgram& p) {
    if (p.rank().cube == 0) from0 = send_to(p, s, Rank{0, 2, 0}, 800, {p.wait({landed.op})});
    if (p.rank().cube == 1) {
      from1 = send_to(p, s, Rank{0, 2, 0}, 800);
      p.raise(landed, from1);
    }
  });
  const RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  // 800 bytes at 20 GB/s = 40 ns, then 10 ns of latency per hop.
  const auto& tm = r.result.timing;
  EXPECT_EQ(tm[static_cast<std::size_t>(from1)].start, 0);
  EXPECT_EQ(tm[static_cast<std::size_t>(from1)].end, 50000);
  EXPECT_EQ(tm[static_cast<std::size_t>(from0)].start, 60000);  // its first hop starts at 50 ns, its head crosses at 60
  EXPECT_EQ(tm[static_cast<std::size_t>(from0)].end, 110000);
  EXPECT_EQ(r.summary.latency_ps, 110000);
}

// Two messages ready at the same instant on one link: the lower source rank goes first,
// whatever order the ranks were launched or their ops were added.
TEST(Runtime, SharedLinkTiesGoToTheLowerSourceRank) {
  TopologySpec t = tiny();
  t.cube_cols = 3;
  for (bool reversed : {false, true}) {
    RuntimeContext ctx(t);
    const SymBuf s = everywhere(ctx, 4096);
    OpId from[2] = {engine::kNoOp, engine::kNoOp};
    // Cubes 0 and 1 both send to cube 2; cube 0's head crosses its first hop (0->1) at
    // 10 ns, when cube 1's own message, held back by a 10 ns vector op, is ready too.
    auto kernel = [&](PeProgram& p) {
      const SramBuf b = p.sram(800, DType::f16);
      if (p.rank().cube == 0) from[0] = send_to(p, s, Rank{0, 2, 0}, 800);
      if (p.rank().cube == 1) from[1] = send_to(p, s, Rank{0, 2, 0}, 800, {p.vector_add(b, b, 40)});
    };
    launch_cubes_0_and_1(ctx, reversed, kernel);
    const RunReport r = ctx.run();
    ASSERT_EQ(r.status, engine::Status::ok) << r.message;
    const auto& tm = r.result.timing;
    SCOPED_TRACE(reversed ? "cube 1 launched first" : "launch order");
    EXPECT_EQ(tm[static_cast<std::size_t>(from[0])].start, 10000);  // 1->2, first
    EXPECT_EQ(tm[static_cast<std::size_t>(from[0])].end, 60000);
    EXPECT_EQ(tm[static_cast<std::size_t>(from[1])].start, 50000);  // behind it on 1->2
    EXPECT_EQ(tm[static_cast<std::size_t>(from[1])].end, 100000);
  }
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// docs/model.md section 6: ring8, 4096 bytes from SIP 0 to SIP 5 go backward over three
// ring links, cut-through.
TEST(Runtime, RingCopyGoesTheShorterWayCutThrough) {
  RuntimeContext ctx(load_topology(std::string(KB_TEST_TOPOLOGIES) + "/ring8.yaml"));
  const SymBuf s = everywhere(ctx, 4096);
  OpId last = engine::kNoOp;
  ctx.launch("ring", LaunchGrid{}, [&](PeProgram& p) {
    last = send_to(p, s, Rank{5, 0, 0}, 4096);
  });
  const RunReport r = ctx.run();
  ASSERT_EQ(r.status, engine::Status::ok) << r.message;
  EXPECT_EQ(r.result.timing[static_cast<std::size_t>(last)].end, 3040960);
  ASSERT_EQ(r.links.size(), 3u);
  EXPECT_EQ(r.links[0].name, "sip0->sip7");
  EXPECT_EQ(r.links[2].name, "sip6->sip5");
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// A launch's SRAM returns to its PEs when the launch ends; free() returns it earlier.
TEST(Runtime, SramIsReturnedAfterLaunch) {
  RuntimeContext ctx(tiny());  // 64 KiB per PE
  auto kernel = [](PeProgram& p) { p.sram(40 * 1024, DType::f16); };
  ctx.launch("first", LaunchGrid{}, kernel);
  EXPECT_NO_THROW(ctx.launch("second", LaunchGrid{}, kernel));
  EXPECT_NO_THROW(ctx.launch("freed", LaunchGrid{}, [](PeProgram& p) {
    p.free(p.sram(40 * 1024, DType::f16));
    p.sram(40 * 1024, DType::f16);
  }));
  try {
    ctx.launch("third", LaunchGrid{}, [](PeProgram& p) {
      p.sram(40 * 1024, DType::f16);
      p.sram(40 * 1024, DType::f16);
    });
    FAIL() << "expected an SRAM overflow";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "SRAM overflow on sip0.cube0.pe0: kernel needs 81920 bytes, the PE has 65536");
  }
  // Symmetric buffers stay across launches until freed.
  const SymBuf sym = ctx.symmetric(40 * 1024, DType::f16, LaunchGrid{2, 2, 2}, "sym");
  EXPECT_THROW(ctx.launch("full", LaunchGrid{}, kernel), InputError);
  ctx.free(sym);
  EXPECT_NO_THROW(ctx.launch("again", LaunchGrid{}, kernel));
  EXPECT_THROW(ctx.free(sym), InputError);
}

// Every rank of a ring sends its values to the next rank over a channel into a symmetric
// buffer and adds what it receives, in data mode. The receiver's kernel may run before or
// after its sender's: no signal is made beforehand.
TEST(Runtime, SymmetricBuffersAndChannelsInDataMode) {
  for (bool reversed : {false, true}) {
    RuntimeContext ctx(tiny(), ContextOptions{true});
    const LaunchGrid grid{2, 2, 2};  // 8 ranks over both SIPs
    const Tensor x = ctx.random({8, 16}, DType::f32, Placement{Split::replicate, 2, 1, 0}, "x", 11);
    const Tensor x1 = ctx.random({8, 16}, DType::f32, Placement{Split::replicate, 2, 1, 1}, "x1", 11);
    const Tensor y = ctx.zeros({8, 16}, DType::f32, Placement{Split::replicate, 2, 1, 0}, "y");
    const Tensor y1 = ctx.zeros({8, 16}, DType::f32, Placement{Split::replicate, 2, 1, 1}, "y1");
    const SymBuf inbox = ctx.symmetric(64, DType::f32, grid, "inbox");
    const Channel ch = ctx.channel("ring");
    auto index = [](const Rank& r) { return (r.sip * 2 + r.cube) * 2 + r.pe; };
    auto rank_of = [](int i) { return Rank{i / 4, i / 2 % 2, i % 2}; };
    auto kernel = [&](PeProgram& p) {
      const int me = index(p.rank());
      const Rank next = rank_of((me + 1) % 8), prev = rank_of((me + 7) % 8);
      const Tensor& in = p.rank().sip == 0 ? x : x1;
      const Tensor& out = p.rank().sip == 0 ? y : y1;
      const SramBuf mine = p.sram(64, DType::f32);
      const OpId l = p.load(in, Region{me, 1, 0, 16}, mine);
      p.send(ch, mine, next, p.at(inbox, next), 64, {l});
      const OpId got = p.recv(ch, prev);
      const OpId add = p.vector_add(p.local(inbox), mine, 16, {got, l});
      p.store(p.local(inbox), out, Region{me, 1, 0, 16}, {add});
    };
    for (int k = 0; k < 8; ++k) {  // one launch per rank, in one order or the other
      const Rank r = rank_of(reversed ? 7 - k : k);
      ctx.launch("rank", grid, [&](PeProgram& p) {
        if (index(p.rank()) == index(r)) kernel(p);
      });
    }
    const RunReport rep = ctx.run();
    ASSERT_EQ(rep.status, engine::Status::ok) << rep.message;
    for (int i = 0; i < 8; ++i) {
      const int from = (i + 7) % 8;
      const auto& src_from = ctx.values(from < 4 ? x : x1);
      const auto& src_me = ctx.values(i < 4 ? x : x1);
      const auto& dst = ctx.values(i < 4 ? y : y1);
      for (int c = 0; c < 16; ++c)
        EXPECT_FLOAT_EQ(dst[static_cast<std::size_t>(i * 16 + c)],
                        src_from[static_cast<std::size_t>(from * 16 + c)] + src_me[static_cast<std::size_t>(i * 16 + c)])
            << i << " " << c;
    }
  }
}

// A receive no send matches is a deadlock that names the channel.
TEST(Runtime, UnmatchedReceiveIsDiagnosed) {
  RuntimeContext ctx(tiny());
  const Channel ch = ctx.channel("lonely");
  ctx.launch("wait", LaunchGrid{}, [&](PeProgram& p) { p.recv(ch, Rank{0, 1, 0}); });
  const RunReport r = ctx.run();
  EXPECT_EQ(r.status, engine::Status::deadlock);
  EXPECT_NE(r.message.find("channel lonely sip0.cube1.pe0->sip0.cube0.pe0 #0"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace kb
