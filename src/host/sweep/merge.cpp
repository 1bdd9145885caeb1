#include "merge.h"

#include <cstdio>

#include <algorithm>
#include <map>
#include <vector>

#include "../common/error.h"
#include "../topology/fields.h"
#include "../../device/backends/backends.h"

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

std::string shard_digest(const nlohmann::json& request, std::int64_t index, std::int64_t count,
                         const batched::SweepSummary& s) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a, 64 bits
  auto bytes = [&](const void* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 1099511628211ULL;
  };
  auto num = [&](std::int64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(v) >> (8 * i));
    bytes(b, 8);
  };
  const std::string rq = request.dump();
  bytes(rq.data(), rq.size());
  for (std::int64_t v : {index, count, s.evaluated, s.valid, s.latency_checksum}) num(v);
  num(static_cast<std::int64_t>(s.by_status.size()));
  for (std::int64_t v : s.by_status) num(v);
  num(static_cast<std::int64_t>(s.best.size()));
  for (const batched::GroupBest& b : s.best) num(b.latency_ps), num(b.index);
  num(static_cast<std::int64_t>(s.top.size()));
  for (const batched::Ranked& r : s.top) num(r.latency_ps), num(r.index);
  num(static_cast<std::int64_t>(s.pareto.size()));
  for (const batched::ParetoPoint& p : s.pareto) num(p.group), num(p.cost), num(p.latency_ps), num(p.index);
  num(static_cast<std::int64_t>(s.histogram.size()));
  for (std::int64_t v : s.histogram) num(v);
  if (s.deferred > 0 || s.on_host > 0) num(s.deferred), num(s.on_host);  // absent: an older shard's digest holds
  char out[32];
  std::snprintf(out, sizeof out, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return out;
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
  nlohmann::json j = {{"evaluated", s.evaluated}, {"valid", s.valid}, {"by_status", s.by_status},
                      {"latency_checksum", static_cast<std::uint64_t>(s.latency_checksum)}, {"best", best}, {"top", top},
                      {"pareto", pareto}, {"histogram", hist}, {"has_histogram", !s.histogram.empty()}};
  // Only where some config took a later stage: a summary without them reads (and digests) as before.
  if (s.deferred > 0) j["deferred"] = s.deferred;
  if (s.on_host > 0) j["on_host"] = s.on_host;
  return j;
}

