// Collectives, defined once for both engines: the config, which node each rank is, how a
// rank's buffer is cut, and the list of transfers each algorithm makes (who sends which
// values to whom, and whether the receiver adds them in or takes them). The transfer list is
// the algorithm, as routes are the network (src/device/common/network.h); each engine turns
// it into its own timing: the reference runtime into an op graph (src/host/kernels/
// allreduce_program.cpp), the batched model into ops of the device simulator (allreduce_model.h,
// src/device/sim/event_sim.h). docs/model.md
// section 11 states every formula; docs/adr/0009-collective-schedules.md why it is shared.
//
// A rank's buffer holds `bytes / 2` f16 values, cut into `chunks` chunks (the pipelining
// unit: each chunk is reduced by the algorithm on its own, and a rank's program interleaves
// the chunks step by step), each chunk into `ranks` pieces (value j of a chunk of L values is
// in piece floor(j * ranks / L)). Every transfer moves a run of whole pieces of one chunk.
#pragma once

#include <cstdint>

#include "../../common/hw.h"
#include "../../common/kb_hd.h"
#include "../../common/network.h"
#include "../../common/units.h"

namespace kb {

// Each enumeration once, with its names: the enum, its count and its names (the CLI's and
// the documents' words) come from one list. A value added here must be handled wherever a
// switch over the enum lacks a default (the compiler names each), and the figure scripts'
// lists are checked against these names by a test.
#define KB_COLL_LEVELS(X) X(pe) X(cube) X(sip) X(hier)
#define KB_COLL_ALGOS(X) X(ring) X(hd) X(tree) X(mesh2d) X(root) X(pairwise)
#define KB_COLL_BUFFERS(X) X(sram) X(hbm)
#define KB_COLL_OPS(X) X(allreduce) X(reduce) X(allgather) X(reducescatter) X(alltoall)
#define KB_COLL_ITEM(name) name,
#define KB_COLL_ONE(name) +1
#define KB_COLL_NAME(name) #name,
enum class CollLevel : std::int64_t { KB_COLL_LEVELS(KB_COLL_ITEM) };
enum class CollAlgo : std::int64_t { KB_COLL_ALGOS(KB_COLL_ITEM) };
enum class CollBuffer : std::int64_t { KB_COLL_BUFFERS(KB_COLL_ITEM) };
// allgather: rank r brings piece r of every chunk, and every rank ends with all of them;
// reducescatter: every rank ends with the sum of its own piece r over all ranks (its other
// pieces hold partial sums); alltoall: piece j of rank i's buffer goes to rank j, which keeps
// it at piece i of its output buffer (its own piece j stays where it is).
// bcast: a broadcast from the root, only as a phase of `hier` (not a config's op).
enum class CollOp : std::int64_t { KB_COLL_OPS(KB_COLL_ITEM) bcast };
constexpr std::int64_t kCollLevels = 0 KB_COLL_LEVELS(KB_COLL_ONE), kCollAlgos = 0 KB_COLL_ALGOS(KB_COLL_ONE),
                       kCollBuffers = 0 KB_COLL_BUFFERS(KB_COLL_ONE), kCollOps = 0 KB_COLL_OPS(KB_COLL_ONE);
constexpr const char* kCollLevelNames[] = {KB_COLL_LEVELS(KB_COLL_NAME)};
constexpr const char* kCollAlgoNames[] = {KB_COLL_ALGOS(KB_COLL_NAME)};
constexpr const char* kCollBufferNames[] = {KB_COLL_BUFFERS(KB_COLL_NAME)};
constexpr const char* kCollOpNames[] = {KB_COLL_OPS(KB_COLL_NAME)};

// Every field an int64 (sweep axes set fields by offset).
struct AllreduceConfig {
  HwConfig hw;
  std::int64_t bytes;   // per rank: bytes / 2 f16 values
  std::int64_t level;   // CollLevel: what a rank is
  std::int64_t algo;    // CollAlgo
  std::int64_t ranks;   // 2..the level's count
  std::int64_t buffer;  // CollBuffer: where the values live
  std::int64_t op;      // CollOp
  std::int64_t chunks;  // pipelining: 1..kCollMaxChunks
  // Channels (cube and sip levels): the collective runs as `channels` copies side by side, each
  // over its own PE of every rank (cube: PE g of each cube; sip: PE g / cubes of cube g mod
  // cubes of each SIP) and its own share of every chunk; 0: the count of least latency
  // (`auto`, AllreduceModel::complete). Each channel's PE holds the buffer's shape.
  std::int64_t channels = 1;
};

constexpr std::int64_t kCollMaxRanks = 64;        // per level (each phase of hier)
constexpr std::int64_t kCollMaxHierRanks = 4096;  // hier: every PE of the launch
constexpr int kCollMaxPhases = 5;                 // hier: up, up, the top, down, down
constexpr std::int64_t kCollMaxChunks = 64;
constexpr std::int64_t kCollMaxChannels = 16;
constexpr std::int64_t kCollMaxBytes = INT64_C(1) << 32;  // 4 GiB: a buffer row stays within 2^31 values
// What the batched model holds (src/device/models/collective/allreduce_model.h): a config needing more is
// too_large on both engines. A level holds kCollMaxOps ops a channel, kCollMaxChannelOps in all
// (coll_max_ops): the host holds the larger, the device defers it to the host.
constexpr std::int64_t kCollMaxOps = 1024;
constexpr std::int64_t kCollMaxChannelOps = 4096;
constexpr std::int64_t kCollMaxPieces = 4096;  // ranks x chunks x ranks: who last wrote each piece

// The statuses, once: X(enumerator, name in reports). 0 is the valid one.
#define KB_ALLREDUCE_STATUSES(X)                                                                            \
  X(kArOk, "valid")                                                                                         \
  X(kArBadField, "bad_field")            /* level, algo, buffer or op out of range; chunks outside 1..64 */      \
  X(kArBadRanks, "bad_ranks")            /* ranks outside 2..the level's count (at most 64) */              \
  X(kArBadAlgo, "bad_algo")              /* hd on ranks not a power of two; a grid algo on a partial row */ \
  X(kArBadSize, "bad_size")              /* bytes odd, above 2^32, or fewer values per chunk than ranks */  \
  X(kArSramOverflow, "sram_overflow")    /* the buffer and its inboxes do not fit a PE's SRAM */            \
  X(kArHbmOverflow, "hbm_overflow")      /* the buffers do not fit a cube's HBM */                          \
  X(kArTooLarge, "too_large")            /* more ops than the batched model holds */                        \
  X(kArTimeOverflow, "time_overflow")    /* times would exceed int64 picoseconds */                         \
  X(kArBadHardware, "bad_hardware")      /* hardware no topology file could hold */

enum AllreduceStatus : std::int32_t {
#define KB_AR_ENUM(e, name) e,
  KB_ALLREDUCE_STATUSES(KB_AR_ENUM)
#undef KB_AR_ENUM
  kArStatusCount
};
#define KB_AR_NAME(e, name) name,
constexpr const char* kArStatusNames[] = {KB_ALLREDUCE_STATUSES(KB_AR_NAME)};
#undef KB_AR_NAME

// ---- geometry ----------------------------------------------------------------------------

// How many ranks a level has: PEs of a cube, cubes of a SIP, SIPs; hier: every PE.
KB_HD inline std::int64_t coll_level_size(const HwConfig& h, std::int64_t level) {
  return level == 0 ? h.pes_per_cube() : level == 1 ? h.cubes_per_sip() : level == 2 ? h.sips : h.total_pes();
}

// Ranks as the engines see them: each channel's copy of every rank (channel g's rank r is
// g * ranks + r), and the pieces of a chunk: channel g moves pieces [g * ranks, (g + 1) *
// ranks) of every chunk, as one channel moves all of them. 1 channel: the config's ranks.
KB_HD inline std::int64_t coll_vranks(const AllreduceConfig& c) { return c.ranks * c.channels; }
// Whether the level can take `channels` channels: cube: up to the PEs of a cube; sip: up to
// the PEs of a SIP, whole cubes' worth past the cubes (the launch is a grid of PEs).
KB_HD KB_COLD inline bool coll_channels_fit_cold(const HwConfig& h, std::int64_t level, std::int64_t channels) {
  if (channels < 1 || channels > kCollMaxChannels) return false;
  const std::int64_t cubes = h.cubes_per_sip();
  if (level == 1) return channels <= h.pes_per_cube();
  if (level == 2) return channels <= cubes || (channels % cubes == 0 && channels / cubes <= h.pes_per_cube());
  return false;
}
KB_HD inline bool coll_channels_fit(const HwConfig& h, std::int64_t level, std::int64_t channels) {
  return channels == 1 || coll_channels_fit_cold(h, level, channels);
}

// The most ops a level of `c` may have: kCollMaxOps a channel, kCollMaxChannelOps in all.
KB_HD inline std::int64_t coll_max_ops(const AllreduceConfig& c) {
  const std::int64_t n = c.channels > 1 ? c.channels * kCollMaxOps : kCollMaxOps;
  return n < kCollMaxChannelOps ? n : kCollMaxChannelOps;
}

// The launch of a hier collective: SIPs x cubes x PEs from 0, `ranks` in all: the first
// `ranks` PEs of cube 0 (ranks <= PEs per cube), whole cubes of SIP 0, or whole SIPs.
struct CollHier {
  std::int64_t sips = 1, cubes = 1, pes = 1;
};
KB_HD inline bool coll_hier_dims(const AllreduceConfig& c, CollHier* d) {
  const std::int64_t ppc = c.hw.pes_per_cube(), pps = ppc * c.hw.cubes_per_sip(), r = c.ranks;
  if (r < 2 || r > kCollMaxHierRanks) return false;
  if (r <= ppc) {
    *d = CollHier{1, 1, r};
    return true;
  }
  // Quotients through div_fast (ranks and grids fit 32 bits): hier phases ask for the dims often.
  const std::int64_t cubes = div_fast(r, ppc), sips = div_fast(r, pps);
  if (cubes * ppc == r && r <= pps) *d = CollHier{1, cubes, ppc};
  else if (sips * pps == r && sips <= c.hw.sips) *d = CollHier{sips, c.hw.cubes_per_sip(), ppc};
  else return false;
  return true;
}

// Hier rank r of a launch whose dims are d: its node (see coll_node).
KB_HD inline net::Node coll_hier_node(const CollHier& d, std::int64_t r) {
  const std::int64_t cube = div_fast(r, d.pes), sip = div_fast(cube, d.cubes);  // r / pes, then / cubes
  return net::Node{sip, cube - sip * d.cubes, r - cube * d.pes};
}

// Rank r: PE r of cube 0 of SIP 0 (pe), PE 0 of cube r of SIP 0 (cube), PE 0 of cube 0 of SIP r
// (sip); hier: PE r mod pes of cube (r / pes) mod cubes of SIP r / (cubes x pes), the launch's
// PEs in (sip, cube, pe) order. PEs and cubes are numbered row-major in their grids.
// With channels, rank v = g * ranks + r is channel g's copy of rank r (coll_vranks): PE g of
// cube r (cube level), PE g / cubes of cube g mod cubes of SIP r (sip level).
KB_HD KB_COLD inline net::Node coll_channel_node(const AllreduceConfig& c, std::int64_t r) {
  const std::int64_t g = div_fast(r, c.ranks), i = r - g * c.ranks;
  if (c.level == 1) return net::Node{0, i, g};
  const std::int64_t cubes = c.hw.cubes_per_sip(), pe = div_fast(g, cubes);
  return net::Node{i, g - pe * cubes, pe};
}
KB_HD inline net::Node coll_node(const AllreduceConfig& c, std::int64_t r) {
  if (c.channels > 1 && (c.level == 1 || c.level == 2)) return coll_channel_node(c, r);
  if (c.level == 0) return net::Node{0, 0, r};
  if (c.level == 1) return net::Node{0, r, 0};
  if (c.level == 2) return net::Node{r, 0, 0};
  CollHier d;
  coll_hier_dims(c, &d);
  return coll_hier_node(d, r);
}

// The ranks as a grid (rows x cols, row-major) for mesh2d and root: the level's own grid
// (PEs of a cube, cubes of a SIP), fewer ranks than a grid row filling part of the first
// row; SIPs form one row.
// The `_at` forms take the fields they read (a hier phase's level and ranks, without a copy
// of its config).
KB_HD inline std::int64_t coll_cols_at(const HwConfig& h, std::int64_t level, std::int64_t ranks) {
  if (level == static_cast<std::int64_t>(CollLevel::hier)) return imax(1, ranks);  // a phase's own grid counts
  const std::int64_t g = level == 0 ? h.pe_cols : level == 1 ? h.cube_cols : ranks;
  return imax(1, ranks < g ? ranks : g);  // at least 1, so that a config being rejected divides safely
}
KB_HD inline std::int64_t coll_cols(const AllreduceConfig& c) { return coll_cols_at(c.hw, c.level, c.ranks); }
KB_HD inline std::int64_t coll_rows(const AllreduceConfig& c) { return div_fast(c.ranks, coll_cols(c)); }

// The rank a reduce leaves the sum on: the grid's centre (rows / 2, cols / 2) for root,
// rank 0 for the others.
KB_HD inline std::int64_t coll_root_at(const HwConfig& h, std::int64_t algo, std::int64_t level, std::int64_t ranks) {
  if (algo != static_cast<std::int64_t>(CollAlgo::root)) return 0;
  const std::int64_t cols = coll_cols_at(h, level, ranks);
  return (div_fast(ranks, cols) / 2) * cols + cols / 2;
}
KB_HD inline std::int64_t coll_root(const AllreduceConfig& c) { return coll_root_at(c.hw, c.algo, c.level, c.ranks); }

KB_HD inline std::int64_t coll_values(const AllreduceConfig& c) { return c.bytes / 2; }
// First value of chunk k (k = chunks: the end).
KB_HD inline std::int64_t coll_chunk_lo(const AllreduceConfig& c, std::int64_t k) {
  return div_fast(k * coll_values(c), c.chunks);
}
// First value of piece `piece` of chunk `chunk` (piece = ranks: the chunk's end).
// Pieces of a chunk: coll_vranks (channel g's are [g * ranks, (g + 1) * ranks)).
KB_HD inline std::int64_t coll_piece_lo(const AllreduceConfig& c, std::int64_t chunk, std::int64_t piece) {
  const std::int64_t lo = coll_chunk_lo(c, chunk), len = coll_chunk_lo(c, chunk + 1) - lo;
  return lo + div_fast(piece * len, coll_vranks(c));
}

// Inbox levels: how many copies of the buffer a rank keeps for values it receives to add
// (a transfer's `slot`); a level is never written twice over the same values in one run. An
// all-gather adds nothing and keeps none; an all-to-all keeps one, its output buffer.
KB_HD inline std::int64_t coll_inboxes_at(const HwConfig& h, std::int64_t algo, std::int64_t level, std::int64_t p,
                                          std::int64_t op) {
  if (op == static_cast<std::int64_t>(CollOp::allgather)) return 0;
  if (op == static_cast<std::int64_t>(CollOp::alltoall)) return 1;
  const std::int64_t cols = coll_cols_at(h, level, p), rows = div_fast(p, cols);
  switch (static_cast<CollAlgo>(algo)) {
    case CollAlgo::ring: return 1;
    case CollAlgo::hd: return ceil_log2(p);
    case CollAlgo::tree: return ceil_log2(p);
    case CollAlgo::mesh2d: return imax(1, (cols > 1) + (rows > 1));
    case CollAlgo::root: {
      const std::int64_t r0 = rows / 2, c0 = cols / 2;
      return imax(1, (c0 > 0) + (c0 < cols - 1) + (r0 > 0) + (r0 < rows - 1));
    }
    case CollAlgo::pairwise: return 1;
  }
  return 0;  // not an algorithm: coll_check refuses it first
}
KB_HD inline std::int64_t coll_inboxes(const AllreduceConfig& c) {
  return coll_inboxes_at(c.hw, c.algo, c.level, c.ranks, c.op);
}

// Whether an algorithm runs an op: every algorithm but pairwise runs allreduce and reduce;
// ring and hd (recursive halving, or doubling) run reduce-scatter and all-gather; pairwise
// exchange runs all-to-all. Only allreduce and reduce run level by level (hier).
KB_HD inline bool coll_algo_runs(std::int64_t algo, std::int64_t op) {
  const auto a = static_cast<CollAlgo>(algo);
  switch (static_cast<CollOp>(op)) {
    case CollOp::allreduce:
    case CollOp::reduce:
    case CollOp::bcast: return a != CollAlgo::pairwise;
    case CollOp::allgather:
    case CollOp::reducescatter: return a == CollAlgo::ring || a == CollAlgo::hd;
    case CollOp::alltoall: return a == CollAlgo::pairwise;
  }
  return false;
}
KB_HD inline bool coll_op_runs_hier(std::int64_t op) {
  return op == static_cast<std::int64_t>(CollOp::allreduce) || op == static_cast<std::int64_t>(CollOp::reduce);
}
// Whether a config runs as one level: every config but hier's allreduce and reduce. An
// allgather, reducescatter or alltoall at hier runs over the launch's PEs at once (hier rank
// order: PEs of a cube, then cubes, then SIPs), each transfer on its own route across the
// levels, without phases or leaders.
KB_HD inline bool coll_one_level(const AllreduceConfig& c) {
  return c.level != static_cast<std::int64_t>(CollLevel::hier) || !coll_op_runs_hier(c.op);
}

// ---- hier: phases of single-level collectives --------------------------------------------

// A hier collective runs the algorithm level by level, each level a collective of its own over
// one PE per group below (the leader: the root of the level below): inside every cube a
// reduce to the cube's leader PE, across the cubes of every SIP a reduce to the SIP's leader
// cube, across SIPs the collective itself, then back down by broadcasts (allreduce only). The
// highest level present runs the config's op. Each rank starts a phase once everything it
// did in the phase before is done (a barrier per rank, not a global one).
struct CollPhase {
  AllreduceConfig sub;     // the phase as a single-level collective (level pe, cube or sip)
  std::int64_t groups;     // how many run side by side (cubes, SIPs, or one)
  std::int64_t slot_base;  // its first inbox
  bool up;                 // a reduce below the top: the next phase starts at its root
};

// The phases of a hier config whose dims are valid; returns how many (at most kCollMaxPhases).
// `leader_pe` and `leader_cube` get the leader PE of a cube and the leader cube of a SIP.
// `only` >= 0: out[0] gets phase `only` alone (a device model's frame holds one phase, not
// five configs); only = kCollMaxPhases: none (`out` may be null), to count the phases or their
// inboxes. `inboxes` gets the inbox levels of every phase.
KB_HD inline int coll_hier_phases(const AllreduceConfig& c, CollPhase* out, std::int64_t* leader_pe = nullptr,
                                  std::int64_t* leader_cube = nullptr, int only = -1, std::int64_t* inboxes = nullptr) {
  CollHier d;
  coll_hier_dims(c, &d);
  const bool has_p = d.pes > 1, has_c = d.cubes > 1, has_s = d.sips > 1;
  const std::int64_t top = has_s ? 2 : has_c ? 1 : 0;
  const bool all = c.op == static_cast<std::int64_t>(CollOp::allreduce);
  const CollOp up = CollOp::reduce, user = static_cast<CollOp>(c.op);
  int n = 0;
  std::int64_t slots = 0;
  // Phase n: the config with its level, ranks and op (a config is large: it is copied out
  // only for the phases asked for, and the inboxes counted only as far as they are needed).
  auto add = [&](std::int64_t level, std::int64_t ranks, CollOp op, std::int64_t groups, bool is_up) {
    if (only < 0 || n == only) {
      CollPhase& ph = out[only < 0 ? n : 0];
      ph.sub = c;
      ph.sub.level = level, ph.sub.ranks = ranks, ph.sub.op = static_cast<std::int64_t>(op);
      ph.groups = groups, ph.slot_base = slots, ph.up = is_up;
    }
    if (op != CollOp::bcast && ((out && (only < 0 || n < only)) || inboxes))
      slots += coll_inboxes_at(c.hw, c.algo, level, ranks, static_cast<std::int64_t>(op));
    ++n;
  };
  if (has_p) add(0, d.pes, top == 0 ? user : up, d.sips * d.cubes, top != 0);
  if (has_c) add(1, d.cubes, top == 1 ? user : up, d.sips, top != 1);
  if (has_s) add(2, d.sips, user, 1, false);
  if (all && has_c && top > 1) add(1, d.cubes, CollOp::bcast, d.sips, false);
  if (all && has_p && top > 0) add(0, d.pes, CollOp::bcast, d.sips * d.cubes, false);
  if (leader_pe) *leader_pe = has_p ? coll_root_at(c.hw, c.algo, 0, d.pes) : 0;
  if (leader_cube) *leader_cube = has_c ? coll_root_at(c.hw, c.algo, 1, d.cubes) : 0;
  if (inboxes) *inboxes = slots;
  return n;
}

// The hier rank of rank i of group g of a phase (its sub's level), with the leaders
// `leader_pe` and `leader_cube`.
// `d`: the launch's dims (coll_hier_dims).
KB_HD inline std::int64_t coll_hier_rank(const CollHier& d, const AllreduceConfig& sub, std::int64_t g, std::int64_t i,
                                         std::int64_t leader_pe, std::int64_t leader_cube) {
  if (sub.level == 0) return g * d.pes + i;
  if (sub.level == 1) return (g * d.cubes + i) * d.pes + leader_pe;
  return (i * d.cubes + leader_cube) * d.pes + leader_pe;
}
KB_HD inline std::int64_t coll_hier_rank(const AllreduceConfig& c, const AllreduceConfig& sub, std::int64_t g,
                                         std::int64_t i, std::int64_t leader_pe, std::int64_t leader_cube) {
  CollHier d;
  coll_hier_dims(c, &d);
  return coll_hier_rank(d, sub, g, i, leader_pe, leader_cube);
}

// Inbox levels of any config (hier: every phase's, one after another).
KB_HD inline std::int64_t coll_total_inboxes(const AllreduceConfig& c) {
  if (coll_one_level(c)) return coll_inboxes(c);
  std::int64_t total = 0;
  coll_hier_phases(c, nullptr, nullptr, nullptr, kCollMaxPhases, &total);  // no phase copied out
  return imax(1, total);
}

// The rank a reduce leaves the sum on (hier: the top phase's root, as a hier rank).
KB_HD inline std::int64_t coll_final_root(const AllreduceConfig& c) {
  if (coll_one_level(c)) return coll_root(c);
  CollPhase ph;  // one at a time
  std::int64_t leader_pe = 0, leader_cube = 0;
  const int n = coll_hier_phases(c, &ph, &leader_pe, &leader_cube, 0);
  for (int k = 1; k < n && ph.up; ++k) coll_hier_phases(c, &ph, nullptr, nullptr, k);  // the first not up
  return coll_hier_rank(c, ph.sub, 0, coll_root(ph.sub), leader_pe, leader_cube);
}

// ---- the transfers -----------------------------------------------------------------------

// Rank `src` sends pieces [k0, k1) of chunk `chunk` of its buffer to rank `dst`, which adds
// them into its own (`reduce`, received in inbox `slot`) or takes them as they are.
struct CollXfer {
  std::int32_t src, dst, k0, k1, reduce, slot;
};

namespace coll_detail {

// A ring over the m members of a group: member i is rank rank_of(i); block j of the group is
// pieces block_of(j). Reduce-scatter step s: member i sends block (i + first - s) mod m to
// member i + 1, which adds it in; with first = 0 member i then holds the sum of block
// (i + 1) mod m (the allreduce's), with first = -1 that of block i (the reduce-scatter op's).
// All-gather step s: member i sends block (i + first - s) mod m, which member i + 1 takes;
// first = 1 after the allreduce's reduce-scatter, 0 from each member's own block (the op's).
// Group kinds: 0 all ranks; 1 each grid row (blocks: groups of `rows` pieces);
// 2 each grid column (sub-blocks of the block the row reduce-scatter left the column with).
struct Groups {
  std::int32_t kind;
  std::int64_t p, rows, cols;
  KB_HD std::int64_t count() const { return kind == 0 ? 1 : kind == 1 ? rows : cols; }
  KB_HD std::int64_t size() const { return kind == 0 ? p : kind == 1 ? cols : rows; }
  KB_HD std::int64_t rank(std::int64_t g, std::int64_t i) const {
    return kind == 0 ? i : kind == 1 ? g * cols + i : i * cols + g;
  }
  // Pieces [*k0, *k1) of block j of group g.
  KB_HD void block(std::int64_t g, std::int64_t j, std::int64_t* k0, std::int64_t* k1) const {
    if (kind == 0) {
      *k0 = j, *k1 = j + 1;
    } else if (kind == 1) {
      *k0 = j * rows, *k1 = (j + 1) * rows;
    } else {
      const std::int64_t b = (g + 1) % cols;  // the row block column g holds after the rows' reduce-scatter
      *k0 = b * rows + j, *k1 = *k0 + 1;
    }
  }
};

// a mod m in [0, m), for m >= 1; most callers are within one wrap of it, and take no division.
KB_HD inline std::int64_t mod(std::int64_t a, std::int64_t m) {
  if (a >= 0) return a < m ? a : a < 2 * m ? a - m : a % m;
  return a >= -m ? a + m : ((a % m) + m) % m;
}

}  // namespace coll_detail

namespace coll_detail {

// The transfers of one single-level config, algorithm by algorithm, into a sink.
template <class Sink>
struct Scheduler {
  const AllreduceConfig& c;
  Sink& sink;
  std::int64_t p, rows, cols, C, root;
  bool all, bcast;

