// Mixture-of-experts layers (docs/model.md section 13.11): the routed experts' placement over
// the expert-parallel ranks, and the load of the rank that sets a MoE layer's pace. Pure
// integer arithmetic, for both engines and the batched model. The routing itself (which
// experts each token goes to, seeded) is the host's (src/host/llm/moe_routing.h): it fixes
// the tokens of each routed expert before either engine runs, and this file takes it from
// there, so both engines time the same imbalance.
#pragma once

#include <cstdint>

#include "../../common/kb_hd.h"
#include "../../common/kernel_memo.h"

namespace kb {

constexpr std::int64_t kMoeMaxExperts = 512;    // routed experts of a layer (Kimi-K2: 384)
constexpr std::int64_t kMoeMaxRedundant = 512;  // extra copies of the hottest experts
constexpr std::int64_t kMoeMaxCopies = kMoeMaxExperts + kMoeMaxRedundant;
constexpr std::int64_t kMoeMaxRanks = 1024;     // expert-parallel ranks a placement spreads over
static_assert(kMoeMaxCopies <= 32767, "a copy's index is an int16 (MoePlaceBuf::order)");

// Where the copies of the routed experts go. The caller's buffers hold kMoeMaxCopies copies,
// kMoeMaxExperts experts and kMoeMaxRanks ranks.
struct MoePlaceBuf {
  std::int64_t* share;       // per copy: the tokens it handles (its expert's, split evenly over its copies)
  std::int32_t* expert;      // per copy: its expert
  std::int32_t* rank;        // per copy: the rank that holds it
  std::int32_t* replicas;    // per expert: its copies
  std::int64_t* rank_tokens; // per rank: the tokens its copies handle
  std::int32_t* rank_held;   // per rank: the copies it holds
  std::int16_t* order;       // per copy: the copies in the order they are placed
};

namespace moe_detail {
// Whether copy a is placed before copy b: more tokens first, the first copy on a tie.
KB_HD inline bool placed_before(const std::int64_t* share, std::int64_t a, std::int64_t b) {
  return share[a] > share[b] || (share[a] == share[b] && a < b);
}
// Moves order[i] down the heap of `len` whose top is the copy placed last.
KB_HD inline void sift_down(const std::int64_t* share, std::int16_t* order, std::int64_t i, std::int64_t len) {
  for (;;) {
    std::int64_t c = 2 * i + 1;
    if (c >= len) return;
    if (c + 1 < len && placed_before(share, order[c], order[c + 1])) ++c;
    if (!placed_before(share, order[i], order[c])) return;
    const std::int16_t t = order[i];
    order[i] = order[c], order[c] = t;
    i = c;
  }
}
// order[0..n): the copies in placement order (a heapsort: keys are unique, so the order is
// the one repeated selection of the first most-loaded unplaced copy gives).
KB_HD inline void placement_order(const std::int64_t* share, std::int16_t* order, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) order[i] = static_cast<std::int16_t>(i);
  for (std::int64_t i = n / 2 - 1; i >= 0; --i) sift_down(share, order, i, n);
  for (std::int64_t end = n - 1; end > 0; --end) {
    const std::int16_t t = order[0];
    order[0] = order[end], order[end] = t;
    sift_down(share, order, 0, end);
  }
}
}  // namespace moe_detail

enum MoePlaceStatus : std::int32_t {
  kMoePlaceOk = 0,
  kMoePlaceBadRedundant,  // redundant copies outside 0..kMoeMaxRedundant
  kMoePlaceBadRanks,      // ranks outside 1..min(copies, kMoeMaxRanks): a rank holds one copy or more
  kMoePlaceTooMany,       // more extra copies than experts x (ranks - 1): at most one copy of an expert a rank
  kMoePlaceUneven,        // extra copies given, and the copies do not split evenly over the ranks
};

// Whether `redundant` extra copies of `experts` experts fit `ranks` ranks (a MoePlaceStatus).
KB_HD inline std::int32_t moe_place_check(std::int64_t experts, std::int64_t ranks, std::int64_t redundant) {
  if (redundant < 0 || redundant > kMoeMaxRedundant) return kMoePlaceBadRedundant;
  if (ranks < 1 || ranks > experts + redundant || ranks > kMoeMaxRanks) return kMoePlaceBadRanks;
  if (redundant > experts * (ranks - 1)) return kMoePlaceTooMany;
  if (redundant > 0 && (experts + redundant) % ranks != 0) return kMoePlaceUneven;
  return kMoePlaceOk;
}

