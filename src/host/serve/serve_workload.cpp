#include "serve_workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "../common/error.h"
#include "../common/output.h"
#include "../runtime/numeric.h"

namespace kb::serve {

namespace {

// A seeded stream of uniforms in (0, 1) (splitmix64: 53 bits each, the middle of their step).
class Uniform {
 public:
  explicit Uniform(std::uint64_t seed) : s_{seed * UINT64_C(0x9E3779B97F4A7C15) + UINT64_C(0x632BE59BD9B4E019)} {}
  double operator()() { return (static_cast<double>(s_.next() >> 11) + 0.5) * 0x1p-53; }
  double normal() {  // Box-Muller, one of the pair
    const double u = (*this)(), v = (*this)();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
  // Gamma of shape k, scale 1 (Marsaglia and Tsang 2000; k < 1 boosted by U^(1/k)).
  double gamma(double k) {
    if (k < 1) return gamma(k + 1) * std::pow((*this)(), 1.0 / k);
    const double d = k - 1.0 / 3, c = 1.0 / std::sqrt(9 * d);
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = (*this)();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

 private:
  SplitMix64 s_;
};

bool real_of(const std::string& t, double* v) {
  char* end = nullptr;
  *v = std::strtod(t.c_str(), &end);
  return !t.empty() && end != t.c_str() && *end == '\0' && std::isfinite(*v);
}
bool int_of(const std::string& t, std::int64_t* v) {
  char* end = nullptr;
  const long long x = std::strtoll(t.c_str(), &end, 10);
  *v = x;
  return !t.empty() && end != t.c_str() && *end == '\0';
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (;;) {
    const std::size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

// Rows of a CSV of numbers: each row's fields with their columns (from 1); '#' comments, blank
// lines and a first row that is not numbers (a header) left out.
struct Cell {
  std::string text;
  std::size_t col;
};
template <class Row>
void read_rows(const std::string& path, std::size_t fields, const char* what, Row row) {
  check_input_file(path);
  std::ifstream in(path);
  if (!in) throw InputError(path + ":1:1: (file): cannot open file");
  std::string line;
  bool first = true;
  for (int no = 1; std::getline(in, line); ++no) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<Cell> cells;
    std::size_t b = 0;
    for (const std::string& raw : split(line, ',')) {
      std::size_t lead = raw.find_first_not_of(" \t");
      std::string t = lead == std::string::npos ? "" : raw.substr(lead);
      while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.pop_back();
      cells.push_back({t, b + (lead == std::string::npos ? 0 : lead) + 1});
      b += raw.size() + 1;
    }
    double ignored = 0;
    const bool header = first && !real_of(cells[0].text, &ignored);
    first = false;
    if (header) continue;
    const std::string at = path + ":" + std::to_string(no) + ":";
    if (cells.size() != fields)
      throw InputError(at + "1: " + what + ": expected " + std::to_string(fields) + " fields, got " + std::to_string(cells.size()));
    row(at, cells);
  }
}

std::int64_t tokens_of(const std::string& at, const Cell& c, const char* field) {
  std::int64_t v = 0;
  if (!int_of(c.text, &v) || v < 1 || v > (INT64_C(1) << 24))
    throw InputError(at + std::to_string(c.col) + ": " + field + ": expected an integer from 1 to 2^24 tokens, got '" + c.text + "'");
  return v;
}

std::int64_t draw_length(const Lengths& l, Uniform& u) {
  switch (l.kind) {
    case Lengths::Kind::fixed: return l.a;
    case Lengths::Kind::uniform: return l.a + std::min<std::int64_t>(l.b - l.a, static_cast<std::int64_t>(u() * static_cast<double>(l.b - l.a + 1)));
    case Lengths::Kind::lognormal: {
      const double mu = std::log(l.mean) - l.sigma * l.sigma / 2;
      // At most 2^24 tokens, as every other length (a far tail draw is clamped, not an error).
      const double x = std::exp(mu + l.sigma * u.normal());
      return x >= 16777216.0 ? INT64_C(16777216) : std::max<std::int64_t>(1, std::llround(x));
    }
  }
  return 1;
}

}  // namespace

Arrivals parse_arrivals(const std::string& text, const std::string& flag) {
  const std::vector<std::string> p = split(text, ':');
  Arrivals a;
  auto bad = [&](const std::string& why) { return InputError(flag + " " + (text.empty() ? "''" : text) + ": " + why); };
  double x = 0;
  if (p[0] == "poisson" || p[0] == "gamma") {
    a.kind = p[0] == "poisson" ? Arrivals::Kind::poisson : Arrivals::Kind::gamma;
    const std::size_t want = a.kind == Arrivals::Kind::poisson ? 2 : 3;
    if (p.size() != want) throw bad(a.kind == Arrivals::Kind::poisson ? "poisson:RATE" : "gamma:RATE:CV");
    if (!real_of(p[1], &x) || x <= 0 || x > 1e9) throw bad("RATE: requests a second, above 0 and at most 10^9");
    a.rate = x;
    if (want == 3) {
      if (!real_of(p[2], &x) || x <= 0 || x > 100) throw bad("CV: above 0 and at most 100");
      a.cv = x;
    }
    return a;
  }
  if (p[0] == "closed") {
    std::int64_t n = 0;
    if (p.size() != 2 || !int_of(p[1], &n) || n < 1 || n > (INT64_C(1) << 20)) throw bad("closed:CONCURRENCY, 1 to 2^20 clients");
    a.kind = Arrivals::Kind::closed, a.clients = n;
    return a;
  }
  if (text.size() < 4 || text.substr(text.size() - 4) != ".csv")
    throw bad("poisson:RATE, gamma:RATE:CV, closed:CONCURRENCY or a trace FILE.csv");
  a.kind = Arrivals::Kind::trace;
  read_rows(text, 3, "timestamp,input,output", [&](const std::string& at, const std::vector<Cell>& c) {
    double t = 0;
    if (!real_of(c[0].text, &t) || t < 0 || t > 1e6)
      throw InputError(at + std::to_string(c[0].col) + ": timestamp: expected seconds from 0 to 10^6, got '" + c[0].text + "'");
    Request r;
    r.arrival = static_cast<ps_t>(std::llround(t * 1e12));
    if (!a.trace.empty() && r.arrival < a.trace.back().arrival)
      throw InputError(at + std::to_string(c[0].col) + ": timestamp: " + c[0].text + " s is before the row above's");
    r.input = tokens_of(at, c[1], "input"), r.output = tokens_of(at, c[2], "output");
    a.trace.push_back(r);
  });
  if (a.trace.empty()) throw InputError(text + ":1:1: timestamp: the trace has no request");
  return a;
}

double parse_real_flag(const std::string& flag, const std::string& text, double lo, double hi, const char* unit) {
  double v = 0;
  if (!real_of(text, &v) || v < lo || v > hi) {
    char range[96];
    std::snprintf(range, sizeof range, "expected %s from %g to %g", unit, lo, hi);
    throw InputError(flag + " " + (text.empty() ? "''" : text) + ": " + range);
  }
  return v;
}

Lengths parse_lengths(const std::string& text, const std::string& flag) {
  const std::vector<std::string> p = split(text, ':');
  auto bad = [&](const std::string& why) { return InputError(flag + " " + (text.empty() ? "''" : text) + ": " + why); };
  Lengths l;
  std::int64_t n = 0, m = 0;
  const std::int64_t most = INT64_C(1) << 24;
  if (p.size() == 1) {
    if (!int_of(p[0], &n) || n < 1 || n > most) throw bad("N tokens (1 to 2^24), uniform:A:B or lognormal:MEAN:SIGMA");
    l.a = l.b = n;
    return l;
  }
  if (p[0] == "uniform") {
    if (p.size() != 3 || !int_of(p[1], &n) || !int_of(p[2], &m) || n < 1 || m < n || m > most)
      throw bad("uniform:A:B with 1 <= A <= B <= 2^24");
    l.kind = Lengths::Kind::uniform, l.a = n, l.b = m;
    return l;
  }
  double mean = 0, sigma = 0;
  if (p[0] != "lognormal" || p.size() != 3 || !real_of(p[1], &mean) || !real_of(p[2], &sigma) || mean < 1 || mean > 1e6 ||
      sigma < 0 || sigma > 4)
    throw bad("N, uniform:A:B or lognormal:MEAN:SIGMA (1 <= MEAN <= 10^6 tokens, 0 <= SIGMA <= 4)");
  l.kind = Lengths::Kind::lognormal, l.mean = mean, l.sigma = sigma;
  return l;
}

std::vector<std::pair<std::int64_t, std::int64_t>> read_lengths(const std::string& path) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  read_rows(path, 2, "input,output", [&](const std::string& at, const std::vector<Cell>& c) {
    out.emplace_back(tokens_of(at, c[0], "input"), tokens_of(at, c[1], "output"));
  });
  if (out.empty()) throw InputError(path + ":1:1: input: the file has no conversation");
  return out;
}

std::vector<Request> make_requests(const Arrivals& arrivals, const Lengths& isl, const Lengths& osl,
                                   const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, std::int64_t n,
                                   std::uint64_t seed) {
  if (arrivals.kind == Arrivals::Kind::trace) {
    const std::size_t k = std::min(arrivals.trace.size(), static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
    return std::vector<Request>(arrivals.trace.begin(), arrivals.trace.begin() + static_cast<std::ptrdiff_t>(k));
  }
  Uniform gaps(seed), lengths(seed ^ UINT64_C(0x1E6A7D5C0FFEE123));
  std::vector<Request> out(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  const double k = 1.0 / (arrivals.cv * arrivals.cv);  // gamma's shape; its mean gap k theta = 1 / rate
  double t = 0;
  for (Request& r : out) {
    if (arrivals.kind == Arrivals::Kind::poisson) t += -std::log(gaps()) / arrivals.rate;
    else if (arrivals.kind == Arrivals::Kind::gamma) t += gaps.gamma(k) / (k * arrivals.rate);
    if (t > 1e6)  // a trace's own limit: beyond it, picoseconds near int64's end
      throw InputError("--arrivals " + std::string(arrivals.kind == Arrivals::Kind::poisson ? "poisson" : "gamma") +
                       " with --requests " + std::to_string(n) + ": request " + std::to_string(&r - out.data()) +
                       " would arrive after 10^6 s; a higher rate or fewer requests");
    r.arrival = static_cast<ps_t>(std::llround(t * 1e12));
    if (!pairs.empty()) {
      const auto& p = pairs[std::min(pairs.size() - 1, static_cast<std::size_t>(lengths() * static_cast<double>(pairs.size())))];
      r.input = p.first, r.output = p.second;
    } else {
      r.input = draw_length(isl, lengths), r.output = draw_length(osl, lengths);
    }
  }
  return out;
}

Stats stats_of(std::vector<double> v) {
  Stats s;
  s.count = static_cast<std::int64_t>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  auto rank = [&](double p) {  // nearest rank: the ceil(p n / 100)-th smallest
    const std::size_t r = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::min(v.size(), std::max<std::size_t>(r, 1)) - 1];
  };
  s.p50 = rank(50), s.p90 = rank(90), s.p99 = rank(99);
  return s;
}

Report report_of(const ServeRun& run, double slo_ttft_s, double slo_tpot_s) {
  Report r;
  std::vector<double> ttft, tpot, itl, e2e;
  ps_t first = -1;
  std::int64_t out_tokens = 0, all_tokens = 0;
  for (const Served& s : run.requests) {
    const double ft = static_cast<double>(s.first_token - s.arrival) / 1e12;
    const double per = s.output > 1 ? static_cast<double>(s.finish - s.first_token) / 1e12 / static_cast<double>(s.output - 1) : 0.0;
    ttft.push_back(ft), e2e.push_back(static_cast<double>(s.finish - s.arrival) / 1e12);
    if (s.output > 1) tpot.push_back(per);
    r.met_slo += ft <= slo_ttft_s && per <= slo_tpot_s;
    first = first < 0 ? s.arrival : std::min(first, s.arrival);
    out_tokens += s.output, all_tokens += s.input + s.output;
  }
  for (ps_t g : run.itl) itl.push_back(static_cast<double>(g) / 1e12);
  r.ttft = stats_of(ttft), r.tpot = stats_of(tpot), r.itl = stats_of(itl), r.e2e = stats_of(e2e);
  r.seconds = run.requests.empty() ? 0.0 : static_cast<double>(run.end - first) / 1e12;
  if (r.seconds > 0) {
    const double n = static_cast<double>(run.requests.size());
    r.requests_per_s = n / r.seconds, r.goodput_per_s = static_cast<double>(r.met_slo) / r.seconds;
    r.output_tokens_per_s = static_cast<double>(out_tokens) / r.seconds, r.total_tokens_per_s = static_cast<double>(all_tokens) / r.seconds;
  }
  r.preemptions = run.preemptions;
  for (const Step& s : run.steps) r.peak_kv_blocks = std::max(r.peak_kv_blocks, s.kv_blocks);
  return r;
}

}  // namespace kb::serve