  KB_HD Scheduler(const AllreduceConfig& config, Sink& s)
      : c(config), sink(s), p(config.ranks), rows(coll_rows(config)), cols(coll_cols(config)), C(config.chunks),
        root(coll_root(config)), all(config.op == static_cast<std::int64_t>(CollOp::allreduce)),
        bcast(config.op == static_cast<std::int64_t>(CollOp::bcast)) {}

  KB_HD void emit(std::int64_t ch, std::int64_t src, std::int64_t dst, std::int64_t k0, std::int64_t k1, bool reduce,
                  std::int64_t slot) {
    sink.xfer(ch, CollXfer{static_cast<std::int32_t>(src), static_cast<std::int32_t>(dst), static_cast<std::int32_t>(k0),
                           static_cast<std::int32_t>(k1), reduce ? 1 : 0, static_cast<std::int32_t>(slot)});
  }

  // Ring reduce-scatter (rs) or all-gather over groups; `first`: the block member i sends
  // first, less i (see Groups).
  KB_HD void ring(const Groups& g, bool rs, std::int64_t slot, std::int64_t first) {
    const std::int64_t m = g.size();
    for (std::int64_t s = 0; s + 1 < m; ++s)
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t gi = 0; gi < g.count(); ++gi)
          for (std::int64_t i = 0; i < m; ++i) {
            std::int64_t k0, k1;
            g.block(gi, mod(i + first - s, m), &k0, &k1);
            emit(ch, g.rank(gi, i), g.rank(gi, (i + 1) % m), k0, k1, rs, slot);
          }
        sink.flush();
      }
  }

