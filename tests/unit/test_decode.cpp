// GQA decode attention on the reference runtime: every case's answer matches a float64
// dense attention within fp16 accuracy; the structure the study describes (who works, the
// copies per level, the root cube, the memory footprint) holds; the reduction trees are the
// collectives' reduce to the centre root; the vector ops the merges use compute and cost
// what they say.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "topologies.h"
#include "benches/milestone_gqa_decode.h"
#include "host/common/error.h"
#include "device/models/collective/allreduce_model.h"
#include "host/families/decode/decode_program.h"
#include "host/runtime/numeric.h"
#include "host/topology/load.h"

namespace kb {
namespace {

using kb::unittest::topo;
using kb::unittest::tiny;

DecodeConfig small(std::int64_t k, std::int64_t s_kv, std::int64_t batch, std::int64_t h_q, std::int64_t h_kv,
                   std::int64_t d, std::int64_t chunk, bool allreduce = false) {
  DecodeConfig c{};
  c.hw = topo("default.yaml").hw();
  c.decode_case = k, c.s_kv = s_kv, c.batch = batch, c.h_q = h_q, c.h_kv = h_kv, c.d_head = d, c.chunk = chunk;
  c.allreduce = allreduce;
  decode_complete(c);
  return c;
}

// Normwise relative error: max |out - ref| over max |ref|.
double max_rel_error(const std::vector<float>& out, const std::vector<double>& ref) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(out[i]) - ref[i]));
    scale = std::max(scale, std::fabs(ref[i]));
  }
  return err / scale;
}

TEST(Decode, EveryCaseMatchesDenseAttentionInFloat64) {
  // Ragged shards and chunks, several units per PE, groups of 4 queries per KV head.
  struct Shape {
    std::int64_t s_kv, batch, h_q, h_kv, d, chunk;
  };
  const Shape shapes[] = {{1000, 1, 8, 1, 64, 48}, {700, 3, 8, 2, 32, 0}, {4099, 2, 4, 1, 16, 33}};
  double worst = 0;
  for (const Shape& s : shapes)
    for (std::int64_t k = 1; k <= 4; ++k)
      for (bool ar : {false, true}) {
        if (ar && k != 4) continue;
        const DecodeConfig c = small(k, s.s_kv, s.batch, s.h_q, s.h_kv, s.d, s.chunk, ar);
        ASSERT_EQ(decode_check(c), kDecOk) << decode_status_message(decode_check(c), c);
        const DecodeRun run = run_decode(c, true, 11 + static_cast<std::uint64_t>(k));
        const std::vector<double> ref = decode_dense_reference(c, run);
        ASSERT_EQ(run.outputs.size(), ar ? static_cast<std::size_t>(c.hw.cubes_per_sip()) : 1u);
        for (std::size_t q = 0; q < run.outputs.size(); ++q) {
          const double e = max_rel_error(run.outputs[q], ref);
          worst = std::max(worst, e);
          // fp16 storage of the answer (2^-11) plus f16 inputs through f32 arithmetic.
          EXPECT_LT(e, 4e-3) << "case " << k << " s_kv " << s.s_kv << " batch " << s.batch << " cube " << q;
        }
      }
  std::cout << "decode: max relative error against float64 dense attention: " << worst << "\n";
  RecordProperty("max_relative_error", std::to_string(worst));
}

// Latent attention's shared K and V (d_v < 0: V is the first -d_v values of each key, read
// from K's buffer transposed), in every case, against the same float64 attention.
TEST(Decode, SharedKvMatchesDenseAttentionInFloat64) {
  double worst = 0;
  for (std::int64_t k = 1; k <= 4; ++k)
    for (bool ar : {false, true}) {
      if (ar && k != 4) continue;
      DecodeConfig c = small(k, 333, 2, 8, 1, 40, 25, ar);
      c.d_v = -32;
      ASSERT_EQ(decode_check(c), kDecOk) << decode_status_message(decode_check(c), c);
      const DecodeRun run = run_decode(c, true, 5 + static_cast<std::uint64_t>(k));
      ASSERT_TRUE(run.v.empty());
      const std::vector<double> ref = decode_dense_reference(c, run);
      ASSERT_EQ(ref.size(), static_cast<std::size_t>(2 * 8 * 32));
      for (const std::vector<float>& out : run.outputs) {
        const double e = max_rel_error(out, ref);
        worst = std::max(worst, e);
        EXPECT_LT(e, 4e-3) << "case " << k;
      }
    }
  std::cout << "decode, shared K and V: max relative error against float64: " << worst << "\n";
}

