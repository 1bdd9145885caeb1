// A mixture-of-experts router, seeded: which routed experts each token of a batch goes to, as
// counts per expert, fixed before either engine runs so that both time the same imbalance;
// and the experts' placement over expert-parallel ranks, round-robin or by load with
// redundant replicas of the hottest experts (as EPLB places them).
//
// Routing kinds (`--routing`):
//   balanced     the batch's B x K choices spread as evenly as K distinct experts a token allow;
//   uniform      each token's K experts drawn uniformly, distinct, from a seeded stream;
//   zipf:ALPHA   the same, expert popularity falling as 1 / rank^ALPHA (a seeded order a layer);
//   FILE         the same, popularity in proportion to a histogram of expert loads (FILE).
// A drawn token takes the K experts of largest key log(u) / w (u uniform in (0, 1], w the
// expert's weight): K distinct experts drawn one after the other with probability in
// proportion to w (Efraimidis and Spirakis 2006). With group-limited routing (DeepSeek-V3:
// n_group, topk_group) a token first keeps the topk_group groups of largest best key, then
// its K experts among them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kb {

enum class RoutingKind { balanced, uniform, zipf, file };

struct RoutingSpec {
  RoutingKind kind = RoutingKind::balanced;
  double alpha = 0;                 // zipf's exponent
  std::string file;                 // file: the histogram's path
  std::vector<std::int64_t> loads;  // file: a load per routed expert, in expert order
  std::uint64_t seed = 0;
};

// `text`: balanced, uniform, zipf:ALPHA (0 <= ALPHA <= 16) or a histogram FILE: one expert a
// line, its load (an integer >= 0), or "expert,load" with experts 0, 1, ... in order; '#'
// starts a comment. An InputError names `what` (the flag), or the file's line.
RoutingSpec parse_routing(const std::string& text, std::uint64_t seed, const std::string& what = "--routing");

// The model's router: `experts` routed experts, `top_k` a token; group-limited where
// groups > 1 (the experts split into `groups` equal groups, a token keeps `topk_groups`).
struct MoeRouter {
  std::int64_t experts = 0, top_k = 0, groups = 1, topk_groups = 1;
};

struct Routed {
  std::vector<std::int64_t> tokens;  // per routed expert: the tokens routed to it
  std::int64_t touched = 0;          // experts with a token: the distinct experts whose weights a step reads
};

// The routing of `tokens` tokens at layer `layer` (a layer's own stream and popularity order).
// Deterministic in (spec, router, tokens, layer). Throws InputError where the router and the
// spec disagree (a histogram of another expert count; a group limit that leaves fewer than
// top_k experts).
Routed route_tokens(const RoutingSpec& spec, const MoeRouter& router, std::int64_t tokens, std::int64_t layer = 0);

// E (1 - (1 - K/E)^B): the experts that B tokens touch on average under uniform routing.
double expected_touched_uniform(std::int64_t experts, std::int64_t top_k, std::int64_t tokens);

// The routed experts over `ranks` expert-parallel ranks, with `redundant` extra replicas.
struct ExpertPlacement {
  std::vector<std::int64_t> replicas;           // per expert: its copies (1 + the extra ones)
  std::vector<std::vector<std::int32_t>> rank;  // per rank: the experts it holds, one entry a copy
  std::vector<std::int64_t> rank_tokens;        // per rank: the tokens its copies handle
  std::int64_t max_rank_tokens = 0;
  double load_imbalance = 0;  // the most tokens a rank handles over the mean (1: even)
};

// redundant == 0: expert e on rank e mod ranks. redundant > 0: the extra copies go one by one
// to the expert of most tokens a copy (at most one copy of an expert a rank, so at most
// experts x (ranks - 1) extra copies), a copy handles an equal part of its expert's tokens,
// and the copies are placed, most tokens first, each on the rank with the fewest tokens that
// has a free slot and no copy of that expert; where every rank with a free slot holds one
// already, on the one of them with the fewest tokens (ranks hold (experts + redundant) / ranks
// copies each, which must divide). InputError (naming `what`) for ranks outside
// 1..experts + redundant or too many copies.
ExpertPlacement place_experts(const std::vector<std::int64_t>& expert_tokens, std::int64_t ranks,
                              std::int64_t redundant, const std::string& what = "--redundant-experts");

}  // namespace kb