  // The reduce's last step: every rank sends the pieces it holds the sum of to the root.
  template <class Owned>
  KB_HD void gather(Owned owned) {
    for (std::int64_t ch = 0; ch < C; ++ch) {
      for (std::int64_t r = 0; r < p; ++r) {
        if (r == root) continue;
        std::int64_t k0, k1;
        owned(r, &k0, &k1);
        emit(ch, r, root, k0, k1, false, 0);
      }
      sink.flush();
    }
  }

  // The binomial tree's broadcast from rank 0, steps from the widest.
  KB_HD void tree_broadcast() {
    for (std::int64_t j = ceil_log2(p) - 1; j >= 0; --j) {
      const std::int64_t d = INT64_C(1) << j;
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t i = 0; i + d < p; i += 2 * d) emit(ch, i, i + d, 0, p, false, 0);
        sink.flush();
      }
    }
  }

  KB_HD void ring_algo() {
    const Groups g{0, p, rows, cols};
    ring(g, true, 0, 0);
    if (all) ring(g, false, 0, 1);
    else gather([&](std::int64_t r, std::int64_t* k0, std::int64_t* k1) { *k0 = (r + 1) % p, *k1 = *k0 + 1; });
  }

  // Recursive halving: in step j (half h = p >> (j + 1)) rank i and its partner i ^ h
  // split their current range [i & ~(2h - 1), + 2h); the one with bit h clear keeps the
  // lower half. Afterwards rank i holds the sum of piece i. Recursive doubling gathers
  // back in the reverse order.
  KB_HD void hd_algo() {
    hd_halving();
    if (!all) {
      gather([&](std::int64_t r, std::int64_t* k0, std::int64_t* k1) { *k0 = r, *k1 = r + 1; });
      return;
    }
    hd_doubling();
  }
  KB_HD void hd_halving() {
    const std::int64_t steps = ceil_log2(p);
    for (std::int64_t j = 0; j < steps; ++j) {
      const std::int64_t h = p >> (j + 1);
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t i = 0; i < p; ++i) {
          const std::int64_t base = i & ~(2 * h - 1);
          const std::int64_t send0 = (i & h) ? base : base + h;
          emit(ch, i, i ^ h, send0, send0 + h, true, j);
        }
        sink.flush();
      }
    }
  }
  KB_HD void hd_doubling() {
    for (std::int64_t j = ceil_log2(p) - 1; j >= 0; --j) {
      const std::int64_t h = p >> (j + 1);
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t i = 0; i < p; ++i) {
          const std::int64_t lo = i & ~(h - 1);
          emit(ch, i, i ^ h, lo, lo + h, false, 0);
        }
        sink.flush();
      }
    }
  }

  // The reduce-scatter op: a ring ending with member i holding the sum of piece i, or
  // recursive halving (which does by itself).
  KB_HD void reducescatter_algo() {
    if (c.algo == static_cast<std::int64_t>(CollAlgo::hd)) return hd_halving();
    ring(Groups{0, p, rows, cols}, true, 0, -1);
  }
  // The all-gather op from each rank's own piece: a ring, or recursive doubling.
  KB_HD void allgather_algo() {
    if (c.algo == static_cast<std::int64_t>(CollAlgo::hd)) return hd_doubling();
    ring(Groups{0, p, rows, cols}, false, 0, 0);
  }
  // Pairwise exchange: in step s (1..p-1) rank i sends piece (i + s) mod p to rank (i + s)
  // mod p (and receives piece i from rank (i - s) mod p), one step after another.
  KB_HD void pairwise_algo() {
    for (std::int64_t s = 1; s < p; ++s)
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t i = 0; i < p; ++i) {
          const std::int64_t j = mod(i + s, p);
          emit(ch, i, j, j, j + 1, false, 0);
        }
        sink.flush();
      }
  }

  // Binomial: in reduce step j (d = 2^j) rank i with i mod 2d = d sends the whole chunk
  // to i - d, which adds it in; the broadcast runs the steps backwards.
  KB_HD void tree_algo() {
    const std::int64_t steps = ceil_log2(p);
    for (std::int64_t j = 0; j < steps; ++j) {
      const std::int64_t d = INT64_C(1) << j;
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t i = d; i < p; i += 2 * d) emit(ch, i, i - d, 0, p, true, j);
        sink.flush();
      }
    }
    if (all) tree_broadcast();
  }

  // Rows reduce-scatter (blocks of `rows` pieces), then columns reduce-scatter the block
  // each holds; allreduce: columns all-gather, rows all-gather; reduce: gather to rank 0.
  KB_HD void mesh2d_algo() {
    const Groups rg{1, p, rows, cols}, cg{2, p, rows, cols};
    const std::int64_t col_slot = cols > 1 ? 1 : 0;
    ring(rg, true, 0, 0);
    ring(cg, true, col_slot, 0);
    if (all) {
      ring(cg, false, 0, 1);
      ring(rg, false, 0, 1);
      return;
    }
    const std::int64_t w = cols, h = rows;
    gather([&](std::int64_t r, std::int64_t* k0, std::int64_t* k1) {
      const std::int64_t row = r / w, col = r % w;
      *k0 = ((col + 1) % w) * h + (row + 1) % h, *k1 = *k0 + 1;
    });
  }

  // Each row reduces toward the root column from both ends (a chain: each rank adds what
  // it received before passing the sum on), then the root column toward the root row;
  // allreduce broadcasts back along the same links outward.
  KB_HD void root_algo() {
    const std::int64_t r0 = rows / 2, c0 = cols / 2;
    const std::int64_t left = c0 > 0, right_slot = left, row_slots = left + (c0 < cols - 1);
    const std::int64_t top_slot = row_slots, bottom_slot = row_slots + (r0 > 0);
    const std::int64_t row_steps = imax(c0, cols - 1 - c0), col_steps = imax(r0, rows - 1 - r0);
    for (std::int64_t t = 0; t < row_steps && !bcast; ++t)
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t r = 0; r < rows; ++r) {
          if (t < c0) emit(ch, r * cols + t, r * cols + t + 1, 0, p, true, 0);
          if (t < cols - 1 - c0) emit(ch, r * cols + cols - 1 - t, r * cols + cols - 2 - t, 0, p, true, right_slot);
        }
        sink.flush();
      }
    for (std::int64_t t = 0; t < col_steps && !bcast; ++t)
      for (std::int64_t ch = 0; ch < C; ++ch) {
        if (t < r0) emit(ch, t * cols + c0, (t + 1) * cols + c0, 0, p, true, top_slot);
        if (t < rows - 1 - r0) emit(ch, (rows - 1 - t) * cols + c0, (rows - 2 - t) * cols + c0, 0, p, true, bottom_slot);
        sink.flush();
      }
    if (!all && !bcast) return;
    for (std::int64_t t = 0; t < col_steps; ++t)
      for (std::int64_t ch = 0; ch < C; ++ch) {
        if (t < r0) emit(ch, (r0 - t) * cols + c0, (r0 - t - 1) * cols + c0, 0, p, false, 0);
        if (t < rows - 1 - r0) emit(ch, (r0 + t) * cols + c0, (r0 + t + 1) * cols + c0, 0, p, false, 0);
        sink.flush();
      }
    for (std::int64_t t = 0; t < row_steps; ++t)
      for (std::int64_t ch = 0; ch < C; ++ch) {
        for (std::int64_t r = 0; r < rows; ++r) {
          if (t < c0) emit(ch, r * cols + c0 - t, r * cols + c0 - t - 1, 0, p, false, 0);
          if (t < cols - 1 - c0) emit(ch, r * cols + c0 + t, r * cols + c0 + t + 1, 0, p, false, 0);
        }
        sink.flush();
      }
  }
};

}  // namespace coll_detail

