#include "allreduce_program.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "../../common/error.h"

namespace kb {

const char* to_string(CollLevel l) {
  const auto i = static_cast<std::int64_t>(l);
  return i >= 0 && i < kCollLevels ? kCollLevelNames[i] : "?";
}

const char* to_string(CollAlgo a) {
  const auto i = static_cast<std::int64_t>(a);
  return i >= 0 && i < kCollAlgos ? kCollAlgoNames[i] : "?";
}

namespace {

// One (step, chunk) group of the schedule at a time, as coll_schedule_all hands it out, with
// the phase (its single-level config) it belongs to and the barriers between phases.
struct Group {
  std::vector<std::pair<std::int64_t, CollXfer>> xfers;
  std::function<void(const std::vector<std::pair<std::int64_t, CollXfer>>&)> done;
  std::function<void()> on_barrier;
  AllreduceConfig sub{};
  void phase(const AllreduceConfig& c) { sub = c; }
  void xfer(std::int64_t ch, const CollXfer& x) { xfers.emplace_back(ch, x); }
  void flush() {
    done(xfers);
    xfers.clear();
  }
  void barrier() {
    if (on_barrier) on_barrier();
  }
};

Rank rank_of(const AllreduceConfig& c, std::int64_t r) {
  const net::Node n = coll_node(c, r);
  return Rank{static_cast<std::int32_t>(n.sip), static_cast<std::int32_t>(n.cube), static_cast<std::int32_t>(n.pe)};
}

// With channels, every channel's PE of each rank (coll_node): cube g's PEs 0..channels-1 of
// each cube; the channels' cubes (and PEs past the cubes) of each SIP.
LaunchGrid grid_of(const AllreduceConfig& c) {
  const std::int64_t n = c.channels, cubes = c.hw.cubes_per_sip();
  if (c.level == 0) return LaunchGrid{1, 1, c.ranks};
  if (c.level == 1) return LaunchGrid{1, c.ranks, n};
  if (c.level == 2) return n <= cubes ? LaunchGrid{c.ranks, n, 1} : LaunchGrid{c.ranks, cubes, n / cubes};
  CollHier d;
  coll_hier_dims(c, &d);
  return LaunchGrid{d.sips, d.cubes, d.pes};
}

// The rank (coll_vranks: channel g's rank i is g * ranks + i) a PE of the launch is.
std::int64_t index_of(const AllreduceConfig& c, const Rank& r) {
  if (c.channels > 1 && c.level == 1) return r.pe * c.ranks + r.cube;
  if (c.channels > 1 && c.level == 2) return (r.pe * c.hw.cubes_per_sip() + r.cube) * c.ranks + r.sip;
  const LaunchGrid g = grid_of(c);
  return (r.sip * g.cubes + r.cube) * g.pes + r.pe;
}

// The rank of channel `g` whose values are rank `r`'s piece k of a chunk: pieces [g * ranks,
// (g + 1) * ranks) are channel g's.
std::int64_t holder(const AllreduceConfig& c, std::int64_t r, std::int64_t k) { return (k / c.ranks) * c.ranks + r; }

// An op that completes when all of `ops` have (kNoOp when there are none).
OpId all_of(PeProgram& prog, const std::vector<OpId>& ops) {
  OpId acc = engine::kNoOp;
  for (OpId o : ops) {
    if (o == engine::kNoOp || o == acc) continue;
    acc = acc == engine::kNoOp ? o : prog.wait({acc, o});
  }
  return acc;
}

// Where the values live: SRAM (a symmetric buffer and its inboxes) or HBM (per SIP, a tensor
// of one row per rank on it, and one of `inboxes` rows per rank).
struct Buffers {
  bool hbm = false;
  SymBuf data, inbox;
  std::vector<Tensor> hdata, hinbox;  // per SIP used
  std::int64_t values = 0, inboxes = 1;
};

// Data mode (`seed` > 0): HBM buffers start as random values from seed + the SIP.
Buffers make_buffers(RuntimeContext& ctx, const AllreduceConfig& c, std::uint64_t seed) {
  Buffers b;
  b.hbm = c.buffer == static_cast<std::int64_t>(CollBuffer::hbm);
  b.values = coll_values(c);
  b.inboxes = coll_total_inboxes(c);
  const LaunchGrid grid = grid_of(c);
  if (!b.hbm) {
    b.data = ctx.symmetric(c.bytes, DType::f16, grid, "data");
    if (b.inboxes > 0) b.inbox = ctx.symmetric(b.inboxes * c.bytes, DType::f16, grid, "inbox");  // an all-gather's: none
    return b;
  }
  // Per SIP of the launch, one row per rank on it: split over its cubes, then their PEs.
  const std::int64_t rows = grid.cubes * grid.pes;
  for (std::int64_t s = 0; s < grid.sips; ++s) {
    Placement pl;
    pl.sip = static_cast<std::int32_t>(s);
    if (grid.cubes > 1) pl.cube = Split::row_wise, pl.cubes = grid.cubes;
    if (grid.pes > 1) pl.pe = Split::row_wise, pl.pes = grid.pes;
    const std::string sfx = grid.sips > 1 ? " sip" + std::to_string(s) : "";
    b.hdata.push_back(seed ? ctx.random({rows, 1, b.values}, DType::f16, pl, "data" + sfx, seed + static_cast<std::uint64_t>(s))
                           : ctx.zeros({rows, 1, b.values}, DType::f16, pl, "data" + sfx));
    if (b.inboxes > 0) b.hinbox.push_back(ctx.zeros({rows, b.inboxes, b.values}, DType::f16, pl, "inbox" + sfx));
  }
  return b;
}

// Rank r's HBM tensors are those of its SIP, and its row in them.
std::size_t hbm_tensor(const AllreduceConfig& c, std::int64_t r) { return static_cast<std::size_t>(coll_node(c, r).sip); }
Box hbm_box(const AllreduceConfig& c, std::int64_t r, std::int64_t slot, std::int64_t lo, std::int64_t len) {
  const LaunchGrid g = grid_of(c);
  const net::Node n = coll_node(c, r);
  return Box{{n.cube * g.pes + n.pe, slot, lo}, {1, 1, len}};
}

// The library call: every rank walks the schedule and issues its part of each transfer; a
// transfer's arrival is a signal the receiver waits on, whichever rank runs first.
void launch_collective(RuntimeContext& ctx, const AllreduceConfig& c, const Buffers& b) {
  std::int64_t total = 0;
  {
    Group count;
    count.done = [&](const std::vector<std::pair<std::int64_t, CollXfer>>& g) {
      total += static_cast<std::int64_t>(g.size());
    };
    coll_schedule_all(c, count);
  }
  std::vector<Signal> landed;
  landed.reserve(static_cast<std::size_t>(total));
  for (std::int64_t t = 0; t < total; ++t) landed.push_back(ctx.signal("transfer " + std::to_string(t)));

  ctx.launch("allreduce", grid_of(c), [&](PeProgram& prog) {
    const std::int64_t me = index_of(c, prog.rank());
    Group group;
    // The last op that wrote each piece of the current phase here; at a barrier every piece's
    // writer becomes one op that waits for all this rank did (the next phase's pieces differ).
    std::vector<OpId> writer(static_cast<std::size_t>(c.chunks * kCollMaxRanks), engine::kNoOp), mine;
    auto slot_of = [&](std::int64_t ch, std::int64_t k) { return static_cast<std::size_t>(ch * coll_vranks(group.sub) + k); };
    auto writers = [&](std::int64_t ch, const CollXfer& x) {
      std::vector<OpId> w;
      for (std::int64_t k = x.k0; k < x.k1; ++k) w.push_back(writer[slot_of(ch, k)]);
      return all_of(prog, w);
    };
    auto wrote = [&](std::int64_t ch, const CollXfer& x, OpId op) {
      for (std::int64_t k = x.k0; k < x.k1; ++k) writer[slot_of(ch, k)] = op;
    };
    group.on_barrier = [&]() {
      std::vector<OpId> all(mine);
      all.insert(all.end(), writer.begin(), writer.end());
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      const OpId bar = all_of(prog, all);
      std::fill(writer.begin(), writer.end(), bar);
      mine.clear();
    };
    const SramBuf data = b.hbm ? SramBuf{} : prog.local(b.data);
    const SramBuf inbox = b.hbm || b.inboxes == 0 ? SramBuf{} : prog.local(b.inbox);
    // An all-to-all's piece lands in the receiver's output buffer (inbox 0) at the sender's place.
    const bool alltoall = c.op == static_cast<std::int64_t>(CollOp::alltoall);
    std::int64_t t0 = 0;  // index of the group's first transfer
    group.done = [&](const std::vector<std::pair<std::int64_t, CollXfer>>& g) {
      const AllreduceConfig& sub = group.sub;
      for (std::size_t i = 0; i < g.size(); ++i) {  // sends first
        const std::int64_t ch = g[i].first;
        const CollXfer& x = g[i].second;
        if (x.src != me) continue;
        const std::int64_t lo = coll_piece_lo(sub, ch, x.k0), len = coll_piece_lo(sub, ch, x.k1) - lo;
        const bool to_inbox = x.reduce || alltoall;
        const std::int64_t dlo = alltoall ? coll_piece_lo(sub, ch, x.src) : lo;  // where it lands
        const std::int64_t at = to_inbox ? x.slot * b.values + dlo : dlo;
        const Rank to = rank_of(c, x.dst);
        OpId op;
        if (b.hbm) {
          const std::size_t td = hbm_tensor(c, x.dst);
          op = prog.copy(b.hdata[hbm_tensor(c, x.src)], hbm_box(c, x.src, 0, lo, len), to,
                         to_inbox ? b.hinbox[td] : b.hdata[td], hbm_box(c, x.dst, to_inbox ? x.slot : 0, dlo, len),
                         {writers(ch, x)});
        } else {
          op = prog.copy(prog.slice(data, lo, len), to, prog.slice(prog.at(to_inbox ? b.inbox : b.data, to), at, len),
                         2 * len, {writers(ch, x)});
        }
        prog.raise(landed[static_cast<std::size_t>(t0 + static_cast<std::int64_t>(i))], op);
        mine.push_back(op);
      }
      for (std::size_t i = 0; i < g.size(); ++i) {  // then receives
        const std::int64_t ch = g[i].first;
        const CollXfer& x = g[i].second;
        if (x.dst != me) continue;
        const OpId got = prog.wait({landed[static_cast<std::size_t>(t0 + static_cast<std::int64_t>(i))].op});
        mine.push_back(got);
        if (!x.reduce) {
          if (!alltoall) wrote(ch, x, got);  // an all-to-all's lands in the output, which it never sends from
          continue;
        }
        const std::int64_t lo = coll_piece_lo(sub, ch, x.k0), len = coll_piece_lo(sub, ch, x.k1) - lo;
        OpId sum;
        if (b.hbm) {
          const std::size_t td = hbm_tensor(c, x.dst);
          sum = prog.add_hbm(b.hdata[td], hbm_box(c, x.dst, 0, lo, len), b.hinbox[td],
                             hbm_box(c, x.dst, x.slot, lo, len), {got, writers(ch, x)});
        } else {
          sum = prog.vector_add(prog.slice(data, lo, len), prog.slice(inbox, x.slot * b.values + lo, len), len,
                                {got, writers(ch, x)});
        }
        wrote(ch, x, sum);
        mine.push_back(sum);
      }
      t0 += static_cast<std::int64_t>(g.size());
    };
    coll_schedule_all(c, group);
  });
}

// Every rank's values (data mode): its SRAM buffer, or its row of the HBM tensor; `output`:
// an all-to-all's output buffer instead (inbox 0), with the rank's own pieces from its buffer.
std::vector<std::vector<float>> read_back(const RuntimeContext& ctx, const AllreduceConfig& c, const Buffers& b,
                                          bool output = false) {
  const std::int64_t n = coll_vranks(c);
  // Each rank's (each channel's PE's) buffer, and its output buffer.
  auto buffer = [&](std::int64_t r, bool inbox) {
    if (!b.hbm) return ctx.peek(inbox ? b.inbox : b.data, rank_of(c, r));
    const auto& all = ctx.values(inbox ? b.hinbox[hbm_tensor(c, r)] : b.hdata[hbm_tensor(c, r)]);
    const std::int64_t row = hbm_box(c, r, 0, 0, 1).lo[0] * (inbox ? b.inboxes : 1);
    return std::vector<float>(all.begin() + row * b.values, all.begin() + (row + 1) * b.values);
  };
  std::vector<std::vector<float>> at(static_cast<std::size_t>(n)), in(static_cast<std::size_t>(output ? n : 0));
  for (std::int64_t r = 0; r < n; ++r) {
    at[static_cast<std::size_t>(r)] = buffer(r, false);
    if (output) in[static_cast<std::size_t>(r)] = buffer(r, true);
  }
  // Rank r's values: each piece from the channel that holds it; an all-to-all's other ranks'
  // pieces from its output buffer.
  std::vector<std::vector<float>> out(static_cast<std::size_t>(c.ranks), std::vector<float>(static_cast<std::size_t>(b.values)));
  for (std::int64_t r = 0; r < c.ranks; ++r)
    for (std::int64_t ch = 0; ch < c.chunks; ++ch)
      for (std::int64_t k = 0; k < n; ++k) {
        const auto h = static_cast<std::size_t>(holder(c, r, k));
        const auto& from = output && k % c.ranks != r ? in[h] : at[h];
        for (std::int64_t i = coll_piece_lo(c, ch, k); i < coll_piece_lo(c, ch, k + 1); ++i)
          out[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] = from[static_cast<std::size_t>(i)];
      }
  return out;
}

// Data mode, SRAM buffers: every rank's buffer gets random values from seed + the rank.
void fill(RuntimeContext& ctx, const AllreduceConfig& c, const Buffers& b, std::uint64_t seed) {
  std::vector<float> in(static_cast<std::size_t>(b.values));
  for (std::int64_t r = 0; r < c.ranks; ++r) {
    for (std::int64_t i = 0; i < b.values; ++i)
      in[static_cast<std::size_t>(i)] = uniform_pm1(seed + static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(i));
    for (std::int64_t g = 0; g < c.channels; ++g) ctx.poke(b.data, rank_of(c, g * c.ranks + r), in, 0, b.values);
  }
}

std::vector<std::tuple<std::string, ps_t, ps_t>> timeline_of(const RuntimeContext& ctx, const RunReport& r) {
  std::vector<std::tuple<std::string, ps_t, ps_t>> out;
  const engine::Graph& g = ctx.graph();
  for (std::size_t i = 0; i < g.ops().size(); ++i) {
    const auto& op = g.ops()[i];
    if (op.resource == engine::kNoResource) continue;
    out.emplace_back(g.resources()[static_cast<std::size_t>(op.resource)].name, r.result.timing[i].start,
                     r.result.timing[i].end);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void check_valid(const AllreduceConfig& c) {
  const std::int32_t s = allreduce_check(c);
  if (s != kArOk) throw InputError(allreduce_status_message(s, c));
}

}  // namespace

std::int64_t allreduce_reference_ops(const AllreduceConfig& c) {
  if (allreduce_check(c) != kArOk) return 0;  // not a config the check lets through
  const bool hbm = c.buffer == static_cast<std::int64_t>(CollBuffer::hbm);
  std::int64_t ops = 0, barriers = 0;
  Group count;
  count.done = [&](const std::vector<std::pair<std::int64_t, CollXfer>>& g) {
    for (const auto& t : g) {
      const CollXfer& x = t.second;
      const std::int64_t joins = std::max<std::int64_t>(0, x.k1 - x.k0 - 1);  // all_of over the pieces' writers
      // Its signal, the copy's hops (and HBM ends), the sender's join, the receiver's wait,
      // and an add with its join; at the next barrier each rank joins what it did (the copy,
      // the wait and the add: at most 3 more).
      ops += 1 + net::hop_count(c.hw, coll_node(c, x.src), coll_node(c, x.dst)) + (hbm ? 2 : 0) + joins + 1;
      if (x.reduce) ops += (hbm ? 3 : 1) + joins;
      ops += x.reduce ? 3 : 2;
    }
  };
  count.on_barrier = [&]() { ++barriers; };
  coll_schedule_all(c, count);
  const LaunchGrid g = grid_of(c);
  // And each barrier's join of the barrier before, on every rank.
  return ops + barriers * g.sips * g.cubes * g.pes;
}

CollectiveRun run_collective(const AllreduceConfig& c, bool data, std::uint64_t seed, const std::string* trace_path,
                             const std::vector<std::vector<float>>* inputs) {
  check_valid(c);
  if (inputs) {
    if (static_cast<std::int64_t>(inputs->size()) != c.ranks)
      throw InputError("allreduce: " + std::to_string(c.ranks) + " ranks' inputs, " + std::to_string(inputs->size()) + " given");
    for (const auto& in : *inputs)
      if (static_cast<std::int64_t>(in.size()) != coll_values(c))
        throw InputError("allreduce: an input of " + std::to_string(in.size()) + " values; a rank holds " +
                         std::to_string(coll_values(c)));
  }
  RuntimeContext ctx(topology_of(c.hw), ContextOptions{data});
  ctx.limit_ops(allreduce_reference_ops(c));
  CollectiveRun out;
  Buffers b;
  // The request was validated: anything the runtime rejects from here on is a bug of the
  // collective library, not the user's input.
  try {
    b = make_buffers(ctx, c, data && !inputs ? seed : 0);
    if (data && inputs) {
      if (!b.hbm) {
        for (std::int64_t r = 0; r < coll_vranks(c); ++r)
          ctx.poke(b.data, rank_of(c, r), (*inputs)[static_cast<std::size_t>(r % c.ranks)], 0, b.values);
      } else {
        std::vector<std::vector<float>> all;
        for (const Tensor& t : b.hdata) all.push_back(ctx.values(t));
        for (std::int64_t r = 0; r < coll_vranks(c); ++r) {
          const auto& in = (*inputs)[static_cast<std::size_t>(r % c.ranks)];
          std::copy(in.begin(), in.end(), all[hbm_tensor(c, r)].begin() + hbm_box(c, r, 0, 0, 1).lo[0] * b.values);
        }
        for (std::size_t s = 0; s < b.hdata.size(); ++s) ctx.assign(b.hdata[s], all[s]);
      }
    } else if (data && !b.hbm) {
      fill(ctx, c, b, seed);
    }
    if (data) out.inputs = read_back(ctx, c, b);
    launch_collective(ctx, c, b);
  } catch (const InputError& e) {
    throw InternalError(std::string("the collective library's program was rejected by the runtime: ") + e.what(),
                        __FILE__, __LINE__);
  }
  out.report = ctx.run_checked("bytes", "collective");
  if (data) out.values = read_back(ctx, c, b, c.op == static_cast<std::int64_t>(CollOp::alltoall));
  out.timeline = timeline_of(ctx, out.report);
  if (trace_path) ctx.write_trace(*trace_path, out.report);
  return out;
}

// The direct launch: the ring allreduce written out by hand (reduce-scatter, then
// all-gather; in every step and chunk each rank sends one piece run to the next rank and
// adds what the previous one sent), with channels, not the library's schedule.
CollectiveRun run_ring_direct(const AllreduceConfig& c, bool data, std::uint64_t seed) {
  if (c.algo != static_cast<std::int64_t>(CollAlgo::ring) || c.buffer != static_cast<std::int64_t>(CollBuffer::sram) ||
      c.op != static_cast<std::int64_t>(CollOp::allreduce) || c.channels != 1)
    throw InputError("the direct launch is the ring allreduce over SRAM buffers, on one channel");
  check_valid(c);
  const std::int64_t p = c.ranks, V = coll_values(c);
  RuntimeContext ctx(topology_of(c.hw), ContextOptions{data});
  const LaunchGrid grid = grid_of(c);
  const SymBuf buf = ctx.symmetric(c.bytes, DType::f16, grid, "data");
  const SymBuf inbox = ctx.symmetric(c.bytes, DType::f16, grid, "inbox");
  const Channel ring = ctx.channel("ring");
  CollectiveRun out;
  Buffers b;
  b.data = buf, b.values = V;
  if (data) {
    fill(ctx, c, b, seed);
    out.inputs = read_back(ctx, c, b);
  }
  ctx.launch("ring allreduce (direct)", grid, [&](PeProgram& prog) {
    const std::int64_t r = index_of(c, prog.rank());
    const Rank next = rank_of(c, (r + 1) % p), prev = rank_of(c, (r + p - 1) % p);
    std::vector<OpId> ready(static_cast<std::size_t>(c.chunks * p), engine::kNoOp);  // per (chunk, piece)
    auto lo = [&](std::int64_t ch, std::int64_t k) { return coll_piece_lo(c, ch, k); };
    auto mod = [&](std::int64_t a) { return ((a % p) + p) % p; };
    for (int phase = 0; phase < 2; ++phase)  // 0: reduce-scatter, 1: all-gather
      for (std::int64_t s = 0; s + 1 < p; ++s)
        for (std::int64_t ch = 0; ch < c.chunks; ++ch) {
          const std::int64_t send = mod(phase == 0 ? r - s : r + 1 - s), recv = mod(phase == 0 ? r - s - 1 : r - s);
          const std::int64_t s0 = lo(ch, send), sn = lo(ch, send + 1) - s0;
          OpId& dep = ready[static_cast<std::size_t>(ch * p + send)];
          prog.send(ring, prog.slice(prog.local(buf), s0, sn), next,
                    prog.slice(prog.at(phase == 0 ? inbox : buf, next), s0, sn), 2 * sn, {dep});
          const OpId got = prog.recv(ring, prev);
          const std::int64_t r0 = lo(ch, recv), rn = lo(ch, recv + 1) - r0;
          OpId& have = ready[static_cast<std::size_t>(ch * p + recv)];
          have = phase == 0 ? prog.vector_add(prog.slice(prog.local(buf), r0, rn), prog.slice(prog.local(inbox), r0, rn),
                                              rn, {got, have})
                            : got;
        }
  });
  out.report = ctx.run_checked("bytes", "direct ring");
  if (data) out.values = read_back(ctx, c, b);
  out.timeline = timeline_of(ctx, out.report);
  return out;
}

AllreduceResult allreduce_reference(const AllreduceConfig& c, const std::string* trace_path) {
  const CollectiveRun run = run_collective(c, false, 1, trace_path);
  const engine::Summary& s = run.report.summary;
  AllreduceResult r{};
  r.status = kArOk;
  r.latency_ps = s.latency_ps;
  r.link_bytes_pe = s.link_bytes[0], r.link_bytes_cube = s.link_bytes[1], r.link_bytes_sip = s.link_bytes[2];
  r.copies_pe = s.link_copies[0], r.copies_cube = s.link_copies[1], r.copies_sip = s.link_copies[2];
  r.hbm_read_bytes = s.hbm_read_bytes;
  r.hbm_write_bytes = s.hbm_write_bytes;
  r.vector_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::vector)];
  r.vector_ops = s.vector_ops, r.sram_read_bytes = s.sram_read_bytes, r.sram_write_bytes = s.sram_write_bytes;
  // Messages: every copy whose last hop is an in-port, a cube link into its destination, a
  // SIP link or an HBM write; counted from the graph as ops the library issued as copies.
  std::int64_t transfers = 0;
  {
    Group count;
    count.done = [&](const std::vector<std::pair<std::int64_t, CollXfer>>& g) {
      transfers += static_cast<std::int64_t>(g.size());
    };
    coll_schedule_all(c, count);
  }
  r.transfers = transfers;
  return r;
}

CollectiveDataCheck collective_data_check(const AllreduceConfig& c, const CollectiveRun& run) {
  CollectiveDataCheck out;
  const auto op = static_cast<CollOp>(c.op);
  const std::int64_t p = c.ranks, root = coll_final_root(c);
  auto in = [&](std::int64_t r, std::int64_t i) {
    return static_cast<double>(run.inputs[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]);
  };
  auto compare = [&](double got, double want, double tol) {
    const double err = std::fabs(got - want);
    ++out.values;
    out.wrong += err > tol ? 1 : 0;
    out.max_abs_error = std::max(out.max_abs_error, err);
    out.max_abs_expected = std::max(out.max_abs_expected, std::fabs(want));
  };
  // Pieces of every channel: piece k is channel k / p's piece k mod p.
  for (std::int64_t ch = 0; ch < c.chunks; ++ch)
    for (std::int64_t kv = 0; kv < coll_vranks(c); ++kv)
      for (std::int64_t i = coll_piece_lo(c, ch, kv); i < coll_piece_lo(c, ch, kv + 1); ++i) {
        const std::int64_t k = kv % p, first = kv - k;  // the piece in its channel, and the channel's first
        double sum = 0, mag = 0;
        for (std::int64_t r = 0; r < p; ++r) sum += in(r, i), mag += std::fabs(in(r, i));
        const double tol = static_cast<double>(p - 1) * std::ldexp(1.0, -10) * std::max(1.0, mag);
        for (std::int64_t r = 0; r < p; ++r) {
          const double got = run.values[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
          switch (op) {
            case CollOp::allreduce: compare(got, sum, tol); break;
            case CollOp::reduce:
              if (r == root) compare(got, sum, tol);
              break;
            case CollOp::reducescatter:
              if (r == k) compare(got, sum, tol);
              break;
            case CollOp::allgather: compare(got, in(k, i), 0); break;
            case CollOp::alltoall:  // piece k of rank r came from piece r of rank k (pieces are all one size)
              compare(got, in(k, i - coll_piece_lo(c, ch, kv) + coll_piece_lo(c, ch, first + r)), 0);
              break;
            case CollOp::bcast: break;
          }
        }
      }
  return out;
}

std::string collective_data_refusal(const AllreduceConfig& c) {
  constexpr std::int64_t kMaxValues = INT64_C(1) << 26;  // every rank's buffer and inboxes, as floats
  const std::int64_t values = coll_vranks(c) * (1 + coll_total_inboxes(c)) * coll_values(c);
  if (values <= kMaxValues) return "";
  return "data mode holds at most " + std::to_string(kMaxValues) + " values (buffers and inboxes of every rank); this config has " +
         std::to_string(values) + ": use fewer bytes or ranks";
}

std::string allreduce_status_message(std::int32_t status, const AllreduceConfig& c) {
  const std::string level = to_string(static_cast<CollLevel>(c.level));
  switch (static_cast<AllreduceStatus>(status)) {
    case kArOk: return "valid";
    case kArBadField:
      if (c.channels != 1 && c.level >= 0 && c.level < kCollLevels && !coll_channels_fit(c.hw, c.level, c.channels))
        return "channels: " + std::to_string(c.channels) + " channels do not fit level " + level +
               (c.level == 1   ? ": up to the " + std::to_string(c.hw.pes_per_cube()) + " PEs of a cube"
                : c.level == 2 ? ": up to the " + std::to_string(c.hw.cubes_per_sip()) +
                                     " cubes of a SIP, or a multiple of them up to its " +
                                     std::to_string(c.hw.cubes_per_sip() * c.hw.pes_per_cube()) + " PEs"
                               : " (channels run at the cube and sip levels)") +
               ", at most " + std::to_string(kCollMaxChannels);
      return "level, algo, buffer or op out of range, or chunks outside 1.." + std::to_string(kCollMaxChunks);
    case kArBadRanks:
      if (c.level == static_cast<std::int64_t>(CollLevel::hier))
        return "ranks: " + std::to_string(c.ranks) + " PEs are not a hier launch: up to the " +
               std::to_string(c.hw.pes_per_cube()) + " PEs of a cube, whole cubes of a SIP (multiples of " +
               std::to_string(c.hw.pes_per_cube()) + " up to " + std::to_string(c.hw.pes_per_cube() * c.hw.cubes_per_sip()) +
               "), or whole SIPs (multiples of " + std::to_string(c.hw.pes_per_cube() * c.hw.cubes_per_sip()) +
               "), with at most " + std::to_string(kCollMaxRanks) + (coll_op_runs_hier(c.op) ? " ranks per level" : " ranks in all");
      return "ranks: " + std::to_string(c.ranks) + " is outside 2.." +
             std::to_string(imin(kCollMaxRanks, coll_level_size(c.hw, c.level))) + " for level " + level;
    case kArBadAlgo:
      if (!coll_algo_runs(c.algo, c.op)) {
        const std::string op = kCollOpNames[c.op];
        return "algo: " + op + " runs " +
               (c.op == static_cast<std::int64_t>(CollOp::alltoall) ? std::string("by pairwise exchange (pairwise)")
                : c.op <= static_cast<std::int64_t>(CollOp::reduce) ? std::string("by ring, hd, tree, mesh2d or root")
                                                                    : std::string("on a ring (ring) or by halving-doubling (hd)")) +
               ", not " + to_string(static_cast<CollAlgo>(c.algo));
      }
      if (c.algo == static_cast<std::int64_t>(CollAlgo::hd))
        return "algo: hd needs a power-of-two number of ranks; " + std::to_string(c.ranks) + " is not";
      return std::string("algo: ") + to_string(static_cast<CollAlgo>(c.algo)) + " needs the ranks to fill whole rows of " +
             std::to_string(coll_cols(c)) + "; " + std::to_string(c.ranks) + " do not";
    case kArBadSize:
      if (c.op == static_cast<std::int64_t>(CollOp::alltoall) && c.bytes >= 2 && c.bytes % 2 == 0 && c.bytes <= kCollMaxBytes &&
          c.bytes / 2 >= c.chunks * coll_vranks(c))
        return "bytes: an alltoall's " + std::to_string(c.bytes / 2) + " f16 values must split into " +
               std::to_string(c.chunks) + " chunk(s) of " + std::to_string(coll_vranks(c)) + " equal pieces";
      return "bytes: " + std::to_string(c.bytes) + " must be even, at most 2^32, and give every rank's " +
             std::to_string(c.chunks) + " chunk(s) at least " + std::to_string(coll_vranks(c)) + " f16 values" +
             (c.channels > 1 ? " (ranks x channels)" : "");
    case kArSramOverflow:
      return "buffer: the data and " + std::to_string(coll_total_inboxes(c)) + " inbox(es) need " +
             std::to_string(coll_sram_bytes(c)) + " bytes of SRAM per PE, which has " + std::to_string(c.hw.sram_bytes());
    case kArHbmOverflow:
      return "buffer: the data and " + std::to_string(coll_total_inboxes(c)) + " inbox(es) need " +
             std::to_string(coll_ranks_per_cube(c) * coll_hbm_bytes_per_rank(c)) + " bytes of HBM per cube, which has " +
             std::to_string(c.hw.hbm_capacity_bytes());
    case kArTooLarge: {
      std::int64_t ops = 0;
      allreduce_check(c, &ops);
      const std::int64_t n = coll_vranks(c);
      if (c.channels == 1)
        return "the collective needs " + std::to_string(ops) + " ops (ranks x chunks x ranks = " +
               std::to_string(c.ranks * c.chunks * c.ranks) + "); the batched model holds " + std::to_string(kCollMaxOps) +
               " ops and " + std::to_string(kCollMaxPieces) + " pieces: use fewer chunks or ranks";
      return "the collective needs " + std::to_string(ops) + " ops (ranks x channels = " + std::to_string(n) +
             ", of at most " + std::to_string(kCollMaxRanks) + "; ranks x channels x chunks x ranks x channels = " +
             std::to_string(n * c.chunks * n) + "); the batched model holds " + std::to_string(kCollMaxOps) + " ops and " +
             std::to_string(kCollMaxPieces) + " pieces: use fewer chunks, channels or ranks";
    }
    case kArTimeOverflow: return "bytes: the simulated time would overflow int64 picoseconds";
    case kArBadHardware: return "the hardware is outside the ranges a topology file allows";
    default: return "unknown status";
  }
}

}  // namespace kb
