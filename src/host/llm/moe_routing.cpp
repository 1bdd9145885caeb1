#include "host/llm/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>

#include "device/models/llm/llm_moe.h"
#include "host/common/error.h"
#include "host/runtime/numeric.h"
#include "host/common/output.h"

namespace kb {
namespace {

// One seeded splitmix64 stream a layer.
using Stream = SplitMix64;

Stream stream_of(std::uint64_t seed, std::int64_t layer) {
  Stream s{seed ^ (static_cast<std::uint64_t>(layer) * UINT64_C(0xD1B54A32D192ED03))};
  s.next();
  return s;
}

RoutingSpec read_histogram(const std::string& path, std::uint64_t seed, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw InputError(what + ": '" + path + "': not balanced, uniform or zipf:ALPHA, and no such file");
  check_input_file(path);
  std::ifstream in(path);
  if (!in) throw InputError(path + ":1:1: (file): cannot open file");
  RoutingSpec s;
  s.kind = RoutingKind::file, s.file = path, s.seed = seed;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    // The field [b, e) of the line, blanks around it left out, and where it starts (from 1).
    auto field = [&](std::size_t b, std::size_t e, std::size_t* col) {
      while (b < e && (line[b] == ' ' || line[b] == '\t')) ++b;
      while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t' || line[e - 1] == '\r')) --e;
      *col = b + 1;
      return line.substr(b, e - b);
    };
    auto loc = [&](std::size_t col) { return path + ":" + std::to_string(no) + ":" + std::to_string(col) + ": "; };
    auto number = [](const std::string& t, long long* v) {
      char* end = nullptr;
      *v = std::strtoll(t.c_str(), &end, 10);
      return !t.empty() && end != t.c_str() && *end == '\0';
    };
    std::size_t col = 0, from = first;
    long long v = 0;
    if (const auto comma = line.find(',', first); comma != std::string::npos) {
      const std::string expert = field(first, comma, &col);
      if (!number(expert, &v) || v != static_cast<long long>(s.loads.size()))
        throw InputError(loc(col) + "expert: expected " + std::to_string(s.loads.size()) + " (experts in order from 0), got '" +
                         expert + "'");
      from = comma + 1;
    }
    const std::string load = field(from, line.size(), &col);
    if (!number(load, &v) || v < 0 || v > (INT64_C(1) << 40))
      throw InputError(loc(col) + "load: expected an integer from 0 to 2^40, got '" + load + "'");
    if (s.loads.size() >= 65536) throw InputError(loc(col) + "load: more than 65,536 experts");
    s.loads.push_back(v);
  }
  if (s.loads.empty()) throw InputError(path + ":1:1: load: the histogram has no expert");
  if (std::accumulate(s.loads.begin(), s.loads.end(), INT64_C(0)) == 0)
    throw InputError(path + ":1:1: load: every expert's load is 0");
  return s;
}

// Per expert: its weight (0: never drawn while another is left). Zipf's popularity order is
// drawn from a stream of its own, so that at ALPHA 0 the tokens' draws are uniform routing's.
std::vector<double> weights_of(const RoutingSpec& spec, std::int64_t E, std::int64_t layer) {
  Stream s = stream_of(spec.seed ^ UINT64_C(0x5A17F00D5EED0001), layer);
  std::vector<double> w(static_cast<std::size_t>(E), 1.0);
  if (spec.kind == RoutingKind::zipf) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(E));  // order[p]: the expert of popularity p
    std::iota(order.begin(), order.end(), 0);
    for (std::int64_t i = E - 1; i > 0; --i)
      std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(s.below(static_cast<std::uint64_t>(i + 1)))]);
    for (std::int64_t p = 0; p < E; ++p)
      w[static_cast<std::size_t>(order[static_cast<std::size_t>(p)])] = std::pow(static_cast<double>(p + 1), -spec.alpha);
  } else if (spec.kind == RoutingKind::file) {
    for (std::int64_t e = 0; e < E; ++e) w[static_cast<std::size_t>(e)] = static_cast<double>(spec.loads[static_cast<std::size_t>(e)]);
  }
  return w;
}