namespace {
// Strict readers: a field of the wrong type, a float where an integer belongs, or an
// integer outside int64 is an InputError naming the field.
struct Reader {
  std::string where;
  InputError bad(const std::string& field, const std::string& what) const {
    return InputError(where + ": " + field + ": " + what);
  }
  const nlohmann::json& at(const nlohmann::json& j, const char* key, const std::string& field) const {
    if (!j.is_object()) throw bad(field, "expected an object");
    const auto it = j.find(key);
    if (it == j.end()) throw bad(field + "." + key, "missing");
    return *it;
  }
  std::int64_t integer(const nlohmann::json& v, const std::string& field, std::int64_t lo, std::int64_t hi) const {
    if (!v.is_number_integer()) throw bad(field, "expected an integer, got " + std::string(v.type_name()));
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw bad(field, "out of range");
    const std::int64_t x = v.get<std::int64_t>();
    if (x < lo || x > hi) throw bad(field, std::to_string(x) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    return x;
  }
  const nlohmann::json& array(const nlohmann::json& v, const std::string& field, std::size_t width = 0) const {
    if (!v.is_array()) throw bad(field, "expected an array, got " + std::string(v.type_name()));
    if (width && v.size() != width) throw bad(field, "expected " + std::to_string(width) + " elements, got " + std::to_string(v.size()));
    return v;
  }
};
}  // namespace

batched::SweepSummary summary_from_json(const nlohmann::json& j, std::int64_t groups, int statuses,
                                        const std::string& where) {
  const Reader r{where};
  const std::string f = "shard.summary";
  batched::SweepSummary s;
  r.array(r.at(j, "by_status", f), f + ".by_status", static_cast<std::size_t>(statuses));
  s.evaluated = r.integer(r.at(j, "evaluated", f), f + ".evaluated", 0, INT64_MAX);
  s.valid = r.integer(r.at(j, "valid", f), f + ".valid", 0, s.evaluated);
  std::int64_t total = 0;
  for (std::size_t k = 0; k < j["by_status"].size(); ++k) {
    s.by_status.push_back(r.integer(j["by_status"][k], f + ".by_status[" + std::to_string(k) + "]", 0, s.evaluated));
    total += s.by_status.back();
  }
  if (total != s.evaluated) throw r.bad(f + ".by_status", "counts add up to " + std::to_string(total) + ", not the " +
                                                             std::to_string(s.evaluated) + " configs evaluated");
  if (s.by_status[0] != s.valid) throw r.bad(f + ".valid", "differs from by_status[0]");
  if (j.contains("deferred")) s.deferred = r.integer(j["deferred"], f + ".deferred", 1, s.evaluated);
  if (j.contains("on_host")) s.on_host = r.integer(j["on_host"], f + ".on_host", 1, s.deferred);
  const nlohmann::json& sum = r.at(j, "latency_checksum", f);
  if (!sum.is_number_unsigned()) throw r.bad(f + ".latency_checksum", "expected an integer from 0 to 2^64-1");
  s.latency_checksum = static_cast<std::int64_t>(sum.get<std::uint64_t>());
  const nlohmann::json& best = r.array(r.at(j, "best", f), f + ".best");
  if (static_cast<std::int64_t>(best.size()) != groups)
    throw r.bad(f + ".best", std::to_string(best.size()) + " group bests for a space of " + std::to_string(groups) + " groups");
  for (std::size_t g = 0; g < best.size(); ++g) {
    const std::string bf = f + ".best[" + std::to_string(g) + "]";
    r.array(best[g], bf, 2);
    s.best.push_back({r.integer(best[g][0], bf + "[0]", -1, INT64_MAX), r.integer(best[g][1], bf + "[1]", -1, INT64_MAX)});
  }
  const nlohmann::json& top = r.array(r.at(j, "top", f), f + ".top");
  for (std::size_t k = 0; k < top.size(); ++k) {
    const std::string tf = f + ".top[" + std::to_string(k) + "]";
    r.array(top[k], tf, 2);
    s.top.push_back({r.integer(top[k][0], tf + "[0]", 0, INT64_MAX), r.integer(top[k][1], tf + "[1]", 0, INT64_MAX)});
  }
  const nlohmann::json& pareto = r.array(r.at(j, "pareto", f), f + ".pareto");
  for (std::size_t k = 0; k < pareto.size(); ++k) {
    const std::string pf = f + ".pareto[" + std::to_string(k) + "]";
    r.array(pareto[k], pf, 4);
    s.pareto.push_back({r.integer(pareto[k][0], pf + "[0]", 0, groups - 1), r.integer(pareto[k][1], pf + "[1]", INT64_MIN, INT64_MAX),
                        r.integer(pareto[k][2], pf + "[2]", 0, INT64_MAX), r.integer(pareto[k][3], pf + "[3]", 0, INT64_MAX)});
  }
  const nlohmann::json& has = r.at(j, "has_histogram", f);
  if (!has.is_boolean()) throw r.bad(f + ".has_histogram", "expected true or false");
  const nlohmann::json& hist = r.array(r.at(j, "histogram", f), f + ".histogram");
  if (has.get<bool>()) {
    s.histogram.assign(static_cast<std::size_t>(batched::kHistBins), 0);
    std::int64_t counted = 0;
    for (std::size_t k = 0; k < hist.size(); ++k) {
      const std::string hf = f + ".histogram[" + std::to_string(k) + "]";
      r.array(hist[k], hf, 2);
      const std::int64_t b = r.integer(hist[k][0], hf + "[0]", 0, batched::kHistBins - 1);
      if (s.histogram[static_cast<std::size_t>(b)] != 0) throw r.bad(hf, "bin " + std::to_string(b) + " appears twice");
      s.histogram[static_cast<std::size_t>(b)] = r.integer(hist[k][1], hf + "[1]", 1, s.valid);
      counted += s.histogram[static_cast<std::size_t>(b)];
    }
    if (counted != s.valid)
      throw r.bad(f + ".histogram", "counts add up to " + std::to_string(counted) + ", not the " + std::to_string(s.valid) + " valid configs");
  } else if (!hist.empty()) {
    throw r.bad(f + ".histogram", "bins given while has_histogram is false");
  }
  return s;
}

namespace {

// The histogram holds no config faster than the fastest one a summary reports, and a count
// in the bin of each reported config.
void check_histogram(const batched::SweepSummary& s, const Reader& r, const std::string& f) {
  if (!s.histogram.empty()) {
    ps_t fastest = INT64_MAX;
    std::map<std::int32_t, std::int64_t> reported;  // bin -> distinct reported configs in it
    std::vector<std::int64_t> seen;
    auto note = [&](ps_t latency, std::int64_t index) {
      fastest = std::min(fastest, latency);
      if (std::find(seen.begin(), seen.end(), index) == seen.end()) seen.push_back(index), ++reported[batched::hist_bin(latency)];
    };
    for (const batched::GroupBest& b : s.best)
      if (b.index >= 0) note(b.latency_ps, b.index);
    for (const batched::Ranked& t : s.top) note(t.latency_ps, t.index);
    for (const auto& [bin, n] : reported)
      if (s.histogram[static_cast<std::size_t>(bin)] < n)
        throw r.bad(f + ".histogram", "bin " + std::to_string(bin) + " counts fewer configs than the summary names in it");
    if (fastest != INT64_MAX)
      for (std::int32_t b = 0; b < batched::hist_bin(fastest); ++b)
        if (s.histogram[static_cast<std::size_t>(b)] != 0)
          throw r.bad(f + ".histogram", "bin " + std::to_string(b) + " counts configs faster than the fastest one");
  }
}

}  // namespace

void check_shard_summary(const batched::SweepSummary& s, batched::Family family, const batched::Space& space,
                         const batched::Reductions& red, std::int64_t shard_i, std::int64_t shard_n,
                         const std::string& where) {
  const Reader r{where};
  const std::string f = "shard.summary";
  const std::int64_t size = space.size(), groups = space.groups(), stride = size / groups;
  const std::int64_t block = shard_block(size, shard_n);
  const std::int64_t want = shard_configs(size, shard_i, shard_n);
  if (s.evaluated != want)
    throw r.bad(f + ".evaluated", std::to_string(s.evaluated) + " configs; shard " + std::to_string(shard_i) + "/" +
                                      std::to_string(shard_n) + "'s blocks hold " + std::to_string(want));
  if (red.histogram != !s.histogram.empty())
    throw r.bad(f + ".has_histogram", red.histogram ? "the request asks for a histogram" : "the request asks for no histogram");
  if (s.valid == 0 && s.latency_checksum != 0) throw r.bad(f + ".latency_checksum", "not 0 with no valid config");
  // Each config the summary names is one of this shard's, re-derived from its index: its
  // status, latency and cost must be the ones reported.
  const batched::SpaceDecoder decode(space);
  std::vector<unsigned char> cfg(batched::config_size(family));
  auto figures = [&](std::int64_t i, const std::string& field) {
    if (i < 0 || i >= size) throw r.bad(field, "index " + std::to_string(i) + " is outside the space's 0.." + std::to_string(size - 1));
    if ((i / block) % shard_n != shard_i)
      throw r.bad(field, "index " + std::to_string(i) + " is not in shard " + std::to_string(shard_i) + "/" + std::to_string(shard_n));
    decode(i, cfg.data());
    const batched::HostFigures h = batched::figures_host(family, cfg.data(), red.pareto);
    if (h.status != 0) throw r.bad(field, "config " + std::to_string(i) + " is not a valid config");
    return h;
  };
  std::int64_t with_best = 0;
  for (std::size_t g = 0; g < s.best.size(); ++g) {
    const batched::GroupBest& b = s.best[g];
    const std::string bf = f + ".best[" + std::to_string(g) + "]";
    if (b.index < 0 || b.latency_ps < 0) {
      if (b.index != -1 || b.latency_ps != -1) throw r.bad(bf, "a group without a best is [-1, -1]");
      continue;
    }
    ++with_best;
    if (b.index / stride != static_cast<std::int64_t>(g)) throw r.bad(bf, "index " + std::to_string(b.index) + " is not in group " + std::to_string(g));
    if (figures(b.index, bf).latency_ps != b.latency_ps) throw r.bad(bf, "the latency is not config " + std::to_string(b.index) + "'s");
  }
  if (with_best > s.valid) throw r.bad(f + ".best", "more groups with a best than valid configs");
  const std::size_t top_len = static_cast<std::size_t>(std::min<std::int64_t>(red.top_k, s.valid));
  if (s.top.size() != top_len)
    throw r.bad(f + ".top", std::to_string(s.top.size()) + " entries; the shard's top " + std::to_string(red.top_k) + " has " + std::to_string(top_len));
  for (std::size_t k = 0; k < s.top.size(); ++k) {
    const std::string tf = f + ".top[" + std::to_string(k) + "]";
    if (k > 0 && !faster(s.top[k - 1], s.top[k])) throw r.bad(tf, "not after the entry before it in (latency, index) order");
    if (figures(s.top[k].index, tf).latency_ps != s.top[k].latency_ps)
      throw r.bad(tf, "the latency is not config " + std::to_string(s.top[k].index) + "'s");
  }
  check_histogram(s, r, f);
  if (red.pareto == 0 && !s.pareto.empty()) throw r.bad(f + ".pareto", "a front where the request asks for none");
  for (std::size_t k = 0; k < s.pareto.size(); ++k) {
    const batched::ParetoPoint& p = s.pareto[k];
    const std::string pf = f + ".pareto[" + std::to_string(k) + "]";
    if (k > 0) {
      const batched::ParetoPoint& q = s.pareto[k - 1];
      if (q.group > p.group || (q.group == p.group && !(q.cost < p.cost && q.latency_ps > p.latency_ps)))
        throw r.bad(pf, "not on a front: by group, cost ascending and latency descending");
    }
    if (p.index / stride != p.group) throw r.bad(pf, "index " + std::to_string(p.index) + " is not in group " + std::to_string(p.group));
    const batched::HostFigures h = figures(p.index, pf);
    if (h.latency_ps != p.latency_ps || h.cost != p.cost)
      throw r.bad(pf, "the cost or latency is not config " + std::to_string(p.index) + "'s");
  }
}

void merge_summary(batched::SweepSummary& acc, const batched::SweepSummary& s, int top_k) {
  acc.evaluated += s.evaluated;
  acc.valid += s.valid;
  acc.deferred += s.deferred, acc.on_host += s.on_host;
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
