#include "decode_program.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "../../common/error.h"

namespace kb {

const char* decode_panel(std::int64_t k) {
  switch (k) {
    case 1: return "single_kv_group_decode_gqa_cube_sp_pe_tp";
    case 2: return "single_kv_group_decode_gqa_cube_repl_pe_tp";
    case 3: return "single_kv_group_decode_gqa_cube_repl_pe_sp";
    case 4: return "single_kv_group_decode_gqa_cube_sp_pe_sp";
    default: return "?";
  }
}
const char* decode_kind(std::int64_t k) {
  switch (k) {
    case 1: return "decode_cube_sp_pe_tp";
    case 2: return "decode_cube_repl_pe_tp";
    case 3: return "decode_cube_repl_pe_sp";
    case 4: return "decode";
    default: return "?";
  }
}
const char* decode_case_name(std::int64_t k) {
  switch (k) {
    case 1: return "cube-SP / PE-TP";
    case 2: return "cube-replicate / PE-TP";
    case 3: return "cube-replicate / PE-SP";
    case 4: return "cube-SP / PE-SP";
    default: return "?";
  }
}

OpId flash_merge(PeProgram& p, SramBuf m1, SramBuf l1, SramBuf o1, SramBuf m2, SramBuf l2, SramBuf o2, SramBuf t,
                 std::int64_t rows, std::int64_t d, Deps deps) {
  OpId x = p.vector_copy(t, m1, rows, deps);
  x = p.vector_max(t, m2, rows, {x});
  x = p.vector_sub(m1, t, rows, {x});
  x = p.vector_exp(m1, rows, {x});
  x = p.vector_sub(m2, t, rows, {x});
  x = p.vector_exp(m2, rows, {x});
  x = p.vector_mul(l1, m1, rows, {x});
  x = p.vector_mul(l2, m2, rows, {x});
  x = p.vector_add(l1, l2, rows, {x});
  x = p.row_mul(o1, m1, rows, d, {x});
  x = p.row_mul(o2, m2, rows, d, {x});
  x = p.vector_add(o1, o2, rows * d, {x});
  return p.vector_copy(m1, t, rows, {x});
}

void FlashChunks::step(PeProgram& p, int slot, bool first, OpId lq, OpId ldk, OpId ldv, SramBuf q, SramBuf k, SramBuf v,
                       SramBuf s, std::int64_t rows, std::int64_t n, std::int64_t d, float scale, const FlashBufs& b,
                       FlashCausal mask) {
  const OpId mm1 = p.matmul(q, k, s, rows, n, d, false, {ldk, lq, rs_prev, last_mm});
  const SramBuf md = first ? b.m : b.mc, ld = first ? b.l : b.lc, od = first ? b.o : b.oc;
  OpId x = mask.on ? p.causal_scale(s, rows, n, scale, mask.first_token, mask.heads, mask.pos0, {mm1})
                   : p.vector_scale(s, rows * n, scale, {mm1});
  x = p.row_max(md, s, rows, n, {x});
  x = p.row_sub(s, md, rows, n, {x});
  const OpId ex = p.vector_exp(s, rows * n, {x});
  const OpId rs = p.row_sum(ld, s, rows, n, {ex});
  const std::int64_t w = dv > 0 ? dv : d;
  // A shared V is the first dv rows of K's chunk ([d, n]): V^T, read transposed.
  const OpId mm2 = p.matmul(s, v, od, rows, w, n, false, {ex, ldv}, shared);
  last_vec = first ? rs : flash_merge(p, b.m, b.l, b.o, b.mc, b.lc, b.oc, b.t, rows, w, {mm2, rs});
  last_mm = mm2;
  mm1_of[slot] = mm1, mm2_of[slot] = mm2, rs_prev = rs;
}

namespace {

Rank rank(std::int64_t cube, std::int64_t pe) { return Rank{0, static_cast<std::int32_t>(cube), static_cast<std::int32_t>(pe)}; }

// The tensors of a run.
struct Tensors {
  Tensor q, k, v, o;
  bool per_cube = false;  // o is [cubes, units x G, d], one answer per cube (allreduce)
};

// The program of one PE: flash decoding over its shard, then its part in the reductions.
class DecodeKernel {
 public:
  DecodeKernel(RuntimeContext& ctx, const DecodeConfig& c, const Tensors& t) : ctx_(ctx), c_(c), t_(t) {
    const std::int64_t slots = dec_slots(c), Rm = dec_max_rows(c), d = dec_dv(c);
    const LaunchGrid grid{1, c.hw.cubes_per_sip(), c.hw.pes_per_cube()};
    for (std::int64_t s = 0; s < slots; ++s)
      inbox_.push_back(ctx.symmetric(Rm * (2 + d) * 4, DType::f32, grid, "inbox" + std::to_string(s)));
    if (c.allreduce) answer_ = ctx.symmetric(Rm * d * 4, DType::f32, grid, "answer");
  }