// The router's fields are the model's (a Hugging Face config's names in the messages).
void check_router(const RoutingSpec& spec, const MoeRouter& r, std::int64_t tokens) {
  if (r.experts < 1 || r.experts > 65536)
    throw InputError("n_routed_experts: " + std::to_string(r.experts) + " is outside 1..65536");
  if (r.top_k < 1 || r.top_k > r.experts)
    throw InputError("num_experts_per_tok: " + std::to_string(r.top_k) + " is outside 1.." + std::to_string(r.experts) +
                     " (the routed experts)");
  if (r.groups < 1 || r.experts % r.groups != 0)
    throw InputError("n_group: " + std::to_string(r.groups) + " does not divide the " + std::to_string(r.experts) +
                     " routed experts");
  if (r.topk_groups < 1 || r.topk_groups > r.groups || r.top_k > r.topk_groups * (r.experts / r.groups))
    throw InputError("topk_group: " + std::to_string(r.topk_groups) + " of " + std::to_string(r.groups) +
                     " groups do not hold the " + std::to_string(r.top_k) + " experts a token takes");
  if (tokens < 0 || tokens > (INT64_C(1) << 32))
    throw InputError("routing: " + std::to_string(tokens) + " tokens is outside 0..2^32");
  if (spec.kind == RoutingKind::file && static_cast<std::int64_t>(spec.loads.size()) != r.experts)
    throw InputError(spec.file + ":1:1: load: the histogram has " + std::to_string(spec.loads.size()) +
                     " experts, the model routes to " + std::to_string(r.experts));
}

}  // namespace

RoutingSpec parse_routing(const std::string& text, std::uint64_t seed, const std::string& what) {
  RoutingSpec s;
  s.seed = seed;
  if (text == "balanced") return s;
  if (text == "uniform") {
    s.kind = RoutingKind::uniform;
    return s;
  }
  if (text.rfind("zipf:", 0) == 0) {
    const std::string a = text.substr(5);
    char* end = nullptr;
    const double alpha = std::strtod(a.c_str(), &end);
    if (a.empty() || end == a.c_str() || *end != '\0' || !(alpha >= 0 && alpha <= 16))
      throw InputError(what + ": '" + text + "': zipf's ALPHA is a number from 0 to 16");
    s.kind = RoutingKind::zipf, s.alpha = alpha;
    return s;
  }
  if (text.empty()) throw InputError(what + ": expected balanced, uniform, zipf:ALPHA or a histogram FILE");
  return read_histogram(text, seed, what);
}

Routed route_tokens(const RoutingSpec& spec, const MoeRouter& r, std::int64_t tokens, std::int64_t layer) {
  check_router(spec, r, tokens);
  const std::int64_t E = r.experts, K = r.top_k;
  Routed out;
  out.tokens.assign(static_cast<std::size_t>(E), 0);
  if (spec.kind == RoutingKind::balanced) {
    const std::int64_t all = tokens * K;  // every expert within one of the mean: each at most `tokens`
    for (std::int64_t e = 0; e < E; ++e) out.tokens[static_cast<std::size_t>(e)] = all / E + (e < all % E ? 1 : 0);
  } else {
    Stream s = stream_of(spec.seed, layer);
    const std::vector<double> w = weights_of(spec, E, layer);
    const std::int64_t per_group = E / r.groups;
    std::vector<double> key(static_cast<std::size_t>(E)), group_key(static_cast<std::size_t>(r.groups));
    std::vector<std::int32_t> idx(static_cast<std::size_t>(E)), gidx(static_cast<std::size_t>(r.groups));
    // Larger key first; equal keys (zero weights) by the lower index.
    auto before = [](const std::vector<double>& k) {
      return [&k](std::int32_t a, std::int32_t b) {
        return k[static_cast<std::size_t>(a)] > k[static_cast<std::size_t>(b)] ||
               (k[static_cast<std::size_t>(a)] == k[static_cast<std::size_t>(b)] && a < b);
      };
    };
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t e = 0; e < E; ++e) {
        const double u = s.unit(), we = w[static_cast<std::size_t>(e)];
        key[static_cast<std::size_t>(e)] = we > 0 ? std::log(u) / we : -std::numeric_limits<double>::infinity();
      }
      std::int64_t n = 0;  // the candidates: every expert, or the kept groups' experts
      if (r.groups > 1) {
        for (std::int64_t g = 0; g < r.groups; ++g) {
          const auto b = key.begin() + g * per_group;
          group_key[static_cast<std::size_t>(g)] = *std::max_element(b, b + per_group);
          gidx[static_cast<std::size_t>(g)] = static_cast<std::int32_t>(g);
        }
        std::partial_sort(gidx.begin(), gidx.begin() + r.topk_groups, gidx.end(), before(group_key));
        for (std::int64_t j = 0; j < r.topk_groups; ++j)
          for (std::int64_t e = 0; e < per_group; ++e)
            idx[static_cast<std::size_t>(n++)] = static_cast<std::int32_t>(gidx[static_cast<std::size_t>(j)] * per_group + e);
      } else {
        std::iota(idx.begin(), idx.end(), 0);
        n = E;
      }
      std::partial_sort(idx.begin(), idx.begin() + K, idx.begin() + n, before(key));
      for (std::int64_t j = 0; j < K; ++j) ++out.tokens[static_cast<std::size_t>(idx[static_cast<std::size_t>(j)])];
    }
  }
  for (const std::int64_t c : out.tokens) out.touched += c > 0;
  return out;
}

