// The decode family's config, statuses and result, and everything both engines share before
// any timing: which KV positions and work units each PE of each cube gets (dec_work), the
// reduction trees, the SRAM and HBM bytes a case needs, and the bounds (docs/model.md
// section 12). The timing model is decode_model.h; the reference kernel is
// src/host/families/decode/decode_program.cpp.
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/units.h"
#include "../collective/collective.h"

namespace kb {

// The four cases, numbered as in the study (docs/model.md section 12).
enum class DecodeCase : std::int64_t { cube_sp_pe_tp = 1, cube_repl_pe_tp = 2, cube_repl_pe_sp = 3, cube_sp_pe_sp = 4 };

constexpr std::int64_t kDecMaxSkv = INT64_C(1) << 24;
constexpr std::int64_t kDecMaxBatch = 4096;
constexpr std::int64_t kDecMaxHeads = 1024;
constexpr std::int64_t kDecMaxDHead = 1024;
constexpr std::int64_t kDecMaxGrid = 64;     // cubes of a SIP, PEs of a cube
constexpr std::int64_t kDecMaxPes = 1024;    // PEs of a SIP
constexpr std::int64_t kDecAutoChunk = 512;  // the longest automatic chunk
constexpr std::int64_t kDecMinAutoChunk = 16;

// Every field is an int64 (sweep axes set fields by offset).
struct DecodeConfig {
  HwConfig hw;
  std::int64_t decode_case;  // 1..4 (DecodeCase)
  std::int64_t s_kv, batch, h_q, h_kv, d_head;
  std::int64_t chunk;      // KV positions per step; 0: automatic (decode_complete)
  std::int64_t allreduce;  // case 4: 1 = every cube ends with the answer
  std::int64_t kv_bytes;   // bytes of a K or V value: 2 (fp16; 0 means 2) or 1 (8-bit, multiplied as fp16)
  // A value head of its own width, and K and V one tensor. 0: V is its own tensor of d_head
  // values; w > 0: its own tensor of w values; w < 0: -w values, the first -w of each key, as
  // multi-head latent attention's absorbed decode keeps one latent row a position (no V is
  // loaded, and a chunk's K buffer serves P V). One field: a device thread holds the config.
  std::int64_t d_v = 0;
};
// Bytes of a cached K or V value (0 stands for the fp16 default).
KB_HD constexpr std::int64_t dec_kv_bytes(const DecodeConfig& c) { return c.kv_bytes == 1 ? 1 : 2; }
// A value head's width, and the values a position caches for one KV head (K and V).
KB_HD constexpr bool dec_kv_shared(const DecodeConfig& c) { return c.d_v < 0; }
KB_HD constexpr std::int64_t dec_dv(const DecodeConfig& c) { return c.d_v > 0 ? c.d_v : c.d_v < 0 ? -c.d_v : c.d_head; }
KB_HD constexpr std::int64_t dec_kv_width(const DecodeConfig& c) { return c.d_head + (dec_kv_shared(c) ? 0 : dec_dv(c)); }

#define KB_DECODE_STATUSES(X)                                                                             \
  X(kDecOk, "valid")                                                                                      \
  X(kDecBadCase, "bad_case")             /* case outside 1..4, or allreduce outside 0..1 */               \
  X(kDecBadShape, "bad_shape")           /* a dimension out of range, or h_q not a multiple of h_kv */    \
  X(kDecShortKv, "s_kv_too_short")       /* fewer KV positions than the case splits them into */          \
  X(kDecBadChunk, "bad_chunk")           /* chunk outside 1..s_kv */                                      \
  X(kDecBadAllreduce, "bad_allreduce")   /* allreduce asked of a case without a cross-cube reduce */      \
  X(kDecTooLarge, "too_large")           /* more than 64 cubes or PEs per cube, or 1024 PEs */            \
  X(kDecSramOverflow, "sram_overflow")   /* the buffers do not fit a PE's SRAM */                         \
  X(kDecHbmOverflow, "hbm_overflow")     /* q, the KV shard and the output do not fit a cube's HBM */      \
  X(kDecTimeOverflow, "time_overflow")   /* times could pass int64 picoseconds */                          \
  X(kDecBadHardware, "bad_hardware")     /* hardware no topology file could hold */

enum DecodeStatus : std::int32_t {
#define KB_DECODE_ENUM(e, name) e,
  KB_DECODE_STATUSES(KB_DECODE_ENUM)
#undef KB_DECODE_ENUM
  kDecStatusCount
};
#define KB_DECODE_NAME(e, name) name,
constexpr const char* kDecStatusNames[] = {KB_DECODE_STATUSES(KB_DECODE_NAME)};
#undef KB_DECODE_NAME

enum DecodeCost : std::int32_t { kDecCostFootprint = 1, kDecCostLinkBytes, kDecCostPes };

struct DecodeResult {
  std::int32_t status;
  std::int32_t reserved;  // explicit, zeroed padding: results compare bytewise
  ps_t latency_ps;
  std::int64_t mac_cycles, macs;
  ps_t matrix_busy_ps, vector_busy_ps, dma_busy_ps;  // summed over PEs
  std::int64_t hbm_read_bytes, hbm_write_bytes;
  std::int64_t copies_pe, copies_cube, copies_sip;
  std::int64_t link_bytes_pe, link_bytes_cube, link_bytes_sip;
  std::int64_t kv_footprint_bytes, kv_max_cube_bytes;  // K and V in HBM: all cubes, the fullest cube
  std::int64_t working_pes;                            // PEs that read a KV shard
  // Counted actions (docs/model.md section 14.4): vector element-ops and SRAM bytes.
  std::int64_t vector_ops, sram_read_bytes, sram_write_bytes;
};

// ---- geometry (shared with the reference kernel, like routes: no timing) ---------------------

struct DecSpan {
  std::int64_t lo, len;
};
// Part i of `parts` of [0, extent), as a placement split with granule 1 cuts it.
KB_HD inline DecSpan dec_part(std::int64_t extent, std::int64_t parts, std::int64_t i) {
  const std::int64_t lo = div_fast(i * extent, parts);
  return DecSpan{lo, div_fast((i + 1) * extent, parts) - lo};
}
// Block i of `parts` of n units in blocks of ceil(n / parts): the first ranks work.
KB_HD inline DecSpan dec_block(std::int64_t n, std::int64_t parts, std::int64_t i) {
  const std::int64_t k = ceil_div(n, parts), lo = imin(n, i * k);
  return DecSpan{lo, imin(n, lo + k) - lo};
}

KB_HD inline std::int64_t dec_units(const DecodeConfig& c) { return c.batch * c.h_kv; }
KB_HD inline std::int64_t dec_group(const DecodeConfig& c) { return c.h_kv > 0 ? div_fast(c.h_q, c.h_kv) : 0; }
KB_HD inline DecodeCase dec_case(const DecodeConfig& c) { return static_cast<DecodeCase>(c.decode_case); }

// What PE `pe` of cube `cube` computes: work units (one (batch entry, KV head) pair each)
// [units.lo, +len) over KV positions [kv.lo, +len). No work: a length of 0.
struct DecWork {
  DecSpan units, kv;
};
KB_HD inline DecWork dec_work(const DecodeConfig& c, std::int64_t cube, std::int64_t pe) {
  const std::int64_t C = c.hw.cubes_per_sip(), P = c.hw.pes_per_cube(), U = dec_units(c), S = c.s_kv;
  DecWork w;
  switch (dec_case(c)) {
    case DecodeCase::cube_sp_pe_tp:
      w.units = dec_block(U, P, pe);
      w.kv = dec_part(S, C, cube);
      break;
    case DecodeCase::cube_repl_pe_tp:
      w.units = dec_block(U, C * P, cube * P + pe);
      w.kv.lo = 0, w.kv.len = S;
      break;
    case DecodeCase::cube_repl_pe_sp:
      // Cubes split the units; with fewer units than cubes every cube computes unit cube mod U.
      if (U >= C) {
        w.units = dec_block(U, C, cube);
      } else {
        w.units.lo = cube % U, w.units.len = 1;
      }
      w.kv = dec_part(S, P, pe);
      break;
    default: {
      const DecSpan cs = dec_part(S, C, cube), ps = dec_part(cs.len, P, pe);
      w.units.lo = 0, w.units.len = U;
      w.kv.lo = cs.lo + ps.lo, w.kv.len = ps.len;
    }
  }
  return w;
}
KB_HD inline bool dec_works(const DecWork& w) { return w.units.len > 0 && w.kv.len > 0; }

// dec_work(c, cube, p) for every PE p of one cube, in order, as emit(p, work) (or, from
// dec_cube_works, into out[0..P)): the same spans, with the splits along S_kv walked
// (EvenParts) and each block size divided once, rather than several divisions per PE (they
// were most of the model's time).
template <class Emit>
KB_HD void dec_cube_works_each(const DecodeConfig& c, std::int64_t cube, const Emit& emit) {
  const std::int64_t C = c.hw.cubes_per_sip(), P = c.hw.pes_per_cube(), U = dec_units(c), S = c.s_kv;
  auto blocks = [&](std::int64_t parts, std::int64_t first, DecSpan kv) {  // units in blocks of ceil(U / parts)
    const std::int64_t k = ceil_div(U, parts);
    for (std::int64_t p = 0; p < P; ++p) {
      const std::int64_t lo = imin(U, (first + p) * k);
      emit(p, DecWork{DecSpan{lo, imin(U, lo + k) - lo}, kv});
    }
  };
  auto split = [&](DecSpan units, DecSpan kv) {  // the cube's KV span over its PEs
    EvenParts parts(kv.len, P);
    for (std::int64_t p = 0; p < P; ++p) {
      const Span s = parts.next();
      emit(p, DecWork{units, DecSpan{kv.lo + s.lo, s.hi - s.lo}});
    }
  };
  switch (dec_case(c)) {
    case DecodeCase::cube_sp_pe_tp: blocks(P, 0, dec_part(S, C, cube)); break;
    case DecodeCase::cube_repl_pe_tp: blocks(C * P, cube * P, DecSpan{0, S}); break;
    case DecodeCase::cube_repl_pe_sp: split(U >= C ? dec_block(U, C, cube) : DecSpan{cube % U, 1}, DecSpan{0, S}); break;
    default: split(DecSpan{0, U}, dec_part(S, C, cube));
  }
}
KB_HD inline void dec_cube_works(const DecodeConfig& c, std::int64_t cube, DecWork* out) {
  dec_cube_works_each(c, cube, [&](std::int64_t p, const DecWork& w) { out[p] = w; });
}

// Case 3: whether cube `cube` writes its units (the lowest cube computing a unit does).
KB_HD inline bool dec_writer(const DecodeConfig& c, std::int64_t cube) {
  return dec_units(c) >= c.hw.cubes_per_sip() || cube < dec_units(c);
}

// KV positions the case splits S_kv into (each part needs one).
KB_HD inline std::int64_t dec_kv_parts(const DecodeConfig& c) {
  switch (dec_case(c)) {
    case DecodeCase::cube_sp_pe_tp: return imax(1, c.hw.cubes_per_sip());
    case DecodeCase::cube_repl_pe_tp: return 1;
    case DecodeCase::cube_repl_pe_sp: return imax(1, c.hw.pes_per_cube());
    default: return imax(1, c.hw.cubes_per_sip() * c.hw.pes_per_cube());
  }
}

// The reduction trees: chains along each row toward the centre column, then along the centre
// column toward the centre row: the edges of the collectives' reduce to the centre root
// (coll_schedule, algo root). A node's children are merged in the order left, right, top,
// bottom; each direction has an inbox slot of its own.
struct DecTree {
  std::int64_t rows, cols, r0, c0;
  KB_HD static DecTree of(std::int64_t rows, std::int64_t cols) { return DecTree{rows, cols, rows / 2, cols / 2}; }
  KB_HD std::int64_t root() const { return r0 * cols + c0; }
  KB_HD std::int64_t size() const { return rows * cols; }
  // The parent of node n (-1: the root), and the direction n lies in from it.
  KB_HD std::int64_t parent(std::int64_t n, std::int64_t* dir = nullptr) const {
    const std::int64_t r = div_fast(n, cols), c = n - r * cols;
    std::int64_t p = -1, d = 0;
    if (c < c0) p = n + 1, d = 0;
    else if (c > c0) p = n - 1, d = 1;
    else if (r < r0) p = n + cols, d = 2;
    else if (r > r0) p = n - cols, d = 3;
    if (dir) *dir = d;
    return p;
  }
  KB_HD bool has_dir(std::int64_t d) const {
    return d == 0 ? c0 > 0 : d == 1 ? c0 < cols - 1 : d == 2 ? r0 > 0 : r0 < rows - 1;
  }
  // Inbox slot of direction d, and how many slots there are.
  KB_HD std::int64_t slot(std::int64_t d) const {
    std::int64_t s = 0;
    for (std::int64_t k = 0; k < d; ++k) s += has_dir(k);
    return s;
  }
  KB_HD std::int64_t slots() const { return slot(4); }
  // Children of n in merge order (left, right, top, bottom); returns their count.
  KB_HD int children(std::int64_t n, std::int64_t out[4], std::int64_t dirs[4]) const {
    const std::int64_t r = div_fast(n, cols);
    return children_at(r, n - r * cols, out, dirs);
  }
  // The same for the node at row r, column c.
  KB_HD int children_at(std::int64_t r, std::int64_t c, std::int64_t out[4], std::int64_t dirs[4]) const {
    const std::int64_t n = r * cols + c;
    int k = 0;
    auto add = [&](std::int64_t ch, std::int64_t d) {
      out[k] = ch;
      dirs[k] = d;
      ++k;
    };
    if (c <= c0 && c > 0) add(n - 1, 0);
    if (c >= c0 && c + 1 < cols) add(n + 1, 1);
    if (c == c0 && r <= r0 && r > 0) add(n - cols, 2);
    if (c == c0 && r >= r0 && r + 1 < rows) add(n + cols, 3);
    return k;
  }
  // Node i of an order that visits every child before its parent: columns from the outside
  // in, then the centre column from the outside in, the root last.
  KB_HD std::int64_t order(std::int64_t i) const {
    const std::int64_t steps = imax(c0, cols - 1 - c0);
    for (std::int64_t k = steps; k >= 1; --k)
      for (std::int64_t side = 0; side < 2; ++side) {
        const std::int64_t c = side == 0 ? c0 - k : c0 + k;
        if (c < 0 || c >= cols) continue;
        if (i < rows) return i * cols + c;
        i -= rows;
      }
    const std::int64_t rsteps = imax(r0, rows - 1 - r0);
    for (std::int64_t k = rsteps; k >= 1; --k)
      for (std::int64_t side = 0; side < 2; ++side) {
        const std::int64_t r = side == 0 ? r0 - k : r0 + k;
        if (r < 0 || r >= rows) continue;
        if (i == 0) return r * cols + c0;
        --i;
      }
    return root();
  }
};

// The nodes of a tree that have children, in DecTree::order, each with the directions its
// children lie in: a reduce walks it rather than finding each node's place and children again
// (a division and a scan per node). Two bytes a node: it lives in a reduce's stack frame.
struct DecPlan {
  static_assert(kDecMaxGrid <= 127, "a node is an int8");
  int n;                         // nodes with children
  std::int8_t node[kDecMaxGrid];   // in order
  std::uint8_t dirs[kDecMaxGrid];  // bit d: a child in direction d (DecTree::children)
  std::int64_t step[4];            // from a node to its child in each direction
  KB_HD explicit DecPlan(const DecTree& t) : n(0), step{-1, 1, -t.cols, t.cols} {
    const std::int64_t rows = t.rows, cols = t.cols, r0 = t.r0, c0 = t.c0;
    // As order(): the columns from the outside in. A node off the centre column has one child,
    // its outer neighbour, where there is one: column c0 - s has one for s < c0, column c0 + s
    // for c0 + s + 1 < cols.
    auto column = [&](std::int64_t c, std::uint8_t dir) {
      for (std::int64_t r = 0; r < rows; ++r, ++n) node[n] = static_cast<std::int8_t>(r * cols + c), dirs[n] = dir;
    };
    for (std::int64_t s = imax(c0 - 1, cols - 2 - c0); s >= 1; --s) {
      if (s < c0) column(c0 - s, 1);
      if (c0 + s + 1 < cols) column(c0 + s, 2);
    }
    // Then the centre column from the outside in, the root last, each node with the children
    // DecTree::children_at gives it.
    auto centre = [&](std::int64_t r) {
      std::int64_t kids[4], ds[4];
      const int m = t.children_at(r, c0, kids, ds);
      if (m == 0) return;
      node[n] = static_cast<std::int8_t>(r * cols + c0), dirs[n] = 0;
      for (int j = 0; j < m; ++j) dirs[n] = static_cast<std::uint8_t>(dirs[n] | 1 << ds[j]);
      ++n;
    };
    for (std::int64_t s = imax(r0, rows - 1 - r0); s >= 1; --s) {
      if (s <= r0) centre(r0 - s);
      if (r0 + s < rows) centre(r0 + s);
    }
    centre(r0);
  }
  // Node i's children in merge order; returns their count.
  KB_HD int children(int i, std::int64_t out[4]) const {
    int k = 0;
    for (int d = 0; d < 4; ++d)
      if (dirs[i] >> d & 1) out[k++] = node[i] + step[d];
    return k;
  }

};

KB_HD inline DecTree dec_pe_tree(const DecodeConfig& c) { return DecTree::of(c.hw.pe_rows, c.hw.pe_cols); }
KB_HD inline DecTree dec_cube_tree(const DecodeConfig& c) { return DecTree::of(c.hw.cube_rows, c.hw.cube_cols); }
KB_HD inline bool dec_intra_reduce(const DecodeConfig& c) {
  return dec_case(c) == DecodeCase::cube_repl_pe_sp || dec_case(c) == DecodeCase::cube_sp_pe_sp;
}
KB_HD inline bool dec_cross_reduce(const DecodeConfig& c) {
  return dec_case(c) == DecodeCase::cube_sp_pe_tp || dec_case(c) == DecodeCase::cube_sp_pe_sp;
}
// Inbox slots every PE holds (symmetric buffers): the cross-cube reduce of case 4 reuses the
// intra-cube slots once they are free.
KB_HD inline std::int64_t dec_slots(const DecodeConfig& c) {
  std::int64_t s = 0;
  if (dec_intra_reduce(c)) s = dec_pe_tree(c).slots();
  if (dec_cross_reduce(c)) s = imax(s, dec_cube_tree(c).slots());
  return s;
}
// The cube holding the answer where a cross-cube reduce leaves it (-1: none).
KB_HD inline std::int64_t dec_root_cube(const DecodeConfig& c) {
  return dec_cross_reduce(c) ? dec_cube_tree(c).root() : -1;
}

// Rows (units x G) of the PE with the most units.
KB_HD inline std::int64_t dec_max_rows(const DecodeConfig& c) {
  const std::int64_t U = dec_units(c), C = imax(1, c.hw.cubes_per_sip()), P = imax(1, c.hw.pes_per_cube());
  std::int64_t u = U;
  switch (dec_case(c)) {
    case DecodeCase::cube_sp_pe_tp: u = ceil_div(U, P); break;
    case DecodeCase::cube_repl_pe_tp: u = ceil_div(U, C * P); break;
    case DecodeCase::cube_repl_pe_sp: u = U >= C ? ceil_div(U, C) : 1; break;
    default: break;
  }
  return u * dec_group(c);
}
// The longest KV shard of a PE.
KB_HD inline std::int64_t dec_max_shard(const DecodeConfig& c) { return ceil_div(c.s_kv, dec_kv_parts(c)); }

// SRAM of a working PE with R rows and chunk Lc (bytes): q (f16), K and V chunks (kv_bytes a
// value, two each), scores (f32), a chunk's (m, l, O) and a scratch row, the accumulated (m, l, O) and a
// scratch (f32); plus on every PE of the launch the inboxes (m, l, O per slot) and, with
// allreduce, the answer.
// `G` and `Rm`: dec_group(c) and dec_max_rows(c), where the caller has them.
KB_HD inline std::int64_t dec_sram_bytes(const DecodeConfig& c, std::int64_t rows, std::int64_t lc, std::int64_t G,
                                         std::int64_t Rm) {
  const std::int64_t d = c.d_head, dv = dec_dv(c);
  const std::int64_t sym = dec_slots(c) * Rm * (2 + dv) * 4 + (c.allreduce ? Rm * dv * 4 : 0);
  return sym + rows * d * 2 + 2 * dec_kv_bytes(c) * dec_kv_width(c) * lc + G * lc * 4 + G * dv * 4 + 2 * G * 4 +
         rows * (3 + dv) * 4;
}
KB_HD inline std::int64_t dec_sram_bytes(const DecodeConfig& c, std::int64_t rows, std::int64_t lc) {
  return dec_sram_bytes(c, rows, lc, dec_group(c), dec_max_rows(c));
}

// HBM bytes of K and V of one position: K and V, every unit.
KB_HD inline std::int64_t dec_kv_pos_bytes(const DecodeConfig& c) { return dec_kv_bytes(c) * dec_units(c) * dec_kv_width(c); }
// HBM bytes of K and V on one cube (the placement's shards): the cubes split S_kv where
// their partials are reduced across cubes (cases 1 and 4), else each holds all of it.
KB_HD inline std::int64_t dec_kv_cube_bytes(const DecodeConfig& c, std::int64_t cube) {
  return dec_kv_pos_bytes(c) * (dec_cross_reduce(c) ? dec_part(c.s_kv, c.hw.cubes_per_sip(), cube).len : c.s_kv);
}
// The most any cube holds, and all cubes together: split over the cubes (cases 1 and 4), the
// parts of S_kv differ by at most one position and add up to S_kv, so the longest is
// ceil(S_kv / cubes); replicated, every cube holds all of it.
KB_HD inline std::int64_t dec_kv_max_cube_bytes(const DecodeConfig& c) {
  return dec_kv_pos_bytes(c) * (dec_cross_reduce(c) ? ceil_div(c.s_kv, c.hw.cubes_per_sip()) : c.s_kv);
}
KB_HD inline std::int64_t dec_kv_total_bytes(const DecodeConfig& c) {
  return dec_kv_pos_bytes(c) * c.s_kv * (dec_cross_reduce(c) ? 1 : c.hw.cubes_per_sip());
}
// HBM bytes of q and the output on each cube (both replicated; allreduce: one output per cube).
KB_HD inline std::int64_t dec_qo_cube_bytes(const DecodeConfig& c) { return 2 * dec_units(c) * dec_group(c) * (c.d_head + dec_dv(c)); }
// KV bytes cube `cube` reads (its PEs' shards, every unit they compute).
KB_HD inline std::int64_t dec_kv_read_bytes(const DecodeConfig& c, std::int64_t cube) {
  std::int64_t b = 0;
  for (std::int64_t p = 0; p < c.hw.pes_per_cube(); ++p) {  // any config (a column of invalid ones too)
    const DecWork w = dec_work(c, cube, p);
    if (dec_works(w)) b += dec_kv_bytes(c) * w.units.len * w.kv.len * dec_kv_width(c);
  }
  return b;
}

// Bounds: the KV cache's bytes over every cube's HBM bandwidth (the best any sharding could
// do), and the busiest cube's KV reads over its HBM bandwidth (this case's placement).
KB_HD inline ps_t dec_lower_bound_ps(const DecodeConfig& c) {
  return transfer_ps(dec_kv_bytes(c) * dec_units(c) * c.s_kv * dec_kv_width(c), c.hw.cubes_per_sip() * c.hw.hbm_bandwidth_gbps);
}
KB_HD inline ps_t dec_case_bound_ps(const DecodeConfig& c) {
  std::int64_t most = 0;
  for (std::int64_t q = 0; q < c.hw.cubes_per_sip(); ++q) most = imax(most, dec_kv_read_bytes(c, q));
  return transfer_ps(most, c.hw.hbm_bandwidth_gbps);
}

}  // namespace kb