  // Returns its symmetric buffers (once its launch is issued).
  void release() {
    for (SymBuf s : inbox_) ctx_.free(s);
    if (c_.allreduce) ctx_.free(answer_);
  }

  void operator()(PeProgram& p) {
    const std::int64_t q = p.rank().cube, pe = p.rank().pe;
    const DecWork w = dec_work(c_, q, pe);
    if (!dec_works(w)) return;
    State s = compute(p, w);
    const DecTree pt = dec_pe_tree(c_), ct = dec_cube_tree(c_);
    const DecodeCase kase = dec_case(c_);
    const std::int64_t pr = pt.root();
    if (dec_intra_reduce(c_)) reduce(p, s, 0, pt, pe, [&](std::int64_t n) { return rank(q, n); });
    switch (kase) {
      case DecodeCase::cube_repl_pe_tp: finish(p, s, w, true); break;
      case DecodeCase::cube_repl_pe_sp:
        if (pe == pr) finish(p, s, w, dec_writer(c_, q));
        break;
      case DecodeCase::cube_sp_pe_tp:
        reduce(p, s, 1, ct, q, [&](std::int64_t n) { return rank(n, pe); });
        if (q == ct.root()) finish(p, s, w, true);
        break;
      case DecodeCase::cube_sp_pe_sp:
        if (pe != pr) break;
        reduce(p, s, 1, ct, q, [&](std::int64_t n) { return rank(n, pe); });
        if (!c_.allreduce) {
          if (q == ct.root()) finish(p, s, w, true);
        } else {
          broadcast(p, s, ct, q);
        }
        break;
    }
  }

 private:
  // A PE's accumulated partials and the last ops on its engines.
  struct State {
    SramBuf m, l, o, t;  // accumulated max, sum, output (f32, R rows) and a scratch row
    std::int64_t rows = 0;
    OpId last_vec = engine::kNoOp, last_mm = engine::kNoOp;
  };

  Signal signal(int kind, std::int64_t a, std::int64_t b, std::int64_t slot) {
    const auto key = std::make_tuple(kind, a, b, slot);
    auto it = signals_.find(key);
    if (it != signals_.end()) return it->second;
    static const char* kinds[] = {"pe inbox", "cube inbox", "inbox free", "answer"};
    const Signal s = ctx_.signal(std::string(kinds[kind]) + " " + std::to_string(a) + "." + std::to_string(b) + "#" +
                                 std::to_string(slot));
    signals_.emplace(key, s);
    return s;
  }