// Calls sink.xfer(chunk, CollXfer) for every transfer, and sink.flush() after each step's
// transfers of one chunk: steps in order, and in each step the chunks in order. A rank's
// program is this sequence: in each (step, chunk) group, first the transfers it sends, then
// those it receives. Call only on a config coll_check accepts up to its size checks.
template <class Sink>
KB_HD void coll_schedule_one(const AllreduceConfig& c, Sink& sink) {
  coll_detail::Scheduler<Sink> s(c, sink);
  if (s.bcast && c.algo != static_cast<std::int64_t>(CollAlgo::root)) {
    s.tree_broadcast();  // a broadcast from rank 0 (a phase of hier): the binomial tree's second half
    return;
  }
  if (c.op == static_cast<std::int64_t>(CollOp::reducescatter)) return s.reducescatter_algo();
  if (c.op == static_cast<std::int64_t>(CollOp::allgather)) return s.allgather_algo();
  switch (static_cast<CollAlgo>(c.algo)) {
    case CollAlgo::pairwise: return s.pairwise_algo();
    case CollAlgo::ring: return s.ring_algo();
    case CollAlgo::hd: return s.hd_algo();
    case CollAlgo::tree: return s.tree_algo();
    case CollAlgo::mesh2d: return s.mesh2d_algo();
    case CollAlgo::root: return s.root_algo();
  }
}