// The model walks a cube's PEs (dec_cube_works); the reference asks dec_work PE by PE: the
// same spans for every case, grid, batch and length, uneven splits included.
TEST(Decode, ACubesWalkGivesEachPeItsWork) {
  std::mt19937_64 rng(11);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  DecodeConfig c{};
  c.hw = unittest::topo("default.yaml").hw();
  for (int i = 0; i < 20000; ++i) {
    c.hw.cube_rows = pick(1, 8), c.hw.cube_cols = pick(1, 8), c.hw.pe_rows = pick(1, 8), c.hw.pe_cols = pick(1, 8);
    c.decode_case = pick(1, 4), c.batch = pick(1, 40), c.h_kv = pick(1, 8), c.h_q = c.h_kv * pick(1, 4);
    c.s_kv = pick(0, 1) ? pick(1, 100) : pick(1, 1 << 20);
    DecWork ws[kDecMaxGrid];
    for (std::int64_t q = 0; q < c.hw.cubes_per_sip(); ++q) {
      dec_cube_works(c, q, ws);
      for (std::int64_t p = 0; p < c.hw.pes_per_cube(); ++p) {
        const DecWork w = dec_work(c, q, p);
        ASSERT_EQ(ws[p].units.lo, w.units.lo) << i << " " << q << " " << p;
        ASSERT_EQ(ws[p].units.len, w.units.len) << i << " " << q << " " << p;
        ASSERT_EQ(ws[p].kv.lo, w.kv.lo) << i << " " << q << " " << p;
        ASSERT_EQ(ws[p].kv.len, w.kv.len) << i << " " << q << " " << p;
      }
    }
  }
}

// A config's evaluation state fits the 16 KiB a CUDA thread may hold (docs/PERFORMANCE.md,
// tools/cuda-local-memory.sh): the largest SIP's 1024 PE states take 12 KiB, and the kernels
// add about 2.5 KiB of their own (the config, the result, the phases' locals).
TEST(Decode, TheEvaluationStateFitsSixteenKiB) {
  EXPECT_LE(sizeof(dec_detail::DecodeEval), std::size_t{14} * 1024 - 512);
  EXPECT_EQ(sizeof(dec_detail::Bundle), 16u);
}

// Cubes alike (equal cube keys) are evaluated once and their totals repeated: on 10^5 random
// configs (every case, ragged splits, cubes without work, shared HBM) the result is bytewise
// the one of evaluating every cube on its own.
TEST(Decode, CubesAlikeShareOneEvaluation) {
  std::mt19937_64 rng(29);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const std::int64_t arrays[] = {1, 2, 3, 4, 8, 16, 32};
  const HwConfig base = unittest::topo("default.yaml").hw();
  std::int64_t valid[5] = {0, 0, 0, 0, 0}, alike = 0, deferred = 0;
  for (int i = 0; i < 100000; ++i) {
    DecodeConfig c{};
    HwConfig& h = c.hw;
    h = base;
    h.cube_rows = pick(1, 5), h.cube_cols = pick(1, 6), h.pe_rows = pick(1, 5), h.pe_cols = pick(1, 6);
    for (LinkSpec* l : {&h.cube_link, &h.ipcq}) l->bandwidth_gbps = pick(1, 400), l->latency_ns = pick(0, 3) ? pick(0, 800) : 0;
    h.hbm_bandwidth_gbps = pick(1, 1500), h.hbm_latency_ns = pick(0, 3) ? pick(0, 300) : 0;
    h.dma_engines = pick(1, 4), h.dma_bandwidth_gbps = pick(1, 400), h.clock_mhz = pick(100, 3000);
    h.vector_lanes = pick(1, 128), h.matrix_rows = arrays[pick(0, 6)], h.matrix_cols = arrays[pick(0, 6)];
    h.dataflow = static_cast<Dataflow>(pick(0, 2));
    h.hbm_tenants = pick(0, 3) ? 0 : pick(1, 4);
    c.decode_case = pick(1, 4), c.allreduce = c.decode_case == 4 ? pick(0, 1) : 0;
    c.h_kv = INT64_C(1) << pick(0, 4), c.h_q = c.h_kv * pick(1, 8), c.batch = pick(0, 2) ? pick(1, 8) : pick(1, 200);
    c.d_head = pick(0, 1) ? 128 : pick(1, 256), c.kv_bytes = pick(0, 2);
    c.s_kv = pick(0, 1) ? pick(1, 5000) : pick(1, 1 << 20), c.chunk = pick(0, 2) ? 0 : pick(1, 600);
    decode_complete(c);
    const DecodeResult shared = decode_model(c), apart = decode_model(c, true);
    ASSERT_EQ(0, std::memcmp(&shared, &apart, sizeof shared))
        << i << ": case " << c.decode_case << " s_kv " << c.s_kv << " batch " << c.batch << ": latency "
        << shared.latency_ps << " against " << apart.latency_ps;
    // The first stage's state (two_stage.h) gives the same, or defers a SIP beyond its PEs.
    const DecodeResult first = DecodeModel::evaluate_small(c);
    const bool beyond = h.cubes_per_sip() * h.pes_per_cube() > dec_detail::kDecFirstPes;
    if (shared.status == kDecOk && beyond) {
      ASSERT_EQ(first.status, kStatusDeferred) << i;
      ++deferred;
    } else {
      ASSERT_EQ(0, std::memcmp(&shared, &first, sizeof shared)) << i << ": first stage " << first.latency_ps;
    }
    if (shared.status != kDecOk) continue;
    ++valid[c.decode_case];
    alike += h.cubes_per_sip() > 1;
  }
  for (int k = 1; k <= 4; ++k) EXPECT_GT(valid[k], 15000) << "case " << k;
  EXPECT_GT(alike, 50000);
  EXPECT_GT(deferred, 10000);
  EXPECT_LT(deferred, valid[1] + valid[2] + valid[3] + valid[4] - 10000);
}

