#include "merge.h"

#include <algorithm>

#include "../common/error.h"
#include "../topology/fields.h"

namespace kb {

std::int64_t shard_block(std::int64_t size, std::int64_t n) {
  const std::int64_t b = (size + 8 * n - 1) / (8 * n);
  return std::max<std::int64_t>(1, std::min<std::int64_t>(b, INT64_C(1) << 20));
}

std::int64_t shard_configs(std::int64_t size, std::int64_t i, std::int64_t n) {
  const std::int64_t block = shard_block(size, n), blocks = (size + block - 1) / block;
  if (i >= blocks) return 0;
  const std::int64_t mine = (blocks - 1 - i) / n + 1;  // blocks i, i + n, ...
  const std::int64_t last = i + (mine - 1) * n;         // the space's last block may be short
  return mine * block - (last == blocks - 1 ? blocks * block - size : 0);
}

batched::SweepSummary empty_summary(std::int64_t groups, int statuses, bool histogram) {
  batched::SweepSummary s;
  s.best.assign(static_cast<std::size_t>(groups), batched::GroupBest{});
  s.by_status.assign(static_cast<std::size_t>(statuses), 0);
  if (histogram) s.histogram.assign(static_cast<std::size_t>(batched::kHistBins), 0);
  return s;
}

void parse_shard(const std::string& flag, const std::string& text, std::int64_t* i, std::int64_t* n) {
  const auto slash = text.find('/');
  std::string why;
  if (slash == std::string::npos) throw InputError(flag + " " + text + ": expected I/N, e.g. 0/4 (shard I of N, from 0)");
  if (!parse_int_in(text.substr(slash + 1), 1, INT64_C(1) << 20, n, &why))
    throw InputError(flag + " " + text + ": N: " + why);
  if (!parse_int_in(text.substr(0, slash), 0, *n - 1, i, &why)) throw InputError(flag + " " + text + ": I: " + why);
}

namespace {
bool faster(const batched::Ranked& a, const batched::Ranked& b) {
  return a.latency_ps != b.latency_ps ? a.latency_ps < b.latency_ps : a.index < b.index;
}
bool pareto_order(const batched::ParetoPoint& a, const batched::ParetoPoint& b) {
  if (a.group != b.group) return a.group < b.group;
  if (a.cost != b.cost) return a.cost < b.cost;
  return a.latency_ps != b.latency_ps ? a.latency_ps < b.latency_ps : a.index < b.index;
}
}  // namespace

nlohmann::json summary_best_json(const batched::GroupBest& b) { return {b.latency_ps, b.index}; }

nlohmann::json summary_json(const batched::SweepSummary& s, bool with_best) {
  nlohmann::json best = nlohmann::json::array(), top = nlohmann::json::array(), pareto = nlohmann::json::array(),
                 hist = nlohmann::json::array();
  if (with_best)
    for (const auto& b : s.best) best.push_back(summary_best_json(b));
  for (const auto& t : s.top) top.push_back({t.latency_ps, t.index});
  for (const auto& p : s.pareto) pareto.push_back({p.group, p.cost, p.latency_ps, p.index});
  for (std::size_t b = 0; b < s.histogram.size(); ++b)
    if (s.histogram[b] > 0) hist.push_back({b, s.histogram[b]});
  return {{"evaluated", s.evaluated}, {"valid", s.valid}, {"by_status", s.by_status},
          {"latency_checksum", static_cast<std::uint64_t>(s.latency_checksum)}, {"best", best}, {"top", top},
          {"pareto", pareto}, {"histogram", hist}, {"has_histogram", !s.histogram.empty()}};
}

batched::SweepSummary summary_from_json(const nlohmann::json& j, std::int64_t groups, int statuses,
                                        const std::string& where) {
  auto bad = [&](const std::string& what) { return InputError(where + ": shard summary: " + what); };
  batched::SweepSummary s;
  try {
    s.evaluated = j.at("evaluated").get<std::int64_t>();
    s.valid = j.at("valid").get<std::int64_t>();
    s.by_status = j.at("by_status").get<std::vector<std::int64_t>>();
    s.latency_checksum = static_cast<std::int64_t>(j.at("latency_checksum").get<std::uint64_t>());
    for (const auto& b : j.at("best")) s.best.push_back({b.at(0).get<std::int64_t>(), b.at(1).get<std::int64_t>()});
    for (const auto& t : j.at("top")) s.top.push_back({t.at(0).get<std::int64_t>(), t.at(1).get<std::int64_t>()});
    for (const auto& p : j.at("pareto"))
      s.pareto.push_back({p.at(0).get<std::int64_t>(), p.at(1).get<std::int64_t>(), p.at(2).get<std::int64_t>(),
                          p.at(3).get<std::int64_t>()});
    if (j.at("has_histogram").get<bool>()) {
      s.histogram.assign(static_cast<std::size_t>(batched::kHistBins), 0);
      for (const auto& h : j.at("histogram")) {
        const std::int64_t b = h.at(0).get<std::int64_t>();
        if (b < 0 || b >= batched::kHistBins) throw bad("a histogram bin outside 0.." + std::to_string(batched::kHistBins - 1));
        s.histogram[static_cast<std::size_t>(b)] = h.at(1).get<std::int64_t>();
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("malformed (") + e.what() + ")");
  }
  if (static_cast<std::int64_t>(s.best.size()) != groups)
    throw bad(std::to_string(s.best.size()) + " group bests for a space of " + std::to_string(groups) + " groups");
  if (static_cast<int>(s.by_status.size()) != statuses)
    throw bad(std::to_string(s.by_status.size()) + " status counts for a family of " + std::to_string(statuses));
  return s;
}

void merge_summary(batched::SweepSummary& acc, const batched::SweepSummary& s, int top_k) {
  acc.evaluated += s.evaluated;
  acc.valid += s.valid;
  if (acc.by_status.size() < s.by_status.size()) acc.by_status.resize(s.by_status.size(), 0);
  for (std::size_t i = 0; i < s.by_status.size(); ++i) acc.by_status[i] += s.by_status[i];
  acc.latency_checksum =
      static_cast<std::int64_t>(static_cast<std::uint64_t>(acc.latency_checksum) + static_cast<std::uint64_t>(s.latency_checksum));
  if (acc.best.size() < s.best.size()) acc.best.resize(s.best.size());
  for (std::size_t g = 0; g < s.best.size(); ++g) {
    const auto& b = s.best[g];
    auto& a = acc.best[g];
    if (b.index < 0) continue;
    if (a.index < 0 || b.latency_ps < a.latency_ps || (b.latency_ps == a.latency_ps && b.index < a.index)) a = b;
  }
  acc.top.insert(acc.top.end(), s.top.begin(), s.top.end());
  std::sort(acc.top.begin(), acc.top.end(), faster);
  if (static_cast<int>(acc.top.size()) > top_k) acc.top.resize(static_cast<std::size_t>(top_k));
  // The front of the union: per (group, cost) the fastest (lowest index among ties), kept
  // while the latency strictly falls as the cost grows.
  std::vector<batched::ParetoPoint> all = acc.pareto;
  all.insert(all.end(), s.pareto.begin(), s.pareto.end());
  std::sort(all.begin(), all.end(), pareto_order);
  acc.pareto.clear();
  for (const auto& p : all)
    if (acc.pareto.empty() || p.group != acc.pareto.back().group || p.latency_ps < acc.pareto.back().latency_ps)
      acc.pareto.push_back(p);
  if (!s.histogram.empty()) {
    if (acc.histogram.empty()) acc.histogram.assign(s.histogram.size(), 0);
    for (std::size_t b = 0; b < s.histogram.size(); ++b) acc.histogram[b] += s.histogram[b];
  }
}

}  // namespace kb
