// Pipeline stages (docs/model.md section 13.8): the schedule of stages and micro-batches by
// hand, and the activation transfer between stages on both engines over random machines.
#include <gtest/gtest.h>

#include <random>

#include "host/families/llm/llm_program.h"
#include "topologies.h"

namespace kb {
namespace {

// Two stages of one and two layers of 10 ps (GEMMs), transfers of 1 ps, three micro-batches:
// stage 1 is the bottleneck and each transfer waits for it (a rendezvous), so the step is
// 10 + 3 x (1 + 20) = 73 ps, its critical path 70 ps of GEMMs and 3 of transfers.
TEST(LlmPipeline, HandScheduledStages) {
  const ps_t layer[kLlmKinds] = {10, 0, 0, 0, 0}, none[kLlmKinds] = {}, xfer[kLlmKinds] = {0, 0, 0, 0, 1};
  auto one_two = [](std::int64_t s) { return s == 0 ? std::int64_t{1} : std::int64_t{2}; };
  auto one = [](std::int64_t) { return std::int64_t{1}; };
  LlmPath p = llm_schedule(2, 3, layer, none, xfer, one_two);
  EXPECT_EQ(p.at, 73);
  EXPECT_EQ(p.kind[0], 70);
  EXPECT_EQ(p.kind[4], 3);
  // Equal stages of 10, two micro-batches: the first reaches stage 1 at 11 and leaves it at
  // 21; the second's transfer waits for stage 1 to be free (21), so it ends at 32.
  EXPECT_EQ(llm_schedule(2, 2, layer, none, xfer, one).at, 32);
  // One stage: its micro-batches in turn.
  EXPECT_EQ(llm_schedule(1, 5, layer, none, xfer, one).at, 50);
  // Four stages, one micro-batch: every stage and transfer in turn, the head (2 ps of vector
  // kernels, 2 of GEMMs) on the last.
  const ps_t mixed[kLlmKinds] = {3, 1, 0, 0, 0}, head[kLlmKinds] = {2, 0, 2, 0, 0};
  p = llm_schedule(4, 1, mixed, head, xfer, one);
  EXPECT_EQ(p.at, 4 + 4 + 4 + 8 + 3);
  EXPECT_EQ(p.kind[0], 14);
  EXPECT_EQ(p.kind[1], 4);
  EXPECT_EQ(p.kind[2], 2);
  EXPECT_EQ(p.kind[4], 3);
  // Times stop at the guard rather than wrap.
  const ps_t huge[kLlmKinds] = {kTimeLimitPs / 3, 0, 0, 0, 0};
  EXPECT_EQ(llm_schedule(1, 7, huge, none, xfer, one).at, kTimeLimitPs);
}

TEST(LlmPipeline, TransferModelEqualsReferenceOnRandomMachines) {
  std::mt19937_64 rng(20261202);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const HwConfig base = unittest::topo("default.yaml").hw();
  int run = 0, by_level[4] = {0, 0, 0, 0}, by_topology[3] = {0, 0, 0};
  for (int i = 0; i < 3000 && run < 1000; ++i) {
    LlmSendConfig c{};
    c.hw = base;
    HwConfig& h = c.hw;
    h.sips = pick(2, 8);
    h.sip_topology = static_cast<SipTopology>(pick(0, 2));
    h.cube_rows = pick(1, 3), h.cube_cols = pick(1, 3), h.pe_rows = pick(1, 2), h.pe_cols = pick(1, 2);
    h.sip_link.bandwidth_gbps = pick(1, 400), h.sip_link.latency_ns = pick(0, 1500);
    h.hbm_bandwidth_gbps = pick(1, 1500), h.hbm_latency_ns = pick(0, 300);
    h.dma_engines = pick(1, 4), h.dma_bandwidth_gbps = pick(1, 400);
    c.level = pick(0, kCollLevels - 1);
    const std::int64_t P = h.pes_per_cube(), C = h.cubes_per_sip();
    switch (static_cast<CollLevel>(c.level)) {
      case CollLevel::pe: c.stage_sips = 1, c.ranks = pick(1, P); break;
      case CollLevel::cube: c.stage_sips = 1, c.ranks = pick(1, C); break;
      case CollLevel::sip: c.stage_sips = c.ranks = pick(1, h.sips / 2); break;
      case CollLevel::hier: {  // part of a cube, whole cubes of one SIP, or whole SIPs
        const int shape = static_cast<int>(pick(0, 2));
        c.stage_sips = shape == 2 ? pick(1, h.sips / 2) : 1;
        c.ranks = shape == 0 ? pick(1, P) : shape == 1 ? P * pick(1, C) : c.stage_sips * C * P;
        break;
      }
    }
    c.bytes = 2 * pick(1, 1 << 16);
    if (llm_send_check(c) != kLlmSendOk) continue;
    ++run;
    ++by_level[c.level];
    ++by_topology[static_cast<int>(h.sip_topology)];
    const LlmSendResult m = llm_send_model(c), r = llm_send_reference(c);
    ASSERT_EQ(m.latency_ps, r.latency_ps) << "sips " << h.sips << " topology " << static_cast<int>(h.sip_topology) << " level "
                                          << c.level << " stage " << c.stage_sips << " ranks " << c.ranks << " bytes " << c.bytes;
    EXPECT_EQ(m.hbm_read_bytes, r.hbm_read_bytes);
    EXPECT_EQ(m.hbm_write_bytes, r.hbm_write_bytes);
    EXPECT_EQ(m.link_bytes, r.link_bytes);
  }
  EXPECT_GE(run, 1000);
  for (int n : by_level) EXPECT_GT(n, 150);
  for (int n : by_topology) EXPECT_GT(n, 150);
}

}  // namespace
}  // namespace kb