// With channels: each transfer of one channel's schedule, once per channel g, between the
// ranks of channel g (g * ranks + r) on its pieces (g * ranks + k): every channel's step and
// chunk in one group, so each rank's program keeps one channel's order. A ring's odd channels
// run the other way round (rank r and piece r as r' = (ranks - r) mod ranks: rank 0 stays,
// and each sends to its previous), so that channels use both directions of the links.
template <class Sink>
KB_HD KB_COLD void coll_schedule_channels(const AllreduceConfig& c, Sink& sink) {
  struct Channels {
    Sink* s;
    std::int64_t p, n;
    bool mirror;
    KB_HD std::int32_t at(std::int64_t g, std::int64_t r) const {
      const std::int64_t m = mirror && (g & 1) && r != 0 ? p - r : r;
      return static_cast<std::int32_t>(g * p + m);
    }
    KB_HD void xfer(std::int64_t ch, CollXfer x) {
      for (std::int64_t g = 0; g < n; ++g) {
        // A ring's transfer moves one piece (its blocks are pieces), so a mirrored run is one too.
        const std::int32_t k0 = at(g, x.k0), k1 = mirror && (g & 1) ? k0 + 1 : at(g, x.k1 - 1) + 1;
        s->xfer(ch, CollXfer{at(g, x.src), at(g, x.dst), k0, k1, x.reduce, x.slot});
      }
    }
    KB_HD void flush() { s->flush(); }
  } channels{&sink, c.ranks, c.channels, c.algo == static_cast<std::int64_t>(CollAlgo::ring)};
  coll_schedule_one(c, channels);
}
template <class Sink>
KB_HD void coll_schedule(const AllreduceConfig& c, Sink& sink) {
  if (c.channels <= 1) return coll_schedule_one(c, sink);
  coll_schedule_channels(c, sink);
}

