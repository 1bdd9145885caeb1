// Pipeline stages of a whole model's step (docs/model.md section 13.8): the activation
// transfer between stages, and the schedule of stages and micro-batches.
//
// Transfer. After stage s has run a micro-batch, its activation (the micro-batch's tokens x
// hidden, fp16) goes from its last SIP's cube 0 PE 0 to every rank of stage s + 1 (PE 0 of
// each cube of its SIP, tp over cubes; of cube 0 of each of its SIPs, tp over SIPs), one
// HBM-to-HBM copy after another. Stages are equal and the links symmetric, so every
// boundary's transfer takes the same time: it is timed once, between stages 0 and 1.
//
// Schedule. Stage s runs micro-batch j (its layers, kernels in turn; the last stage adds the
// head) once it is free and micro-batch j has arrived; a transfer is a rendezvous of the two
// stages: it starts when the sender has run the micro-batch and the receiver is free, and
// neither stage runs a kernel while it lasts. So no kernel overlaps a transfer or another
// stage's kernel on shared hardware (stages hold disjoint SIPs), and the step is exact from
// the kernels' and the transfer's own times, on both engines (ADR 0019).
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/network.h"
#include "../../common/units.h"
#include "../../sim/transfer.h"
#include "../collective/collective.h"

namespace kb {

// The transfer between stages 0 and 1 of a mapping: `stage_sips` SIPs a stage, `ranks` tp
// ranks at `level` (PEs of a cube, cubes, SIPs, or hier: the first PEs of the stage), `bytes`
// a rank.
struct LlmSendConfig {
  HwConfig hw;
  std::int64_t stage_sips, level, ranks, bytes;
};

struct LlmSendResult {
  std::int32_t status;
  std::int32_t reserved;
  ps_t latency_ps;
  std::int64_t hbm_read_bytes, hbm_write_bytes, link_bytes;  // link bytes: per hop
  std::int64_t link_bytes_pe, link_bytes_cube, link_bytes_sip;  // per level, as the engine counts (no out-ports)
};

enum LlmSendStatus : std::int32_t { kLlmSendOk = 0, kLlmSendBadField, kLlmSendTimeOverflow };

// The sender and destination r's nodes.
KB_HD inline net::Node llm_send_from(const LlmSendConfig& c) { return net::Node{c.stage_sips - 1, 0, 0}; }
KB_HD inline net::Node llm_send_to(const LlmSendConfig& c, std::int64_t r) {
  const std::int64_t P = c.hw.pes_per_cube(), C = c.hw.cubes_per_sip();
  switch (static_cast<CollLevel>(c.level)) {
    case CollLevel::pe: return net::Node{c.stage_sips, 0, r};
    case CollLevel::cube: return net::Node{c.stage_sips, r, 0};
    case CollLevel::sip: return net::Node{c.stage_sips + r, 0, 0};
    case CollLevel::hier: break;
  }
  return net::Node{c.stage_sips + r / (C * P), (r / P) % C, r % P};  // the stage's PEs in (SIP, cube, PE) order
}
// The HBM write ports the transfer uses in a receiving cube (ADR 0002: the launch's users
// share the cube): one per rank there, the ranks of a cube being PEs of it (pe, hier).
KB_HD inline std::int64_t llm_send_receivers(const LlmSendConfig& c) {
  const std::int64_t P = c.hw.pes_per_cube();
  if (c.level == static_cast<std::int64_t>(CollLevel::pe)) return c.ranks;
  if (c.level == static_cast<std::int64_t>(CollLevel::hier)) return c.ranks < P ? c.ranks : P;
  return 1;
}
// Whether `ranks` tp ranks of `level` fill a stage of `stage_sips` SIPs as llm_ranks places them.
KB_HD inline bool llm_send_ranks_fit(const LlmSendConfig& c) {
  const std::int64_t P = c.hw.pes_per_cube(), C = c.hw.cubes_per_sip(), t = c.ranks;
  switch (static_cast<CollLevel>(c.level)) {
    case CollLevel::pe: return t <= P && c.stage_sips == 1;
    case CollLevel::cube: return t <= C && c.stage_sips == 1;
    case CollLevel::sip: return t == c.stage_sips;
    case CollLevel::hier: return t <= c.stage_sips * C * P && (t <= P || t % P == 0) && (t <= C * P || t % (C * P) == 0);
  }
  return false;
}

KB_HD inline std::int32_t llm_send_check(const LlmSendConfig& c) {
  if (!hw_fits(c.hw) || c.hw.hbm_tenants > 1 || c.stage_sips < 1 || 2 * c.stage_sips > c.hw.sips || c.bytes < 2 || c.bytes % 2 != 0 ||
      c.bytes > kCollMaxBytes || c.ranks < 1 || c.level < 0 || c.level >= kCollLevels || !llm_send_ranks_fit(c))
    return kLlmSendBadField;
  if (transfer_overflows(c.bytes, llm_send_receivers(c))) return kLlmSendTimeOverflow;
  // Every copy's time, at most: its hops' latencies and its slowest hop.
  const ps_t port = shared_transfer_ps(c.bytes, c.hw.dma_gbps(), c.hw.hbm_bandwidth_gbps, llm_send_receivers(c));
  ps_t total = 0;
  for (std::int64_t i = 0; i < c.ranks; ++i) {
    ps_t slowest = port, latency = sat_mul(2 * c.hw.hbm_latency_ns, kPsPerNs);
    net::for_each_hop(c.hw, llm_send_from(c), llm_send_to(c, i), [&](const net::Hop& hop) {
      slowest = imax(slowest, transfer_overflows(c.bytes, 1) ? kTimeLimitPs : transfer_ps(c.bytes, hop.bandwidth_gbps));
      latency = sat_add(latency, sat_mul(hop.latency_ns, kPsPerNs));
    });
    total = sat_add(total, sat_add(latency, slowest));
  }
  if (total >= kTimeLimitPs / 4) return kLlmSendTimeOverflow;
  return kLlmSendOk;
}

// One copy, alone: every hop of the route (a DMA read at the sender's HBM share, the links,
// the write through the receiver's HBM port at its share) held for the slowest one; the
// copy ends the hops' latencies after it starts, plus that slowest time (cut-through,
// docs/model.md section 6). The sender's cube has one HBM user (its queue); a receiving
// cube has one per rank in it (their write ports: llm_send_receivers). The transfer agent's
// closed form of a copy alone (xfer::alone_ps) times each.
KB_HD inline LlmSendResult llm_send_model(const LlmSendConfig& c) {
  LlmSendResult r{};
  r.status = llm_send_check(c);
  if (r.status != kLlmSendOk) return r;
  const std::int64_t receivers = llm_send_receivers(c);
  for (std::int64_t i = 0; i < c.ranks; ++i)
    r.latency_ps += xfer::alone_ps(c.hw, llm_send_from(c), llm_send_to(c, i), c.bytes, 1, receivers, [&](const net::Hop& hop) {
      r.link_bytes += c.bytes;
      switch (hop.kind) {
        case net::LinkKind::ipcq_in: r.link_bytes_pe += c.bytes; break;
        case net::LinkKind::cube_link: r.link_bytes_cube += c.bytes; break;
        case net::LinkKind::sip_link: r.link_bytes_sip += c.bytes; break;
        default: break;  // a sender's out-port: the copy is counted at the in-port
      }
    });
  r.hbm_read_bytes = r.hbm_write_bytes = c.ranks * c.bytes;
  return r;
}

// ---- the schedule ----------------------------------------------------------------------

constexpr int kLlmKinds = 8;  // GEMMs, attention, vector kernels, allreduces, transfers; MoE: routed experts, dispatch, combine

// A time and the kernels' time by kind along the chain that sets it (its critical path).
// Sums stop at kTimeLimitPs (a step that long is refused as too_large).
struct LlmPath {
  ps_t at;
  ps_t kind[kLlmKinds];
};
KB_HD inline LlmPath llm_later(const LlmPath& a, const LlmPath& b) { return b.at > a.at ? b : a; }  // ties: the first
KB_HD inline LlmPath llm_after(LlmPath p, const ps_t* kinds, std::int64_t times = 1) {
  for (int k = 0; k < kLlmKinds; ++k) {
    const ps_t t = sat_mul(times, kinds[k]);
    p.at = sat_add(p.at, t), p.kind[k] = sat_add(p.kind[k], t);
  }
  return p;
}

// The step: `pp` stages, `mb` micro-batches in order. Stage s runs a micro-batch in
// layers(s) layers of `layer` each (by kind), the last stage then the head (`head`); a
// transfer takes `xfer`. Returns the end of the last micro-batch on the last stage, with its
// critical path.
// A stage's layers of each kind: `main` of the first (`layer`), `dense` of the second.
struct LlmStageLayers {
  std::int64_t main, dense;
};

// The same with two kinds of layer (a MoE model's MoE and dense layers): stage s runs
// layers(s).dense layers of `dense` each and layers(s).main of `layer` each.
template <class Layers>
KB_HD LlmPath llm_schedule_kinds(std::int64_t pp, std::int64_t mb, const ps_t* layer, const ps_t* dense, const ps_t* head,
                                 const ps_t* xfer, const Layers& layers) {
  LlmPath free_at[kLlmMaxStages] = {};
  for (std::int64_t j = 0; j < mb; ++j) {
    LlmPath arrive{};
    for (std::int64_t s = 0; s < pp; ++s) {
      const LlmStageLayers n = layers(s);
      LlmPath done = llm_after(llm_after(llm_later(free_at[s], arrive), dense, n.dense), layer, n.main);
      if (s + 1 < pp) {
        // The rendezvous: the sender done, the receiver free (its last micro-batch sent on).
        arrive = llm_after(llm_later(done, free_at[s + 1]), xfer);
        free_at[s] = arrive;
      } else {
        free_at[s] = llm_after(done, head);
      }
    }
  }
  return free_at[pp - 1];
}
template <class Layers>
KB_HD LlmPath llm_schedule(std::int64_t pp, std::int64_t mb, const ps_t* layer, const ps_t* head, const ps_t* xfer,
                           const Layers& layers) {
  const ps_t none[kLlmKinds] = {};
  return llm_schedule_kinds(pp, mb, layer, none, head, xfer, [&](std::int64_t s) { return LlmStageLayers{layers(s), 0}; });
}

}  // namespace kb