// Places the copies of `experts` experts (tokens[e] routed to expert e) over `ranks` ranks;
// returns the copies placed (0 when moe_place_check refuses). redundant == 0: expert e on rank
// e mod ranks. redundant > 0: the extra copies go one by one to the expert of most tokens a
// copy (the first such expert on a tie; at most one copy of an expert a rank), a copy handles
// an equal part of its expert's tokens (the first copies one more where it does not divide),
// and the copies are placed, most tokens first (expert order on a tie), each on the rank of
// fewest tokens (the first on a tie) that has a free slot and no copy of that expert; where
// every rank with a free slot holds one already, on the one of them of fewest tokens. A rank
// holds (experts + redundant) / ranks copies. This is EPLB's greedy placement within a layer.
template <class Tokens>
KB_HD std::int64_t moe_place(const Tokens* tokens, std::int64_t experts, std::int64_t ranks, std::int64_t redundant,
                             const MoePlaceBuf& b) {
  if (moe_place_check(experts, ranks, redundant) != kMoePlaceOk) return 0;
  for (std::int64_t k = 0; k < ranks; ++k) b.rank_tokens[k] = 0, b.rank_held[k] = 0;
  for (std::int64_t e = 0; e < experts; ++e) b.replicas[e] = 1;
  if (redundant == 0) {
    for (std::int64_t e = 0; e < experts; ++e) {
      const std::int64_t k = e % ranks;
      b.share[e] = tokens[e], b.expert[e] = static_cast<std::int32_t>(e), b.rank[e] = static_cast<std::int32_t>(k);
      b.rank_tokens[k] += tokens[e], ++b.rank_held[k];
    }
    return experts;
  }
  for (std::int64_t n = 0; n < redundant; ++n) {  // a * rb > b * ra: more tokens a copy
    std::int64_t best = -1;
    for (std::int64_t e = 0; e < experts; ++e) {
      if (b.replicas[e] >= ranks) continue;
      if (best < 0 || static_cast<std::int64_t>(tokens[e]) * b.replicas[best] > static_cast<std::int64_t>(tokens[best]) * b.replicas[e])
        best = e;
    }
    if (best < 0) break;
    ++b.replicas[best];
  }
  std::int64_t n = 0;
  for (std::int64_t e = 0; e < experts; ++e) {
    const std::int64_t r = b.replicas[e], t = tokens[e];
    for (std::int64_t j = 0; j < r; ++j, ++n)
      b.share[n] = t / r + (j < t % r ? 1 : 0), b.expert[n] = static_cast<std::int32_t>(e), b.rank[n] = -1;
  }
  const std::int64_t slots = (experts + redundant) / ranks;
  moe_detail::placement_order(b.share, b.order, n);
  for (std::int64_t placed = 0; placed < n; ++placed) {
    const std::int64_t c = b.order[placed];  // the unplaced copy of most tokens, the first on a tie
    std::int64_t lo = c, hi = c + 1;  // the copies of its expert (one after another)
    while (lo > 0 && b.expert[lo - 1] == b.expert[c]) --lo;
    while (hi < n && b.expert[hi] == b.expert[c]) ++hi;
    std::int64_t to = -1;
    for (int pass = 0; pass < 2 && to < 0; ++pass)  // a rank without this expert first
      for (std::int64_t k = 0; k < ranks; ++k) {
        if (b.rank_held[k] >= slots) continue;
        if (pass == 0) {
          bool has = false;
          for (std::int64_t i = lo; i < hi && !has; ++i) has = b.rank[i] == k;
          if (has) continue;
        }
        if (to < 0 || b.rank_tokens[k] < b.rank_tokens[to]) to = k;
      }
    b.rank[c] = static_cast<std::int32_t>(to);
    b.rank_tokens[to] += b.share[c], ++b.rank_held[to];
  }
  return n;
}