double expected_touched_uniform(std::int64_t experts, std::int64_t top_k, std::int64_t tokens) {
  const double E = static_cast<double>(experts);
  return E * (1.0 - std::pow(1.0 - static_cast<double>(top_k) / E, static_cast<double>(tokens)));
}

ExpertPlacement place_experts(const std::vector<std::int64_t>& t, std::int64_t ranks, std::int64_t redundant,
                              const std::string& what) {
  const std::int64_t E = static_cast<std::int64_t>(t.size());
  switch (moe_place_check(E, ranks, redundant)) {
    case kMoePlaceOk: break;
    case kMoePlaceBadRedundant:
      throw InputError(what + ": " + std::to_string(redundant) + " is outside 0.." + std::to_string(kMoeMaxRedundant));
    case kMoePlaceBadRanks:
      throw InputError(what + ": " + std::to_string(ranks) + " expert-parallel ranks for " + std::to_string(E + redundant) +
                       " expert copies: a rank holds one or more (at most " + std::to_string(kMoeMaxRanks) + " ranks)");
    case kMoePlaceTooMany:
      throw InputError(what + ": " + std::to_string(redundant) + " redundant copies of " + std::to_string(E) +
                       " experts over " + std::to_string(ranks) + " ranks: at most " + std::to_string(E * (ranks - 1)) +
                       " (a copy of an expert a rank)");
    default:
      throw InputError(what + ": " + std::to_string(E) + " experts and " + std::to_string(redundant) +
                       " redundant copies do not split evenly over " + std::to_string(ranks) + " ranks");
  }
  const std::size_t copies = static_cast<std::size_t>(E + redundant);
  std::vector<std::int64_t> share(copies), rank_tokens(static_cast<std::size_t>(ranks));
  std::vector<std::int32_t> expert(copies), rank(copies), replicas(static_cast<std::size_t>(E)), held(static_cast<std::size_t>(ranks));
  std::vector<std::int16_t> placed(copies);
  const std::int64_t n =
      moe_place(t.data(), E, ranks, redundant, MoePlaceBuf{share.data(), expert.data(), rank.data(), replicas.data(), rank_tokens.data(), held.data(), placed.data()});
  ExpertPlacement p;
  p.replicas.assign(replicas.begin(), replicas.end());
  p.rank.assign(static_cast<std::size_t>(ranks), {});
  p.rank_tokens = rank_tokens;
  // Each rank's copies in the order they were placed: most tokens first.
  std::vector<std::size_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return share[a] > share[b]; });
  for (const std::size_t i : order) p.rank[static_cast<std::size_t>(rank[i])].push_back(expert[i]);
  const std::int64_t total = std::accumulate(p.rank_tokens.begin(), p.rank_tokens.end(), INT64_C(0));
  p.max_rank_tokens = *std::max_element(p.rank_tokens.begin(), p.rank_tokens.end());
  p.load_imbalance = total > 0 ? static_cast<double>(p.max_rank_tokens) * static_cast<double>(ranks) / static_cast<double>(total) : 1.0;
  return p;
}

}  // namespace kb