  State compute(PeProgram& p, const DecWork& w) {
    const std::int64_t d = c_.d_head, dv = dec_dv(c_), G = dec_group(c_), H = c_.h_kv, L = w.kv.len;
    const bool shared = dec_kv_shared(c_);
    const std::int64_t lc = std::min(c_.chunk, L), J = (L + lc - 1) / lc, R = w.units.len * G;
    State s;
    s.rows = R;
    const SramBuf qb = p.sram(R * d * 2, DType::f16);
    const std::int64_t kvb = dec_kv_bytes(c_);
    const DType kvt = decode_kv_dtype(c_);
    const SramBuf kb[2] = {p.sram(d * lc * kvb, kvt), p.sram(d * lc * kvb, kvt)};
    // V in buffers of its own, or (shared) the first dv rows of K's.
    const SramBuf vb[2] = {shared ? p.slice(kb[0], 0, dv * lc) : p.sram(lc * dv * kvb, kvt),
                           shared ? p.slice(kb[1], 0, dv * lc) : p.sram(lc * dv * kvb, kvt)};
    const SramBuf sb = p.sram(G * lc * 4, DType::f32);
    const SramBuf oc = p.sram(G * dv * 4, DType::f32), mc = p.sram(G * 4, DType::f32), lcb = p.sram(G * 4, DType::f32);
    s.m = p.sram(R * 4, DType::f32), s.l = p.sram(R * 4, DType::f32), s.o = p.sram(R * dv * 4, DType::f32);
    s.t = p.sram(R * 4, DType::f32);
    const OpId lq = p.load(t_.q, Region{w.units.lo * G, R, 0, d}, qb);
    FlashChunks chain;
    chain.dv = dv, chain.shared = shared;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    std::int64_t step = 0;
    for (std::int64_t u = 0; u < w.units.len; ++u) {
      const std::int64_t unit = w.units.lo + u, b = unit / H, h = unit % H;
      const SramBuf qu = p.slice(qb, u * G * d, G * d);
      const SramBuf mu = p.slice(s.m, u * G, G), lu = p.slice(s.l, u * G, G), ou = p.slice(s.o, u * G * dv, G * dv);
      const SramBuf tu = p.slice(s.t, 0, G);
      for (std::int64_t j = 0; j < J; ++j, ++step) {
        const std::int64_t n = j + 1 < J ? lc : L - (J - 1) * lc, pos = w.kv.lo + j * lc;
        const int slot = static_cast<int>(step % 2);
        const bool first = j == 0;
        // K is stored transposed, [batch, h_kv, d, S]; V as [batch, h_kv, S, d].
        const OpId ldk = p.load(t_.k, Box{{b, h, 0, pos}, {1, 1, d, n}}, kb[slot], {chain.k_free(slot)});
        const OpId ldv = shared ? ldk : p.load(t_.v, Box{{b, h, pos, 0}, {1, 1, n, dv}}, vb[slot], {chain.v_free(slot)});
        chain.step(p, slot, first, lq, ldk, ldv, qu, kb[slot], vb[slot], sb, G, n, d, scale, FlashBufs{mu, lu, ou, tu, mc, lcb, oc});
      }
    }
    s.last_vec = chain.last_vec, s.last_mm = chain.last_mm;
    return s;
  }

  // This PE's part in a reduction over `tree` (kind 0: the PEs of a cube, 1: the cubes, one
  // tree per PE position), as node `me`: merge each child's partials, then send to the parent.
  template <class RankOf>
  void reduce(PeProgram& p, State& s, int kind, const DecTree& tree, std::int64_t me, RankOf rank_of) {
    const std::int64_t d = dec_dv(c_), R = s.rows, pe = p.rank().pe, cube = p.rank().cube;
    const bool flow = kind == 1 && dec_case(c_) == DecodeCase::cube_sp_pe_sp;
    std::int64_t ch[4], dirs[4];
    const int k = tree.children(me, ch, dirs);
    // Case 4: the cube's inboxes are free for the other cubes once its own PEs are merged.
    if (flow && k > 0) {
      const Signal f = signal(2, cube, pe, 0);
      p.raise(f, p.wait({s.last_vec, s.last_mm}));
    }
    for (int j = 0; j < k; ++j) {
      const SramBuf in = p.local(inbox_[static_cast<std::size_t>(tree.slot(dirs[j]))]);
      const Signal got = signal(kind, cube, pe, tree.slot(dirs[j]));
      s.last_vec = flash_merge(p, s.m, s.l, s.o, p.slice(in, 0, R), p.slice(in, R, R), p.slice(in, 2 * R, R * d), s.t, R, d,
                         {got.op, s.last_mm});
    }
    std::int64_t dir = 0;
    const std::int64_t parent = tree.parent(me, &dir);
    if (parent < 0) return;
    const Rank to = rank_of(parent);
    const SramBuf in = p.at(inbox_[static_cast<std::size_t>(tree.slot(dir))], to);
    const Signal got = signal(kind, to.cube, to.pe, tree.slot(dir));
    const OpId free = flow ? signal(2, to.cube, to.pe, 0).op : engine::kNoOp;
    const OpId cm = p.copy(s.m, to, p.slice(in, 0, R), R * 4, {s.last_vec, s.last_mm, free});
    const OpId cl = p.copy(s.l, to, p.slice(in, R, R), R * 4, {s.last_vec, s.last_mm, free});
    const OpId co = p.copy(s.o, to, p.slice(in, 2 * R, R * d), R * d * 4, {s.last_vec, s.last_mm, free});
    p.raise(got, cm);
    p.raise(got, cl);
    p.raise(got, co);
  }

