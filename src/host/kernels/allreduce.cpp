#include "allreduce.h"

#include "../common/error.h"

namespace kb {

AllreduceResult run_ring_allreduce(const TopologySpec& topo, const RingAllreduce& a,
                                   const std::vector<std::vector<float>>& inputs) {
  const std::int64_t p = a.ranks;
  if (p < 2 || p > topo.sips) throw InputError("ring allreduce: ranks must be in 2.." + std::to_string(topo.sips));
  if (topo.sip_topology != SipTopology::ring) throw InputError("ring allreduce: the SIPs must form a ring");
  const std::int64_t values = a.bytes / 2;
  if (a.bytes < 2 * p || a.bytes % (2 * p) != 0)
    throw InputError("ring allreduce: " + std::to_string(a.bytes) + " bytes are not " + std::to_string(p) +
                     " chunks of whole f16 values");
  const bool data = !inputs.empty();
  if (data && (static_cast<std::int64_t>(inputs.size()) != p))
    throw InputError("ring allreduce: one input per rank");
  const std::int64_t chunk = values / p, chunk_bytes = 2 * chunk;

  RuntimeContext ctx(topo, ContextOptions{data});
  const LaunchGrid grid{p, 1, 1};
  // Every rank holds its data as p chunk buffers, and one inbox per reduce-scatter step (a
  // step's inbox is never rewritten, so no step waits for the previous one to be read).
  std::vector<SymBuf> part, inbox;
  for (std::int64_t c = 0; c < p; ++c) part.push_back(ctx.symmetric(chunk_bytes, DType::f16, grid, "chunk" + std::to_string(c)));
  for (std::int64_t s = 0; s + 1 < p; ++s) inbox.push_back(ctx.symmetric(chunk_bytes, DType::f16, grid, "inbox" + std::to_string(s)));
  const Channel ring = ctx.channel("ring");
  auto rank_of = [](std::int64_t r) { return Rank{static_cast<std::int32_t>(r), 0, 0}; };
  AllreduceResult res;
  ctx.launch("ring allreduce", grid, [&](PeProgram& prog) {
    const std::int64_t r = prog.rank().sip, next = (r + 1) % p, prev = (r + p - 1) % p;
    std::vector<OpId> ready(static_cast<std::size_t>(p), engine::kNoOp);  // the last op that wrote each chunk here
    // Reduce-scatter: in step s, send chunk (r - s), receive chunk (r - s - 1) and add it in.
    for (std::int64_t s = 0; s + 1 < p; ++s) {
      const std::int64_t send = ((r - s) % p + p) % p, recv = ((r - s - 1) % p + p) % p;
      prog.send(ring, prog.local(part[static_cast<std::size_t>(send)]), rank_of(next),
                prog.at(inbox[static_cast<std::size_t>(s)], rank_of(next)), chunk_bytes, {ready[static_cast<std::size_t>(send)]});
      const OpId got = prog.recv(ring, rank_of(prev));
      ready[static_cast<std::size_t>(recv)] =
          prog.vector_add(prog.local(part[static_cast<std::size_t>(recv)]), prog.local(inbox[static_cast<std::size_t>(s)]),
                          chunk, {got, ready[static_cast<std::size_t>(recv)]});
    }
    // All-gather: rank r now holds the sum of chunk (r + 1); in step s it sends chunk
    // (r + 1 - s) into the next rank's copy of it, and waits for chunk (r - s).
    for (std::int64_t s = 0; s + 1 < p; ++s) {
      const std::int64_t send = ((r + 1 - s) % p + p) % p, recv = ((r - s) % p + p) % p;
      prog.send(ring, prog.local(part[static_cast<std::size_t>(send)]), rank_of(next),
                prog.at(part[static_cast<std::size_t>(send)], rank_of(next)), chunk_bytes, {ready[static_cast<std::size_t>(send)]});
      ready[static_cast<std::size_t>(recv)] = prog.recv(ring, rank_of(prev));
    }
  });
  if (data) {
    // Inputs are placed straight into the chunk buffers (the runtime has no host writes; the
    // collective's timing does not include loading them).
    for (std::int64_t r = 0; r < p; ++r)
      for (std::int64_t c = 0; c < p; ++c) ctx.poke(part[static_cast<std::size_t>(c)], rank_of(r), inputs[static_cast<std::size_t>(r)], c * chunk, chunk);
  }
  res.report = ctx.run();
  if (data) {
    res.values.assign(static_cast<std::size_t>(p), std::vector<float>(static_cast<std::size_t>(values)));
    for (std::int64_t r = 0; r < p; ++r)
      for (std::int64_t c = 0; c < p; ++c) {
        const std::vector<float> v = ctx.peek(part[static_cast<std::size_t>(c)], rank_of(r));
        for (std::int64_t i = 0; i < chunk; ++i)
          res.values[static_cast<std::size_t>(r)][static_cast<std::size_t>(c * chunk + i)] = v[static_cast<std::size_t>(i)];
      }
  }
  return res;
}

}  // namespace kb
