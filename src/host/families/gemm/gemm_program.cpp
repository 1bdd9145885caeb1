#include "gemm_program.h"

#include <vector>

#include "../../common/error.h"

namespace kb {

GemmConfig gemm_request(std::int64_t m, std::int64_t n, std::int64_t k) {
  GemmConfig c{};
  c.m = m, c.n = n, c.k = k;
  c.tile_m = c.tile_n = c.tile_k = 128;
  c.pes = c.cubes = 1;
  c.buffers = 2;
  c.split = kGemmSplitAuto;
  c.b_bytes = 2;
  return c;
}

GemmConfig gemm_config(const TopologySpec& topo, GemmConfig c) {
  c.hw = topo.hw();
  gemm_resolve_split(c);  // as every output reports it
  return c;
}

std::string gemm_status_message(std::int32_t status, const GemmConfig& c) {
  auto s = [](std::int64_t v) { return std::to_string(v); };
  switch (status) {
    case kGemmOk: return "ok";
    case kGemmBadShape:
      return "m, n, k: each must be in 1.." + s(kGemmMaxDim) + " (got " + s(c.m) + ", " + s(c.n) + ", " + s(c.k) + ")";
    case kGemmBadTile:
      return "tile-m, tile-n, tile-k: each must be in 1..its matrix dimension (got " + s(c.tile_m) + ", " +
             s(c.tile_n) + ", " + s(c.tile_k) + " for " + s(c.m) + "x" + s(c.n) + "x" + s(c.k) + ")";
    case kGemmBadBuffers:
      if (c.buffers == 1 || c.buffers == 2) return "b_bytes: B's bytes a value must be 1 or 2 (got " + s(c.b_bytes) + ")";
      return "buffers: must be 1 or 2 (got " + s(c.buffers) + ")";
    case kGemmBadPes:
      return "pes: must be in 1.." + s(c.hw.pes_per_cube()) + ", the PEs of one cube (got " + s(c.pes) + ")";
    case kGemmBadCubes:
      return "cubes: must be in 1.." + s(c.hw.cubes_per_sip()) + ", the cubes of one SIP (got " + s(c.cubes) + ")";
    case kGemmSramOverflow: {
      const std::int64_t split = gemm_split_of(c);
      const std::string slots =
          gemm_split_k(split) && gemm_grid_defined(c)
              ? " and " + s(gemm_k_slots(c, gemm_grid(c), gemm_split_by_cols(split))) + " fp32 partial-sum slot(s)"
              : "";
      return "tiles: " + s(c.buffers) + " buffer set(s) of " + s(c.tile_m) + "x" + s(c.tile_k) + " A, " +
             s(c.tile_k) + "x" + s(c.tile_n) + " B and fp32 C tiles" + slots + " need " + s(gemm_sram_bytes(c)) +
             " bytes of SRAM; a PE has " + s(c.hw.sram_bytes());
    }
    case kGemmHbmOverflow: return "shape: A, B and the C shard do not fit one cube's HBM";
    case kGemmTimeOverflow: return "shape: the simulated time would overflow int64 picoseconds";
    case kGemmBadHardware: return "hardware: a figure is outside the ranges a topology file allows";
    case kGemmBadSplit: return "split: must be auto, rows, cols, rows-k or cols-k (got " + s(c.split) + ")";
  }
  return "unknown status " + s(status);
}

void validate_gemm(const TopologySpec& topo, const GemmConfig& asked) {
  const GemmConfig c = gemm_config(topo, asked);
  const std::int32_t st = gemm_check(c);
  if (st != kGemmOk) throw InputError(gemm_status_message(st, c));
}

GemmTensors gemm_tensors(RuntimeContext& ctx, const GemmConfig& p, std::uint64_t seed) {
  Placement rep{Split::replicate, p.cubes, 1, 0};
  const GemmConfig c = gemm_config(ctx.topology(), p);
  const bool by_cols = gemm_split_by_cols(c.split);
  GemmTensors t;
  t.split = c.split;
  const Placement blocks = by_cols ? Placement{Split::col_wise, p.cubes, p.tile_n, 0}
                                   : Placement{Split::row_wise, p.cubes, p.tile_m, 0};
  if (seed != 0) {
    t.a = ctx.random({p.m, p.k}, DType::f16, rep, "A", seed);
    t.b = ctx.random({p.k, p.n}, gemm_b_dtype(p), rep, "B", seed + 1);
  } else {
    t.a = ctx.empty({p.m, p.k}, DType::f16, rep, "A");
    t.b = ctx.empty({p.k, p.n}, gemm_b_dtype(p), rep, "B");
  }
  t.c = ctx.zeros({p.m, p.n}, DType::f16, blocks, "C");
  if (gemm_split_k(c.split)) {
    t.split_k = true;
    t.partials = ctx.symmetric(gemm_k_slots(c, gemm_grid(c), by_cols) * 4 * p.tile_m * p.tile_n, DType::f32,
                               LaunchGrid{1, p.cubes, p.pes}, "partials");
    t.sums = ctx.channel("partials");
  }
  return t;
}

void gemm_kernel(PeProgram& prog, const GemmConfig& p, const GemmTensors& t) {
  const std::int64_t tiles_m = ceil_div(p.m, p.tile_m), tiles_n = ceil_div(p.n, p.tile_n);
  const std::int64_t kt = ceil_div(p.k, p.tile_k);
  const CubeTiles block = gemm_cube_tiles(tiles_m, tiles_n, p.cubes, t.split, prog.rank().cube);
  // This PE's units (k-slices of tiles of its cube's block, tile-major): whole tiles, or
  // with split-K an even share of the units (gemm_unit_start).
  const std::int64_t units = block.rows() * block.cols() * kt;
  const std::int64_t pe = prog.rank().pe;
  std::int64_t lo, hi;
  if (t.split_k) {
    lo = gemm_unit_start(units, p.pes, pe), hi = gemm_unit_start(units, p.pes, pe + 1);
  } else {
    const TileRange mine = gemm_tiles_of(block, p.pes, pe);
    lo = mine.lo * kt, hi = mine.hi * kt;
  }
  const std::int64_t steps = hi - lo;
  if (steps <= 0) return;
  const std::int64_t first_tile = lo / kt, ntiles = (hi - 1) / kt - first_tile + 1;
  const bool sends = lo % kt != 0;  // the first tile's first slices are another PE's: send it our partial

  const std::int64_t nb = p.buffers;
  std::vector<SramBuf> abuf, bbuf, cbuf;
  for (std::int64_t b = 0; b < nb; ++b) {
    abuf.push_back(prog.sram(2 * p.tile_m * p.tile_k, DType::f16));
    bbuf.push_back(prog.sram(gemm_b_bytes(p) * p.tile_k * p.tile_n, gemm_b_dtype(p)));
    cbuf.push_back(prog.sram(4 * p.tile_m * p.tile_n, DType::f32));
  }

  struct Slice {
    std::int64_t i, j, kk;  // tile row, tile column, k-slice
    std::int64_t local;     // the tile's index among this PE's tiles
    std::size_t buf, acc;   // the step's A/B buffers (step % nb) and its tile's accumulator (local % nb)
  };
  // This PE's first slice (its first tile is tile lo / kt of the cube's block, row-major),
  // and the one after `sl`, stepped without divisions.
  const Slice first_slice{block.r0 + first_tile / block.cols(), block.c0 + first_tile % block.cols(), lo % kt, 0, 0, 0};
  auto next = [&](Slice& sl) {
    if (++sl.buf == static_cast<std::size_t>(nb)) sl.buf = 0;
    if (++sl.kk < kt) return;
    sl.kk = 0;
    ++sl.local;
    if (++sl.acc == static_cast<std::size_t>(nb)) sl.acc = 0;
    if (++sl.j == block.c1) sl.j = block.c0, ++sl.i;
  };
  auto extent = [](std::int64_t idx, std::int64_t tile, std::int64_t total) {
    return imin(tile, total - idx * tile);
  };
  // Split-K partial sums: slot 0 of this PE's `partials` holds the one it sends, slot n the
  // n-th one it receives (in PE order).
  const std::int64_t slot = p.tile_m * p.tile_n;
  auto rank_of = [&](std::int64_t q) {
    return Rank{prog.rank().sip, prog.rank().cube, static_cast<std::int32_t>(q)};
  };

  std::vector<OpId> load_a(static_cast<std::size_t>(steps)), load_b(static_cast<std::size_t>(steps));
  std::vector<OpId> mm(static_cast<std::size_t>(steps));
  std::vector<OpId> store(static_cast<std::size_t>(ntiles), engine::kNoOp);

  // Loads of slice s reuse buffer s % nb, so they wait for the matmul of slice s - nb.
  Slice load_at = first_slice;  // the slice of the next loads issued
  auto issue_loads = [&](std::int64_t s) {
    const Slice sl = load_at;
    next(load_at);
    const std::int64_t mi = extent(sl.i, p.tile_m, p.m), nj = extent(sl.j, p.tile_n, p.n);
    const std::int64_t kc = extent(sl.kk, p.tile_k, p.k);
    const OpId gate = s >= nb ? mm[static_cast<std::size_t>(s - nb)] : engine::kNoOp;
    const std::size_t b = sl.buf;
    load_a[static_cast<std::size_t>(s)] = prog.load(t.a, Region{sl.i * p.tile_m, mi, sl.kk * p.tile_k, kc}, abuf[b], {gate});
    load_b[static_cast<std::size_t>(s)] = prog.load(t.b, Region{sl.kk * p.tile_k, kc, sl.j * p.tile_n, nj}, bbuf[b], {gate});
  };

  for (std::int64_t s = 0; s < imin(nb, steps); ++s) issue_loads(s);
  Slice sl = first_slice;
  for (std::int64_t s = 0; s < steps; ++s, next(sl)) {
    const std::int64_t mi = extent(sl.i, p.tile_m, p.m), nj = extent(sl.j, p.tile_n, p.n);
    const std::int64_t kc = extent(sl.kk, p.tile_k, p.k);
    const bool first = sl.kk == 0 || s == 0, last = sl.kk == kt - 1 || s == steps - 1;
    const bool sent = sends && sl.local == 0;
    // The accumulator of tile j is reused by tile j + nb: its store must be done.
    const OpId acc_free = first && sl.local >= nb ? store[static_cast<std::size_t>(sl.local - nb)] : engine::kNoOp;
    const std::size_t b = sl.buf;
    const SramBuf acc = sent ? prog.slice(prog.local(t.partials), 0, mi * nj) : cbuf[sl.acc];
    mm[static_cast<std::size_t>(s)] = prog.matmul(abuf[b], bbuf[b], acc, mi, nj, kc, !first,
                                                  {load_a[static_cast<std::size_t>(s)], load_b[static_cast<std::size_t>(s)], acc_free});
    if (last) {
      const OpId done = mm[static_cast<std::size_t>(s)];
      const std::int64_t tile_end = (lo + s) / kt * kt + kt;  // one past the tile's last unit
      if (sent) {
        // To the tile's owner, into the slot of this PE's place among its senders.
        const std::int64_t owner = gemm_pe_of_unit(units, p.pes, tile_end - kt);
        std::int64_t place = 1;
        for (std::int64_t q = owner + 1; q < pe; ++q) place += gemm_pe_has_units(units, p.pes, q);
        prog.send(t.sums, acc, rank_of(owner), prog.slice(prog.at(t.partials, rank_of(owner)), place * slot, mi * nj),
                  4 * mi * nj, {done});
      } else {
        OpId sum = done;
        if (sl.kk != kt - 1) {  // this PE owns the tile and holds its first slices: add the others' partials
          std::int64_t place = 0;
          for (std::int64_t q = pe + 1; q < p.pes && gemm_unit_start(units, p.pes, q) < tile_end; ++q) {
            if (!gemm_pe_has_units(units, p.pes, q)) continue;
            ++place;
            const OpId got = prog.recv(t.sums, rank_of(q));
            sum = prog.vector_add(acc, prog.slice(prog.local(t.partials), place * slot, mi * nj), mi * nj, {got, done});
          }
        }
        store[static_cast<std::size_t>(sl.local)] =
            prog.store(acc, t.c, Region{sl.i * p.tile_m, mi, sl.j * p.tile_n, nj}, {sum});
      }
    }
    if (s + nb < steps) issue_loads(s + nb);
  }
}

std::int64_t gemm_graph_ops(const GemmConfig& p) {
  auto tiles = [](std::int64_t n, std::int64_t t) { return ceil_div(n, t > 0 ? t : 1); };
  const std::int64_t per_tile = sat_add(sat_mul(3, tiles(p.k, p.tile_k)), 1);
  return sat_add(sat_mul(sat_mul(tiles(p.m, p.tile_m), tiles(p.n, p.tile_n)), per_tile), sat_mul(5, sat_mul(p.pes, p.cubes)));
}

std::int64_t gemm_reference_ops(const GemmConfig& c) { return gemm_graph_ops(c); }

GemmReference run_gemm_reference(const TopologySpec& topo, const GemmConfig& asked, const std::string* trace_path,
                                 KernelValues* data) {
  validate_gemm(topo, asked);
  const GemmConfig p = gemm_config(topo, asked);  // the split resolved
  const std::int64_t ops = gemm_graph_ops(p);
  RuntimeContext ctx(topo, ContextOptions{data != nullptr});
  ctx.limit_ops(ops);
  ctx.reserve(static_cast<std::size_t>(ops), static_cast<std::size_t>(4 * ops));  // at most 3 deps per op, 2 per load
  // The request was validated: anything the runtime rejects from here on is a bug of the
  // shipped kernel program, not the user's input.
  GemmTensors t;
  try {
    t = gemm_tensors(ctx, p, 0);
    if (data) {
      if (data->in.size() != 2) throw InputError("gemm: 2 input tensors, " + std::to_string(data->in.size()) + " given");
      ctx.assign(t.a, data->in[0]);
      ctx.assign(t.b, data->in[1]);
    }
    ctx.launch("gemm", LaunchGrid{1, p.cubes, p.pes}, gemm_kernel, p, t);
  } catch (const InputError& e) {
    throw InternalError(std::string("the GEMM reference program was rejected by the runtime: ") + e.what(), __FILE__,
                        __LINE__);
  }
  GemmReference out;
  out.report = ctx.run_checked("shape", "GEMM reference");
  if (trace_path) ctx.write_trace(*trace_path, out.report);
  if (data) data->out = ctx.values(t.c);
  return out;
}

void gemm_compose(RuntimeContext& ctx, const GemmConfig& c) {
  validate_gemm(ctx.topology(), c);
  const GemmConfig p = gemm_config(ctx.topology(), c);
  const GemmTensors t = gemm_tensors(ctx, p, 0);
  ctx.set_resident(t.b);  // the weights
  ctx.launch("gemm", LaunchGrid{1, p.cubes, p.pes}, gemm_kernel, p, t);
  if (t.split_k) ctx.free(t.partials);
}

GemmResult gemm_reference(const GemmConfig& c, const std::string* trace_path, KernelValues* data) {
  const GemmReference ref = run_gemm_reference(topology_of(c.hw), c, trace_path, data);
  const engine::Summary& s = ref.report.summary;
  GemmResult r{};
  r.status = kGemmOk;
  r.latency_ps = s.latency_ps;
  r.mac_cycles = s.mac_cycles;
  r.macs = s.macs;
  r.matrix_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::matrix)];
  r.dma_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)];
  r.max_pe_matrix_busy_ps = s.max_resource_busy_ps[static_cast<std::size_t>(engine::ResourceClass::matrix)];
  r.max_pe_dma_busy_ps = s.max_resource_busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)];
  r.hbm_read_bytes = s.hbm_read_bytes;
  r.hbm_write_bytes = s.hbm_write_bytes;
  r.ops = s.ops;
  r.vector_ops = s.vector_ops;
  r.sram_read_bytes = s.sram_read_bytes;
  r.sram_write_bytes = s.sram_write_bytes;
  r.link_bytes_pe = s.link_bytes[static_cast<std::size_t>(engine::LinkLevel::pe)];
  gemm_roofline(c, r);  // closed-form bounds of the problem, not the schedule's timing
  return r;
}

}  // namespace kb