  // O / l, and the answer written to HBM when this PE writes it.
  OpId finish(PeProgram& p, State& s, const DecWork& w, bool writes) {
    const std::int64_t d = dec_dv(c_), G = dec_group(c_);
    const OpId div = p.row_div(s.o, s.l, s.rows, d, {s.last_vec, s.last_mm});
    s.last_vec = div;
    if (writes) p.store(s.o, t_.o, Region{w.units.lo * G, s.rows, 0, d}, {div});
    return div;
  }

  // Case 4 with allreduce: the root cube's answer travels down the tree; every cube stores it.
  void broadcast(PeProgram& p, State& s, const DecTree& tree, std::int64_t q) {
    const std::int64_t d = dec_dv(c_), R = s.rows, pe = p.rank().pe;
    SramBuf src;
    OpId ready;
    if (q == tree.root()) {
      DecWork all{DecSpan{0, dec_units(c_)}, DecSpan{0, 0}};
      ready = finish(p, s, all, false);
      src = s.o;
    } else {
      src = p.slice(p.local(answer_), 0, R * d);
      ready = p.wait({signal(3, q, pe, 0).op});
    }
    std::int64_t ch[4], dirs[4];
    const int k = tree.children(q, ch, dirs);
    for (int j = 0; j < k; ++j) {
      const Rank to = rank(ch[j], pe);
      const OpId cp = p.copy(src, to, p.slice(p.at(answer_, to), 0, R * d), R * d * 4, {ready});
      p.raise(signal(3, ch[j], pe, 0), cp);
    }
    p.store(src, t_.o, Box{{q, 0, 0}, {1, R, d}}, {ready});
  }