// Every transfer of any config, hier included: sink.phase(sub) before each phase (its
// single-level config: pieces and chunks are the phase's), transfers with hier ranks and
// inbox slots counted from the phase's first, and sink.barrier() after each phase. A
// single-level config is one phase.
template <class Sink>
KB_HD void coll_schedule_all(const AllreduceConfig& c, Sink& sink) {
  if (coll_one_level(c)) {
    sink.phase(c);
    coll_schedule(c, sink);
    sink.barrier();
    return;
  }
  CollPhase ph[5];
  std::int64_t leader_pe = 0, leader_cube = 0;
  const int n = coll_hier_phases(c, ph, &leader_pe, &leader_cube);
  for (int k = 0; k < n; ++k) {
    sink.phase(ph[k].sub);
    for (std::int64_t g = 0; g < ph[k].groups; ++g) {
      struct Remap {
        Sink* s;
        const AllreduceConfig* c;
        const CollPhase* ph;
        std::int64_t g, leader_pe, leader_cube;
        KB_HD void xfer(std::int64_t ch, CollXfer x) {
          x.src = static_cast<std::int32_t>(coll_hier_rank(*c, ph->sub, g, x.src, leader_pe, leader_cube));
          x.dst = static_cast<std::int32_t>(coll_hier_rank(*c, ph->sub, g, x.dst, leader_pe, leader_cube));
          x.slot = static_cast<std::int32_t>(x.slot + ph->slot_base);
          s->xfer(ch, x);
        }
        KB_HD void flush() { s->flush(); }
      } remap{&sink, &c, &ph[k], g, leader_pe, leader_cube};
      coll_schedule(ph[k].sub, remap);
    }
    sink.barrier();
  }
}