// The milestone's configs, every one of them, take the first stage (a device thread's 4 KiB:
// tools/cuda-local-memory.sh) and give the full state's result; its state is within 2 KiB.
TEST(Decode, TheMilestoneTakesTheFirstStage) {
  EXPECT_LE(sizeof(dec_detail::DecodeEvalT<dec_detail::kDecFirstPes>), std::size_t{2} * 1024);
  const std::vector<DecodeConfig> mix = decode_milestone_configs(unittest::topo("default.yaml"));
  ASSERT_GT(mix.size(), 20u);
  for (DecodeConfig c : mix) {
    decode_complete(c);
    const DecodeResult first = DecodeModel::evaluate_small(c), full = DecodeModel::evaluate(c);
    ASSERT_NE(first.status, kStatusDeferred);
    ASSERT_EQ(0, std::memcmp(&first, &full, sizeof full)) << first.latency_ps << " " << full.latency_ps;
  }
}

// The op bound the reference is held to (decode_reference_ops) is an upper bound of the ops
// the kernel builds, and a close one.
TEST(Decode, TheOpBoundIsCloseAbove) {
  double loosest = 0;
  int runs = 0;
  for (std::int64_t k = 1; k <= 4; ++k)
    for (std::int64_t chunk : {16, 64, 0})
      for (std::int64_t batch : {1, 3})
        for (bool allreduce : {false, true}) {
          if (allreduce && k != 4) continue;
          const DecodeConfig c = small(k, 4096, batch, 8, 1, 64, chunk, allreduce);
          const std::int64_t ops = run_decode(c, false, 1, nullptr).report.summary.ops, bound = decode_reference_ops(c);
          EXPECT_LE(ops, bound) << k << " " << chunk << " " << batch;
          loosest = std::max(loosest, static_cast<double>(bound) / static_cast<double>(ops));
          ++runs;
        }
  EXPECT_EQ(runs, 30);
  EXPECT_LT(loosest, 3.5) << "the bound refuses runs far smaller than --max-ops";
  // Where the cap matters, runs of many steps, it is within a few percent.
  const DecodeConfig big = small(1, 16384, 16, 8, 1, 128, 16);
  const std::int64_t ops = run_decode(big, false, 1, nullptr).report.summary.ops, bound = decode_reference_ops(big);
  EXPECT_LE(ops, bound);
  EXPECT_LT(static_cast<double>(bound), 1.05 * static_cast<double>(ops));
}