  RuntimeContext& ctx_;
  const DecodeConfig& c_;
  const Tensors& t_;
  std::vector<SymBuf> inbox_;
  SymBuf answer_;
  std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t>, Signal> signals_;
};

}  // namespace

std::int64_t decode_reference_ops(const DecodeConfig& in) {
  DecodeConfig c = in;
  decode_complete(c);
  if (c.chunk < 1) return 0;  // not a config the check lets through
  // A copy between two PEs of SIP 0: two port hops in a cube, else one per cube-mesh link.
  const std::int64_t hops = std::max<std::int64_t>(2, c.hw.cube_rows + c.hw.cube_cols - 2);
  // Per working PE besides its steps: loading q; in each of its two reduction trees a wait,
  // the merge of 13 vector ops its partials cost its parent, its three copies up and three
  // signals; the division and store; in a broadcast the copy down to it, its signal, a wait
  // and a store.
  const std::int64_t per_pe = 1 + 2 * (1 + 13 + 3 * hops + 3) + 2 + (hops + 1 + 1 + 1 + 2);
  std::int64_t ops = 0;
  for (std::int64_t q = 0; q < c.hw.cubes_per_sip(); ++q)
    for (std::int64_t pe = 0; pe < c.hw.pes_per_cube(); ++pe) {
      const DecWork w = dec_work(c, q, pe);
      if (!dec_works(w)) continue;
      const std::int64_t lc = std::min(c.chunk, w.kv.len), steps = sat_mul(w.units.len, ceil_div(w.kv.len, lc));
      // A step: K and V loads, two matmuls, five vector ops, and a merge of 13 but in a
      // unit's first.
      ops = sat_add(ops, sat_add(sat_mul(22, steps) - 13 * w.units.len, per_pe));
    }
  return ops;
}

namespace {

// The kernel's tensors: q, the answer, and K [batch, h_kv, d, S] and V [batch, h_kv, S, d]
// split along S as the case says; q, K and V random from `seed` when `random`, else zeros.
Tensors decode_tensors(RuntimeContext& ctx, const DecodeConfig& c, bool random, std::uint64_t seed) {
  const std::int64_t C = c.hw.cubes_per_sip(), U = dec_units(c), G = dec_group(c), d = c.d_head, dv = dec_dv(c), S = c.s_kv;
  const DecodeCase kase = dec_case(c);
  Placement rep;  // on every cube, shared by its PEs
  rep.cubes = C;
  Placement kp = rep, vp = rep;
  const bool cube_sp = kase == DecodeCase::cube_sp_pe_tp || kase == DecodeCase::cube_sp_pe_sp;
  const bool pe_sp = kase == DecodeCase::cube_repl_pe_sp || kase == DecodeCase::cube_sp_pe_sp;
  if (cube_sp) kp.cube = vp.cube = Split::row_wise, kp.cube_dim = 3, vp.cube_dim = 2;
  if (pe_sp) kp.pe = vp.pe = Split::row_wise, kp.pes = vp.pes = c.hw.pes_per_cube(), kp.pe_dim = 3, vp.pe_dim = 2;
  Tensors t;
  if (random) {
    t.q = ctx.random({U * G, d}, DType::f16, rep, "q", seed);
    t.k = ctx.random({c.batch, c.h_kv, d, S}, decode_kv_dtype(c), kp, "K", seed + 1);
    if (!dec_kv_shared(c)) t.v = ctx.random({c.batch, c.h_kv, S, dv}, decode_kv_dtype(c), vp, "V", seed + 2);
  } else {
    t.q = ctx.zeros({U * G, d}, DType::f16, rep, "q");
    t.k = ctx.zeros({c.batch, c.h_kv, d, S}, decode_kv_dtype(c), kp, "K");
    if (!dec_kv_shared(c)) t.v = ctx.zeros({c.batch, c.h_kv, S, dv}, decode_kv_dtype(c), vp, "V");
  }
  if (c.allreduce) {
    Placement op = rep;
    op.cube = Split::row_wise;
    t.o = ctx.zeros({C, U * G, dv}, DType::f16, op, "O");
    t.per_cube = true;
  } else {
    t.o = ctx.zeros({U * G, dv}, DType::f16, rep, "O");
  }
  return t;
}

}  // namespace

void decode_compose(RuntimeContext& ctx, const DecodeConfig& c) {
  const std::int32_t st = decode_check(c);
  if (st != kDecOk) throw InputError(decode_status_message(st, c));
  if (c.allreduce) throw InputError("decode: a composed kernel has no cross-cube reduce");
  const Tensors t = decode_tensors(ctx, c, false, 0);  // the kernel keeps a reference
  DecodeKernel kernel(ctx, c, t);
  ctx.launch(decode_panel(c.decode_case), LaunchGrid{1, c.hw.cubes_per_sip(), c.hw.pes_per_cube()},
             [&](PeProgram& p) { kernel(p); });
  kernel.release();
}

DecodeRun run_decode(const DecodeConfig& c, bool data, std::uint64_t seed, const std::string* trace_path,
                     const std::vector<std::vector<float>>* inputs) {
  const std::int32_t st = decode_check(c);
  if (st != kDecOk) throw InputError(decode_status_message(st, c));
  RuntimeContext ctx(topology_of(c.hw), ContextOptions{data});
  ctx.limit_ops(decode_reference_ops(c));
  const std::int64_t C = c.hw.cubes_per_sip(), P = c.hw.pes_per_cube(), U = dec_units(c), G = dec_group(c);
  const std::int64_t d = dec_dv(c);
  DecodeRun out;
  Tensors t;
  // The request was validated: anything the runtime rejects from here on is a bug of the
  // kernel, not the user's input.
  try {
    t = decode_tensors(ctx, c, data && !inputs, seed);
    if (data && inputs) {  // q, K and V; with V shared (the first dv rows of K), q and K
      const std::size_t want = dec_kv_shared(c) ? 2 : 3;
      if (inputs->size() != want)
        throw InputError("decode: " + std::to_string(want) + " input tensors, " + std::to_string(inputs->size()) + " given");
      ctx.assign(t.q, (*inputs)[0]);
      ctx.assign(t.k, (*inputs)[1]);
      if (want == 3) ctx.assign(t.v, (*inputs)[2]);
    }
    DecodeKernel kernel(ctx, c, t);
    ctx.launch(decode_panel(c.decode_case), LaunchGrid{1, C, P}, [&](PeProgram& p) { kernel(p); });
  } catch (const InputError& e) {
    throw InternalError(std::string("the decode kernel was rejected by the runtime: ") + e.what(), __FILE__, __LINE__);
  }
  out.report = ctx.run_checked("decode", "decode");
  if (data) {
    out.q = ctx.values(t.q), out.k = ctx.values(t.k);
    if (!dec_kv_shared(c)) out.v = ctx.values(t.v);
    const auto& o = ctx.values(t.o);
    const std::size_t one = static_cast<std::size_t>(U * G * d);
    for (std::size_t at = 0; at < o.size(); at += one) out.outputs.emplace_back(o.begin() + static_cast<std::ptrdiff_t>(at), o.begin() + static_cast<std::ptrdiff_t>(at + one));
  }
  if (trace_path) ctx.write_trace(*trace_path, out.report);
  // PEs that read HBM: the ranks of the graph's loads.
  std::set<std::tuple<std::int32_t, std::int32_t, std::int32_t>> readers;
  for (const engine::Op& op : ctx.graph().ops())
    if (op.kind == engine::OpKind::dma_load) readers.emplace(op.rank.sip, op.rank.cube, op.rank.pe);
  out.readers = static_cast<std::int64_t>(readers.size());
  (void)P;
  return out;
}

std::vector<double> decode_dense_reference(const DecodeConfig& c, const DecodeRun& run) {
  const std::int64_t U = dec_units(c), G = dec_group(c), d = c.d_head, dv = dec_dv(c), S = c.s_kv, H = c.h_kv;
  std::vector<double> o(static_cast<std::size_t>(U * G * dv), 0.0);
  std::vector<double> sc(static_cast<std::size_t>(S));
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (std::int64_t u = 0; u < U; ++u) {
    const std::int64_t b = u / H, h = u % H;
    const float* K = run.k.data() + (b * H + h) * d * S;  // [d, S]
    // V [S, dv], or (shared) K's first dv rows: V at (s, e) is K's (e, s).
    const bool shared = dec_kv_shared(c);
    const float* V = shared ? K : run.v.data() + (b * H + h) * S * dv;
    const std::int64_t vs = shared ? 1 : dv, ve = shared ? S : 1;
    for (std::int64_t g = 0; g < G; ++g) {
      const float* qr = run.q.data() + (u * G + g) * d;
      double mx = -1e300;
      for (std::int64_t s = 0; s < S; ++s) {
        double acc = 0;
        for (std::int64_t e = 0; e < d; ++e) acc += static_cast<double>(qr[e]) * K[e * S + s];
        sc[static_cast<std::size_t>(s)] = acc * scale;
        mx = std::max(mx, acc * scale);
      }
      double sum = 0;
      for (std::int64_t s = 0; s < S; ++s) sum += (sc[static_cast<std::size_t>(s)] = std::exp(sc[static_cast<std::size_t>(s)] - mx));
      double* out = o.data() + (u * G + g) * dv;
      for (std::int64_t s = 0; s < S; ++s) {
        const double w = sc[static_cast<std::size_t>(s)] / sum;
        for (std::int64_t e = 0; e < dv; ++e) out[e] += w * V[s * vs + e * ve];
      }
    }
  }
  return o;
}

DecodeResult decode_reference(const DecodeConfig& c, const std::string* trace_path, KernelValues* data) {
  if (data && c.allreduce) throw InputError("decode: data mode of a layer program has no cross-cube reduce");
  const DecodeRun run = run_decode(c, data != nullptr, 1, trace_path, data ? &data->in : nullptr);
  if (data) data->out = run.outputs.at(0);
  const engine::Summary& s = run.report.summary;
  DecodeResult r{};
  r.status = kDecOk;
  r.latency_ps = s.latency_ps;
  r.mac_cycles = s.mac_cycles;
  r.macs = s.macs;
  r.matrix_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::matrix)];
  r.vector_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::vector)];
  r.dma_busy_ps = s.busy_ps[static_cast<std::size_t>(engine::ResourceClass::dma)];
  r.hbm_read_bytes = s.hbm_read_bytes;
  r.hbm_write_bytes = s.hbm_write_bytes;
  r.vector_ops = s.vector_ops, r.sram_read_bytes = s.sram_read_bytes, r.sram_write_bytes = s.sram_write_bytes;
  r.link_bytes_pe = s.link_bytes[0], r.link_bytes_cube = s.link_bytes[1], r.link_bytes_sip = s.link_bytes[2];
  r.copies_pe = s.link_copies[0], r.copies_cube = s.link_copies[1], r.copies_sip = s.link_copies[2];
  // The KV footprint as the runtime placed it: each cube's HBM in use, less q and the output.
  const std::int64_t qo = dec_qo_cube_bytes(c);
  for (std::int64_t q = 0; q < c.hw.cubes_per_sip(); ++q) {
    const std::int64_t kv = run.report.hbm_footprint_bytes[static_cast<std::size_t>(q)] - qo;
    r.kv_footprint_bytes += kv;
    r.kv_max_cube_bytes = std::max(r.kv_max_cube_bytes, kv);
  }
  r.working_pes = run.readers;
  return r;
}