// ---- validity ----------------------------------------------------------------------------

// SRAM one rank's PE needs (SRAM buffers: the buffer and its inboxes; HBM buffers: none, the
// reductions stream through the PE), and HBM one rank needs (HBM buffers: the same copies).
KB_HD inline std::int64_t coll_sram_bytes(const AllreduceConfig& c) {
  return c.buffer == static_cast<std::int64_t>(CollBuffer::sram) ? (1 + coll_total_inboxes(c)) * c.bytes : 0;
}
KB_HD inline std::int64_t coll_hbm_bytes_per_rank(const AllreduceConfig& c) {
  return c.buffer == static_cast<std::int64_t>(CollBuffer::hbm) ? (1 + coll_total_inboxes(c)) * c.bytes : 0;
}
// Ranks that keep their buffers in one cube's HBM: all of them (pe), one (cube, sip), the
// PEs of a cube (hier).
// With channels, each channel's PE of a rank keeps its own: a cube level's rank keeps one per
// channel in its cube, a SIP's one per channel on each of its cubes the channels use.
KB_HD inline std::int64_t coll_ranks_per_cube(const AllreduceConfig& c) {
  if (c.level == 0) return c.ranks;
  if (c.level == 1) return c.channels;
  if (c.level == 2) return ceil_div(c.channels, c.hw.cubes_per_sip());
  CollHier d;
  coll_hier_dims(c, &d);
  return d.pes;
}