TEST(Decode, TheStudysStructure) {
  const TopologySpec t = topo("default.yaml");
  struct Want {
    std::int64_t pes, copies_pe, copies_cube, root_cube, footprint_mib;
  };
  const Want want[] = {{8, 0, 21, 6, 64}, {1, 0, 0, -1, 512}, {64, 168, 0, -1, 512}, {64, 168, 21, 6, 64}};
  for (std::int64_t k = 1; k <= 4; ++k) {
    const DecodeConfig c = decode_headline(t, k);
    const DecodeResult r = decode_reference(c, nullptr);
    const Want& w = want[k - 1];
    EXPECT_EQ(r.working_pes, w.pes) << k;
    EXPECT_EQ(r.copies_pe, w.copies_pe) << k;
    EXPECT_EQ(r.copies_cube, w.copies_cube) << k;
    EXPECT_EQ(r.copies_sip, 0) << k;
    EXPECT_EQ(dec_root_cube(c), w.root_cube) << k;
    EXPECT_EQ(r.kv_footprint_bytes, w.footprint_mib << 20) << k;
    EXPECT_EQ(r.hbm_write_bytes, 8 * 128 * 2) << k;  // one answer, written once
    EXPECT_GE(r.latency_ps, dec_case_bound_ps(c)) << k;
    EXPECT_GE(dec_case_bound_ps(c), dec_lower_bound_ps(c)) << k;
  }
  // Case 4 with allreduce: the answer travels back over the 7 tree edges and every cube writes it.
  DecodeConfig ar = decode_headline(t, 4);
  ar.allreduce = 1;
  const DecodeResult r = decode_reference(ar, nullptr);
  EXPECT_EQ(r.copies_cube, 21 + 7);
  EXPECT_EQ(r.hbm_write_bytes, 8 * 8 * 128 * 2);
  // The centre of a 2 x 4 grid is (1, 2): cube 6, and PE 6 of each cube.
  EXPECT_EQ(dec_cube_tree(ar).root(), 6);
  EXPECT_EQ(dec_pe_tree(ar).root(), 6);
}

// The trees' edges are the collectives' reduce to the centre root (algo root, op reduce).
TEST(Decode, TreesAreTheCollectivesReduceToRoot) {
  for (std::int64_t rows = 1; rows <= 4; ++rows)
    for (std::int64_t cols = 1; cols <= 4; ++cols) {
      if (rows * cols < 2) continue;
      AllreduceConfig a{};
      a.hw = topo("default.yaml").hw();
      a.hw.pe_rows = rows, a.hw.pe_cols = cols;
      a.level = static_cast<std::int64_t>(CollLevel::pe);
      a.algo = static_cast<std::int64_t>(CollAlgo::root);
      a.op = static_cast<std::int64_t>(CollOp::reduce);
      a.ranks = rows * cols, a.chunks = 1, a.bytes = 2 * a.ranks * 4, a.buffer = 0;
      ASSERT_EQ(allreduce_check(a), kArOk);
      struct Sink {
        std::set<std::pair<std::int64_t, std::int64_t>> edges;
        void xfer(std::int64_t, const CollXfer& x) { edges.emplace(x.src, x.dst); }
        void flush() {}
      } sink;
      coll_schedule(a, sink);
      std::set<std::pair<std::int64_t, std::int64_t>> ours;
      const DecTree t = DecTree::of(rows, cols);
      EXPECT_EQ(t.root(), coll_root(a));
      for (std::int64_t n = 0; n < rows * cols; ++n) {
        const std::int64_t p = t.parent(n);
        if (p >= 0) ours.emplace(n, p);
        // Children are exactly the nodes whose parent this is, and the order visits them first.
        std::int64_t ch[4], dirs[4];
        const int k = t.children(n, ch, dirs);
        for (int j = 0; j < k; ++j) EXPECT_EQ(t.parent(ch[j]), n);
      }
      EXPECT_EQ(ours, sink.edges) << rows << "x" << cols;
      std::set<std::int64_t> seen;
      for (std::int64_t i = 0; i < rows * cols; ++i) {
        const std::int64_t n = t.order(i);
        std::int64_t ch[4], dirs[4];
        const int k = t.children(n, ch, dirs);
        for (int j = 0; j < k; ++j) EXPECT_TRUE(seen.count(ch[j])) << rows << "x" << cols << " node " << n;
        seen.insert(n);
      }
      EXPECT_EQ(static_cast<std::int64_t>(seen.size()), rows * cols);
    }
}