// What a MoE layer's placement gives the layer program: the rank of most tokens (the first
// such rank), which sets the expert kernels' pace, and the group's figures.
struct MoeLoad {
  std::int32_t status;       // MoePlaceStatus
  std::int64_t rank_tokens;  // the (token, expert) pairs the busiest rank handles
  std::int64_t rank_copies;  // its copies with tokens: the experts whose weights it reads
  std::int64_t slots;        // copies a rank holds (the most, for its HBM)
  std::int64_t pairs;        // (token, expert) pairs of the layer, every rank
  std::int64_t touched;      // experts with a token: the distinct experts the step reads
};

// What moe_load (below) gives without placing: the busiest rank's pairs at their least (the
// mean over the ranks, rounded up: the busiest has no fewer), the rest as moe_load has them
// but the copies with tokens (0). What a rank holds grows with its pairs, so a config whose
// HBM overflows under this load overflows it under the placed one.
template <class Tokens>
KB_HD inline MoeLoad moe_load_least(const Tokens* tokens, std::int64_t experts, std::int64_t ranks, std::int64_t redundant) {
  MoeLoad out{moe_place_check(experts, ranks, redundant), 0, 0, 0, 0, 0};
  if (out.status != kMoePlaceOk || experts > kMoeMaxExperts) {
    if (out.status == kMoePlaceOk) out.status = kMoePlaceBadRanks;
    return out;
  }
  out.slots = redundant > 0 ? (experts + redundant) / ranks : (experts + ranks - 1) / ranks;
  for (std::int64_t e = 0; e < experts; ++e) out.pairs += tokens[e], out.touched += tokens[e] > 0;
  out.rank_tokens = (out.pairs + ranks - 1) / ranks;
  return out;
}

// The load of `ranks` expert-parallel ranks under the placement above (the copies' buffers on
// the stack: large, so out of line).
template <class Tokens>
KB_HD KB_NOINLINE MoeLoad moe_load(const Tokens* tokens, std::int64_t experts, std::int64_t ranks, std::int64_t redundant) {
  MoeLoad out = moe_load_least(tokens, experts, ranks, redundant);
  if (out.status != kMoePlaceOk) return out;
  std::int64_t share[kMoeMaxCopies], rank_tokens[kMoeMaxRanks];
  std::int32_t expert[kMoeMaxCopies], rank[kMoeMaxCopies], replicas[kMoeMaxExperts], held[kMoeMaxRanks];
  std::int16_t order[kMoeMaxCopies];
  const MoePlaceBuf b{share, expert, rank, replicas, rank_tokens, held, order};
  const std::int64_t n = moe_place(tokens, experts, ranks, redundant, b);
  std::int64_t busiest = 0;
  for (std::int64_t k = 1; k < ranks; ++k)
    if (rank_tokens[k] > rank_tokens[busiest]) busiest = k;
  out.rank_tokens = rank_tokens[busiest];
  for (std::int64_t i = 0; i < n; ++i) out.rank_copies += rank[i] == busiest && share[i] > 0;
  return out;
}

// moe_load through the kernel memo (kernel_memo.h), for placements with many copies: a
// sweep's configs share their routed tokens and differ in the ranks and redundant copies, so
// a few placements serve them all. Fewer copies are placed again (cheaper than the memo's
// key of every expert's tokens).
struct MoeLoadKey {
  std::int64_t experts, ranks, redundant;
  std::int32_t tokens[kMoeMaxExperts];  // the first `experts`, the rest 0
};
// A CUDA thread places every time, without the key in its frame.
KB_HD inline MoeLoad moe_load_memo(const std::int32_t* tokens, std::int64_t experts, std::int64_t ranks, std::int64_t redundant) {
#if defined(__CUDA_ARCH__)
  return moe_load(tokens, experts, ranks, redundant);
#else
  if (experts + redundant <= 64 || experts > kMoeMaxExperts || experts < 0) return moe_load(tokens, experts, ranks, redundant);
  MoeLoadKey k{experts, ranks, redundant, {}};
  for (std::int64_t e = 0; e < experts; ++e) k.tokens[e] = tokens[e];
  return shared_memo_eval<MoeLoadKey, MoeLoad>(k, [](const MoeLoadKey& x) { return moe_load(x.tokens, x.experts, x.ranks, x.redundant); });
#endif
}

}  // namespace kb