// The fields every config is checked for first, hier or not.
KB_HD inline std::int32_t coll_check_fields(const AllreduceConfig& c) {
  if (!hw_fits(c.hw) || c.hw.hbm_tenants > 1) return kArBadHardware;  // a collective's launch is every rank's
  if (c.level < 0 || c.level >= kCollLevels || c.algo < 0 || c.algo >= kCollAlgos || c.buffer < 0 ||
      c.buffer >= kCollBuffers || c.op < 0 || c.op >= kCollOps || c.chunks < 1 || c.chunks > kCollMaxChunks ||
      !coll_channels_fit(c.hw, c.level, c.channels))
    return kArBadField;
  return kArOk;
}

// A single-level config (not hier): its fields, then its ranks, algorithm, size, memory and
// pieces.
KB_HD inline std::int32_t coll_check_level(const AllreduceConfig& c) {
  const std::int32_t fields = coll_check_fields(c);
  if (fields != kArOk) return fields;
  if (c.ranks < 2 || c.ranks > kCollMaxRanks || c.ranks > coll_level_size(c.hw, c.level)) return kArBadRanks;
  const auto algo = static_cast<CollAlgo>(c.algo);
  if (!coll_algo_runs(c.algo, c.op)) return kArBadAlgo;
  if (algo == CollAlgo::hd && (c.ranks & (c.ranks - 1)) != 0) return kArBadAlgo;
  if ((algo == CollAlgo::mesh2d || algo == CollAlgo::root) && c.ranks % coll_cols(c) != 0) return kArBadAlgo;
  const std::int64_t vranks = coll_vranks(c);
  if (c.bytes < 2 || c.bytes % 2 != 0 || c.bytes > kCollMaxBytes || c.bytes / 2 < c.chunks * vranks) return kArBadSize;
  // An all-to-all moves each piece to another place: its pieces are all one size.
  if (c.op == static_cast<std::int64_t>(CollOp::alltoall) && (c.bytes / 2) % (c.chunks * vranks) != 0) return kArBadSize;
  if (coll_sram_bytes(c) > c.hw.sram_bytes()) return kArSramOverflow;
  // HBM: the ranks on one cube share it (pe level: all of them on cube 0).
  const std::int64_t per_cube = coll_ranks_per_cube(c) * coll_hbm_bytes_per_rank(c);
  if (per_cube > c.hw.hbm_capacity_bytes()) return kArHbmOverflow;
  if (vranks > kCollMaxRanks || vranks * c.chunks * vranks > kCollMaxPieces) return kArTooLarge;
  return kArOk;
}

// The config's fields and memory (allreduce_check adds the model's capacity). Not recursive:
// a hier phase is a single-level config, checked by coll_check_level. Device code must not
// recurse, or the CUDA kernels' stack size cannot be known when they are built
// (tests/device_call_graph.py).
KB_HD inline std::int32_t coll_check(const AllreduceConfig& c) {
  if (c.level != static_cast<std::int64_t>(CollLevel::hier)) return coll_check_level(c);
  const std::int32_t fields = coll_check_fields(c);
  if (fields != kArOk) return fields;
  CollHier d;
  if (!coll_op_runs_hier(c.op)) return coll_hier_dims(c, &d) ? coll_check_level(c) : kArBadRanks;  // one level
  if (!coll_hier_dims(c, &d) || d.pes > kCollMaxRanks || d.cubes > kCollMaxRanks || d.sips > kCollMaxRanks)
    return kArBadRanks;
  if (c.bytes < 2 || c.bytes % 2 != 0 || c.bytes > kCollMaxBytes) return kArBadSize;
  // Each phase as a collective of its own (its algorithm, sizes, pieces), then the memory of all.
  CollPhase ph;  // one at a time
  const int n = coll_hier_phases(c, nullptr, nullptr, nullptr, kCollMaxPhases);
  for (int k = 0; k < n; ++k) {
    coll_hier_phases(c, &ph, nullptr, nullptr, k);
    AllreduceConfig& sub = ph.sub;
    const std::int64_t ranks = sub.ranks;
    sub.bytes = 2 * sub.chunks * sub.ranks;
    sub.op = static_cast<std::int64_t>(CollOp::allreduce);
    const std::int32_t s = coll_check_level(sub);  // fields, ranks, algorithm, pieces
    if (s != kArOk) return s;
    if (c.bytes / 2 < c.chunks * ranks) return kArBadSize;
  }
  if (coll_sram_bytes(c) > c.hw.sram_bytes()) return kArSramOverflow;
  if (coll_ranks_per_cube(c) * coll_hbm_bytes_per_rank(c) > c.hw.hbm_capacity_bytes()) return kArHbmOverflow;
  return kArOk;
}

}  // namespace kb