// A receiver's in-port serves its children's back-to-back copies as a merge of their streams:
// the same order and landings as sorting every copy by goes_first and serving them in turn
// (sim::serve_all), ties, zero busy times and zero latencies included.
TEST(Decode, InPortMergeIsTheSortedServe) {
  struct Copy {
    ps_t ready, busy;
    std::int64_t pe, issue;
    int who;
    sim::Claim claim() const { return sim::Claim{ready, pe, issue}; }
  };
  std::mt19937_64 rng(5);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 200000; ++trial) {
    const int k = static_cast<int>(pick(1, 4));
    const ps_t bm = pick(0, 2) ? pick(0, 50) : 0, bo = pick(0, 3) ? pick(0, 400) : 0, lat = pick(0, 1) ? pick(0, 30) : 0;
    std::int64_t pe[4];
    ps_t sent[4], landed[4];
    std::vector<std::int64_t> pes = {0, 1, 2, 3, 4, 5, 6, 7};
    std::shuffle(pes.begin(), pes.end(), rng);
    Copy m[12];
    int n = 0;
    for (int j = 0; j < k; ++j) {
      pe[j] = pes[j];
      sent[j] = pick(0, 2) ? pick(0, 120) : 60;  // often equal
      for (int e = 0; e < 3; ++e) m[n++] = Copy{sent[j] + e * bm, e == 2 ? bo : bm, pe[j], e, j};
    }
    dec_detail::serve_partials(k, sent, pe, bm, bo, lat, landed);
    sim::serve_all(m, n, lat);
    ps_t want[4] = {0, 0, 0, 0};
    for (int i = 0; i < n; ++i) want[m[i].who] = std::max(want[m[i].who], m[i].ready);
    for (int j = 0; j < k; ++j) ASSERT_EQ(landed[j], want[j]) << "trial " << trial << " child " << j;
  }
}

// The plan a reduce walks lists exactly the nodes with children, in order(), with children().
TEST(Decode, TreePlanIsTheOrderAndChildren) {
  for (std::int64_t rows = 1; rows <= kDecMaxGrid; ++rows)
    for (std::int64_t cols = 1; rows * cols <= kDecMaxGrid; ++cols) {
      const DecTree t = DecTree::of(rows, cols);
      const DecPlan plan(t);
      int at = 0;
      for (std::int64_t i = 0; i < rows * cols; ++i) {
        const std::int64_t n = t.order(i);
        std::int64_t ch[4], dirs[4];
        const int k = t.children(n, ch, dirs);
        if (k == 0) continue;
        ASSERT_LT(at, plan.n) << rows << "x" << cols;
        EXPECT_EQ(static_cast<std::int64_t>(plan.node[at]), n) << rows << "x" << cols << " entry " << at;
        std::int64_t pch[4];
        ASSERT_EQ(plan.children(at, pch), k) << rows << "x" << cols << " node " << n;
        for (int j = 0; j < k; ++j) EXPECT_EQ(pch[j], ch[j]) << rows << "x" << cols << " node " << n;
        ++at;
      }
      EXPECT_EQ(at, plan.n) << rows << "x" << cols;
    }
}

TEST(Decode, AutomaticChunkFitsTheSramAndBadRequestsNameTheirReason) {
  DecodeConfig c = small(4, 131072, 64, 8, 1, 128, 0);
  EXPECT_EQ(decode_check(c), kDecOk);
  EXPECT_LE(dec_sram_bytes(c, dec_max_rows(c), c.chunk), c.hw.sram_bytes());
  c = small(2, 131072, 1, 8, 1, 128, 131072);
  EXPECT_EQ(decode_check(c), kDecSramOverflow);
  EXPECT_NE(decode_status_message(kDecSramOverflow, c).find("bytes of SRAM"), std::string::npos);
  EXPECT_EQ(decode_check(small(4, 63, 1, 8, 1, 128, 0)), kDecShortKv);
  EXPECT_EQ(decode_check(small(4, 64, 1, 8, 3, 128, 0)), kDecBadShape);
  EXPECT_EQ(decode_check(small(2, 1024, 1, 8, 1, 128, 0, true)), kDecBadAllreduce);
  EXPECT_EQ(decode_check(small(2, INT64_C(1) << 24, 64, 64, 8, 128, 0)), kDecHbmOverflow);
  EXPECT_THROW(run_decode(small(5, 1024, 1, 8, 1, 128, 0), false), InputError);
}

