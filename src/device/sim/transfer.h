// The transfer agent (ADR 0033): a copy of `nb` bytes from one PE's buffer to another's, as
// ADR 0007 (rules 3-6) times it, becomes its ops here and nowhere else on the device side.
//
// A transfer's ops, in the sender's program order:
//   with HBM ends, the read on the sender's DMA queue (at its cube's HBM share);
//   each hop of the route, cut-through: the next ready once this one's head has crossed
//   (its start plus its latency);
//   with HBM ends, the write through the receiver's HBM write port (at the receiver's share).
// With HBM ends the ops are one chain: each holds its resource for the slowest one's time
// (rule 5, `stream` and `chain_ps`, the rule's one device copy). A receiver that adds the
// values in runs one more op on its vector engine, or with HBM ends a second chain: read both
// operands (DMA queue), add (vector engine), write the sum (its HBM write port).
//
// How an op is served is the caller's policy, given to the agent (`send`, `reduce`): build
// the event simulation's ops (the collective's SimT), serve each at once by the fast rule (the
// general walk), by a closed form's order (the ring's walk), or alone (`Alone`: the llm
// family's stage transfer). A policy says when an op is ready and what its resource's state
// is; the agent says which ops a transfer is, in which order, on which resource, and for how
// long each holds it. The reference engine expands transfers in its own runtime
// (src/host/runtime/pe_program.cpp); parity compares the two.
#pragma once

#include <cstdint>

#include "../common/hw.h"
#include "../common/kb_hd.h"
#include "../common/network.h"
#include "../common/units.h"
#include "../models/vector.h"