std::string decode_status_message(std::int32_t status, const DecodeConfig& c) {
  const std::string kase = "case " + std::to_string(c.decode_case);
  switch (static_cast<DecodeStatus>(status)) {
    case kDecOk: return "valid";
    case kDecBadCase: return "case: " + std::to_string(c.decode_case) + " is not 1..4 (or allreduce is not 0 or 1)";
    case kDecBadShape:
      if (c.kv_bytes < 0 || c.kv_bytes > 2)
        return "kv-bytes: must be 1 or 2 (or 0 for the fp16 default; got " + std::to_string(c.kv_bytes) + ")";
      if (c.d_v < -kDecMaxDHead || c.d_v > kDecMaxDHead || (dec_kv_shared(c) && dec_dv(c) > c.d_head))
        return "d_v: a value head of 1.." + std::to_string(kDecMaxDHead) + " values (shared with K: at most d_head " +
               std::to_string(c.d_head) + "; got " + std::to_string(c.d_v) + ")";
      return "shape: s_kv 1.." + std::to_string(kDecMaxSkv) + ", batch 1.." + std::to_string(kDecMaxBatch) + ", h_q 1.." +
             std::to_string(kDecMaxHeads) + " a multiple of h_kv, d_head 1.." + std::to_string(kDecMaxDHead) + " (got s_kv " +
             std::to_string(c.s_kv) + ", batch " + std::to_string(c.batch) + ", h_q " + std::to_string(c.h_q) + ", h_kv " +
             std::to_string(c.h_kv) + ", d_head " + std::to_string(c.d_head) + ")";
    case kDecShortKv:
      return "s-kv: " + kase + " splits the KV cache into " + std::to_string(dec_kv_parts(c)) + " parts; s_kv " +
             std::to_string(c.s_kv) + " is shorter";
    case kDecBadChunk: return "kv-chunk: " + std::to_string(c.chunk) + " is outside 1..s_kv (" + std::to_string(c.s_kv) + ")";
    case kDecBadAllreduce: return "allreduce: only case 4 reduces across cubes to one root; " + kase + " does not";
    case kDecTooLarge:
      return "the topology has " + std::to_string(c.hw.cubes_per_sip()) + " cubes of " + std::to_string(c.hw.pes_per_cube()) +
             " PEs per SIP; decode models at most " + std::to_string(kDecMaxGrid) + " of each and " +
             std::to_string(kDecMaxPes) + " PEs";
    case kDecSramOverflow: {
      const std::int64_t rows = dec_max_rows(c), lc = std::min(c.chunk, dec_max_shard(c));
      return "kv-chunk: " + kase + " needs " + std::to_string(dec_sram_bytes(c, rows, lc)) + " bytes of SRAM per PE (" +
             std::to_string(rows) + " query rows, chunk " + std::to_string(lc) + ", " + std::to_string(dec_slots(c)) +
             " inbox(es)); a PE has " + std::to_string(c.hw.sram_bytes()) + ": use a smaller --kv-chunk or batch";
    }
    case kDecHbmOverflow: {
      std::int64_t most = 0;
      for (std::int64_t q = 0; q < c.hw.cubes_per_sip(); ++q) most = std::max(most, dec_kv_cube_bytes(c, q));
      return "s-kv: " + kase + " places " + std::to_string(most + dec_qo_cube_bytes(c)) +
             " bytes (KV cache, q and the output) on one cube, whose HBM holds " + std::to_string(c.hw.hbm_capacity_bytes());
    }
    case kDecTimeOverflow: return "the simulated time could pass 2^61 ps (int64 overflow guard): use a smaller problem";
    case kDecBadHardware: return "hardware: a field is outside the range a topology file allows (docs/topology.md)";
    default: return "invalid";
  }
}

}  // namespace kb