// The vector ops the merges use: values in f32 stored to the buffer's type, and one pass of
// the lanes each (tiny: 4 lanes at 1 GHz).
TEST(Decode, CopySubAndRowBroadcastOps) {
  RuntimeContext ctx(topo("tiny.yaml"), ContextOptions{true});
  const Tensor a = ctx.random({4, 8}, DType::f32, Placement{}, "a", 5);
  const Tensor v = ctx.random({4, 1}, DType::f32, Placement{}, "v", 6);
  const VecOp ops[] = {VecOp::copy, VecOp::sub, VecOp::row_sub, VecOp::row_mul, VecOp::row_div};
  std::vector<Tensor> outs;
  std::vector<OpId> id(5);
  for (int i = 0; i < 5; ++i) outs.push_back(ctx.zeros({4, 8}, DType::f32, Placement{}, "o" + std::to_string(i)));
  ctx.launch("vec", LaunchGrid{}, [&](PeProgram& p) {
    for (int i = 0; i < 5; ++i) {
      const SramBuf x = p.sram(128, DType::f32), y = p.sram(128, DType::f32), r = p.sram(16, DType::f32);
      const OpId lx = p.load(a, Region{0, 4, 0, 8}, x), lr = p.load(v, Region{0, 4, 0, 1}, r);
      const OpId ly = p.load(a, Region{0, 4, 0, 8}, y);
      switch (ops[i]) {
        case VecOp::copy: id[i] = p.vector_copy(x, r, 4, {lx, lr}); break;
        case VecOp::sub: id[i] = p.vector_sub(x, y, 32, {lx, ly}); break;
        case VecOp::row_sub: id[i] = p.row_sub(x, r, 4, 8, {lx, lr}); break;
        case VecOp::row_mul: id[i] = p.row_mul(x, r, 4, 8, {lx, lr}); break;
        default: id[i] = p.row_div(x, r, 4, 8, {lx, lr}); break;
      }
      p.store(x, outs[static_cast<std::size_t>(i)], Region{0, 4, 0, 8}, {id[i]});
    }
  });
  const RunReport rep = ctx.run();
  ASSERT_EQ(rep.status, engine::Status::ok) << rep.message;
  const auto& A = ctx.values(a);
  const auto& V = ctx.values(v);
  for (int i = 0; i < 5; ++i) {
    const auto& o = ctx.values(outs[static_cast<std::size_t>(i)]);
    for (int e = 0; e < 32; ++e) {
      const float x = A[static_cast<std::size_t>(e)], r = V[static_cast<std::size_t>(e / 8)];
      float want = 0;
      switch (ops[i]) {
        case VecOp::copy: want = e < 4 ? V[static_cast<std::size_t>(e)] : x; break;
        case VecOp::sub: want = 0.0f; break;
        case VecOp::row_sub: want = x - r; break;
        case VecOp::row_mul: want = x * r; break;
        default: want = x / r; break;
      }
      EXPECT_EQ(o[static_cast<std::size_t>(e)], want) << i << " " << e;
    }
    const auto& tm = rep.result.timing[static_cast<std::size_t>(id[i])];
    EXPECT_EQ(tm.busy_end - tm.start, (ops[i] == VecOp::copy ? 1 : 8) * 1000) << i;
  }
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// The placement's closed forms (the most KV bytes on one cube, and on all) against the
// cube-by-cube sums they replace, on random shapes and grids of every case.
TEST(Decode, KvPlacementSumsEqualTheCubeByCubeSums) {
  std::mt19937_64 rng(5);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  const HwConfig base = topo("default.yaml").hw();
  for (int i = 0; i < 20000; ++i) {
    DecodeConfig c{};
    c.hw = base;
    c.hw.cube_rows = pick(1, 8), c.hw.cube_cols = pick(1, 8);
    c.decode_case = pick(1, 4), c.kv_bytes = pick(0, 2), c.batch = pick(1, 9), c.h_kv = pick(1, 4);
    c.h_q = c.h_kv * pick(1, 4), c.d_head = pick(1, 256);
    c.s_kv = pick(0, 3) ? pick(1, 300) : pick(1, INT64_C(1) << 30);
    std::int64_t most = 0, all = 0;
    for (std::int64_t q = 0; q < c.hw.cubes_per_sip(); ++q) {
      most = std::max(most, dec_kv_cube_bytes(c, q));
      all += dec_kv_cube_bytes(c, q);
    }
    ASSERT_EQ(dec_kv_max_cube_bytes(c), most) << i;
    ASSERT_EQ(dec_kv_total_bytes(c), all) << i;
  }
}

}  // namespace
}  // namespace kb