namespace kb {
namespace xfer {

// ---- costs --------------------------------------------------------------------------------

// An HBM access of `nb` bytes by a PE whose cube's bandwidth `sharers` ports share (ADR 0007
// rule 6).
KB_HD inline ps_t hbm_ps(const HwConfig& h, std::int64_t nb, std::int64_t sharers) {
  return shared_transfer_ps(nb, h.dma_gbps(), h.hbm_bandwidth_gbps, sharers);
}
// A hop of `nb` bytes over a link of `gbps`.
KB_HD inline ps_t hop_ps(std::int64_t nb, std::int64_t gbps) { return transfer_ps(nb, gbps); }
// An add of `values` f16 values on a vector engine.
KB_HD inline ps_t add_ps(const HwConfig& h, std::int64_t values) {
  return cycles_ps(vector_cycles(VecOp::add, 1, values, h.vector_lanes), h.clock_mhz);
}

// ---- the chain rule (ADR 0007 rule 5) -----------------------------------------------------

// The ops busy[0..n) of one chain with an HBM end each hold their resource for the slowest's
// time. The event simulator (EventSim::streams) and the host replay apply it to recorded ops.
KB_HD inline void stream(ps_t* busy, std::int32_t n) {
  ps_t slowest = 0;
  for (std::int32_t k = 0; k < n; ++k) slowest = imax(slowest, busy[k]);
  for (std::int32_t k = 0; k < n; ++k) busy[k] = slowest;
}
// A transfer's chain, without building its ops: the slowest of its HBM read at the sender's
// share, its hops (`hops(visit)` calls visit(ps_t) with each hop's time) and its HBM write at
// the receiver's share.
template <class Hops>
KB_HD KB_INLINE ps_t chain_ps(const HwConfig& h, std::int64_t nb, std::int64_t src_sharers, std::int64_t dst_sharers,
                    Hops&& hops) {
  ps_t slowest = imax(hbm_ps(h, nb, src_sharers), hbm_ps(h, nb, dst_sharers));
  hops([&](ps_t t) { slowest = imax(slowest, t); });
  return slowest;
}
// A receiver's add chain with HBM ends, op by op at its share: read both operands (4 bytes a
// value), add, write the sum (2 bytes a value).
KB_HD inline ps_t add_op_ps(const HwConfig& h, std::int64_t values, std::int64_t sharers, int op) {
  return op == 1 ? add_ps(h, values) : hbm_ps(h, (op == 0 ? 4 : 2) * values, sharers);
}
// Its chain: the slowest of the three.
KB_HD inline ps_t add_chain_ps(const HwConfig& h, std::int64_t values, std::int64_t sharers) {
  return imax(imax(add_op_ps(h, values, sharers, 0), add_op_ps(h, values, sharers, 1)), add_op_ps(h, values, sharers, 2));
}

// ---- the ops of a transfer ----------------------------------------------------------------

// Which op of a transfer: the sender's HBM read, a hop (`hop`: its index on the route), the
// receiver's HBM write; `last`: the op whose end is the transfer's landing.
enum class Role : std::int8_t { read, hop, write };
struct Step {
  Role role;
  std::int32_t hop;
  bool last;
};
// The ops of a transfer over `hops` links: `send`'s `from` counts them 0 .. op_count - 1.
KB_HD constexpr std::int32_t op_count(std::int32_t hops, bool hbm) { return hops + (hbm ? 2 : 0); }

// What a policy answers for each op: go on with the next, stop after this one (the caller
// resumes the transfer at the next op later), or fail (the policy cannot time it; its caller
// falls back to another evaluator).
enum class Go : std::int8_t { on, pause, fail };

// The kOwn chain: each op holds its resource for its own time (no HBM end, or a policy such as
// the event simulator's that applies the chain rule to the built ops itself: `stream`).
constexpr ps_t kOwn = -1;

// The agent: the transfer's ops from op `from` on, each handed to the policy in program order:
// p.serve(step, busy) for its HBM read and write, p.serve(step, hop, busy) for a hop (`hop`:
// what the route visits), where busy is what the op holds its resource for: `chain`, or where
// that is kOwn the op's own time, p.own_ps(step[, hop]). `route(k0, visit)` visits the route's
// hops from hop k0 on, in order, as visit(k, hop) until visit returns false; `hops` is their
// number. Returns the last answer: on (every op served), pause (resume at the op after the
// paused one: op indices count the read first, with HBM ends) or fail.
template <class Policy, class Route>
KB_HD KB_INLINE Go send(Policy& p, Route&& route, std::int32_t hops, bool hbm, ps_t chain, std::int32_t from = 0) {
  Go g = Go::on;
  std::int32_t k = from;
  if (hbm && k == 0) {
    const Step s{Role::read, -1, false};
    g = p.serve(s, chain != kOwn ? chain : p.own_ps(s));
    if (g != Go::on) return g;
    ++k;
  }
  const std::int32_t h0 = k - (hbm ? 1 : 0);
  if (h0 < hops) {
    route(h0, [&](std::int32_t i, auto& hop) {
      const Step s{Role::hop, i, !hbm && i + 1 == hops};
      g = p.serve(s, hop, chain != kOwn ? chain : p.own_ps(s, hop));
      return g == Go::on;
    });
    if (g != Go::on) return g;
  }
  if (hbm) {
    const Step s{Role::write, hops, true};
    g = p.serve(s, chain != kOwn ? chain : p.own_ps(s));
  }
  return g;
}
// The route from `a` to `b` as `send` visits it, walked on the fly (net::for_each_hop).
struct WalkedRoute {
  const HwConfig& h;
  const net::Node &a, &b;
  template <class Visit>
  KB_HD KB_INLINE void operator()(std::int32_t k0, Visit&& visit) const {
    std::int32_t k = 0;
    bool go = true;
    net::for_each_hop(h, a, b, [&](const net::Hop& hop) {
      if (go && k >= k0) go = visit(k, hop);
      ++k;
    });
  }
};

// The receiver's add of `values` values: with SRAM ends one op on its vector engine (its own
// time add_ps); with HBM ends a chain of three (Role::read: both operands on its DMA queue;
// Role::hop: the add on its vector engine; Role::write: the sum through its HBM write port),
// each holding add_chain_ps, or with `own` (a policy that applies the chain rule itself) its
// own time. The policy serves them as p.serve_add(step, busy). `reduce_at`: the same ops at
// a busy time the caller has (add_ps, or add_chain_ps with HBM ends; the walks memoise it).
template <class Policy>
KB_HD KB_INLINE Go reduce_at(Policy& p, bool hbm, ps_t busy) {
  if (!hbm) return p.serve_add(Step{Role::hop, 0, true}, busy);
  Go g = p.serve_add(Step{Role::read, -1, false}, busy);
  if (g == Go::on) g = p.serve_add(Step{Role::hop, 0, false}, busy);
  if (g == Go::on) g = p.serve_add(Step{Role::write, 1, true}, busy);
  return g;
}
template <class Policy>
KB_HD Go reduce(Policy& p, const HwConfig& h, std::int64_t values, bool hbm, std::int64_t sharers, bool own = false) {
  if (!hbm || !own) return reduce_at(p, hbm, hbm ? add_chain_ps(h, values, sharers) : add_ps(h, values));
  Go g = p.serve_add(Step{Role::read, -1, false}, add_op_ps(h, values, sharers, 0));
  if (g == Go::on) g = p.serve_add(Step{Role::hop, 0, false}, add_op_ps(h, values, sharers, 1));
  if (g == Go::on) g = p.serve_add(Step{Role::write, 1, true}, add_op_ps(h, values, sharers, 2));
  return g;
}

// A transfer alone on its resources (nothing else claims them while it runs): it lands its
// ops' latencies after it starts, plus the chain's busy time, the slowest op's (cut-through,
// docs/model.md section 6): `send`'s closed form for families that time one copy at a time.
// `each(hop)` is called for each hop.
template <class Each>
struct Alone {
  const HwConfig& h;
  std::int64_t nb, src_sharers, dst_sharers;
  Each& each;
  ps_t latency = 0, held = 0;
  KB_HD ps_t own_ps(const Step&, const net::Hop& hop) const { return hop_ps(nb, hop.bandwidth_gbps); }
  KB_HD ps_t own_ps(const Step& s) const { return hbm_ps(h, nb, s.role == Role::read ? src_sharers : dst_sharers); }
  KB_HD Go serve(const Step&, const net::Hop& hop, ps_t busy) {
    latency += hop.latency_ns * kPsPerNs;
    each(hop);
    held = imax(held, busy);
    return Go::on;
  }
  KB_HD Go serve(const Step&, ps_t busy) {
    latency += h.hbm_latency_ns * kPsPerNs;
    held = imax(held, busy);
    return Go::on;
  }
};
// A copy of `nb` bytes from `a`'s HBM (at `src_sharers`) to `b`'s (at `dst_sharers`), alone:
// the time it takes.
template <class Each>
KB_HD ps_t alone_ps(const HwConfig& h, const net::Node& a, const net::Node& b, std::int64_t nb, std::int64_t src_sharers,
                    std::int64_t dst_sharers, Each&& each) {
  Alone<Each> p{h, nb, src_sharers, dst_sharers, each};
  send(p, WalkedRoute{h, a, b}, static_cast<std::int32_t>(net::hop_count(h, a, b)), true, kOwn);
  return p.latency + p.held;
}

}  // namespace xfer
}  // namespace kb
