#include "serve_workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>

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
// A CSV of numbers read row by row.
class RowReader {
 public:
  RowReader(const std::string& path, std::size_t fields, const char* what) : path_(path), fields_(fields), what_(what) {
    check_input_file(path);
    in_.open(path);
    if (!in_) throw InputError(path + ":1:1: (file): cannot open file");
  }
  // The next row's fields with their columns, and "FILE:LINE:" for errors; false at the end.
  bool next(std::string* at, std::vector<Cell>* cells) {
    std::string line;
    while (std::getline(in_, line)) {
      ++no_;
      if (const auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      cells->clear();
      std::size_t b = 0;
      for (const std::string& raw : split(line, ',')) {
        std::size_t lead = raw.find_first_not_of(" \t");
        std::string t = lead == std::string::npos ? "" : raw.substr(lead);
        while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.pop_back();
        cells->push_back({t, b + (lead == std::string::npos ? 0 : lead) + 1});
        b += raw.size() + 1;
      }
      double ignored = 0;
      const bool header = first_ && !real_of((*cells)[0].text, &ignored);
      first_ = false;
      if (header) continue;
      *at = path_ + ":" + std::to_string(no_) + ":";
      if (cells->size() != fields_)
        throw InputError(*at + "1: " + what_ + ": expected " + std::to_string(fields_) + " fields, got " + std::to_string(cells->size()));
      return true;
    }
    return false;
  }

 private:
  std::string path_;
  std::size_t fields_;
  const char* what_;
  std::ifstream in_;
  int no_ = 0;
  bool first_ = true;
};

template <class Row>
void read_rows(const std::string& path, std::size_t fields, const char* what, Row row) {
  RowReader rows(path, fields, what);
  std::string at;
  std::vector<Cell> cells;
  while (rows.next(&at, &cells)) row(at, cells);
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

// A trace's row, arriving at or after `previous` (ps).
Request trace_row(const std::string& at, const std::vector<Cell>& c, ps_t previous) {
  double t = 0;
  if (!real_of(c[0].text, &t) || t < 0 || t > 1e6)
    throw InputError(at + std::to_string(c[0].col) + ": timestamp: expected seconds from 0 to 10^6, got '" + c[0].text + "'");
  Request r;
  r.arrival = static_cast<ps_t>(std::llround(t * 1e12));
  if (r.arrival < previous) throw InputError(at + std::to_string(c[0].col) + ": timestamp: " + c[0].text + " s is before the row above's");
  r.input = tokens_of(at, c[1], "input"), r.output = tokens_of(at, c[2], "output");
  return r;
}

constexpr const char* kTraceFields = "timestamp,input,output";

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
  a.kind = Arrivals::Kind::trace, a.trace = text;
  ps_t previous = 0;
  read_rows(text, 3, kTraceFields, [&](const std::string& at, const std::vector<Cell>& c) {
    previous = trace_row(at, c, previous).arrival;
    ++a.trace_rows;
  });
  if (a.trace_rows == 0) throw InputError(text + ":1:1: timestamp: the trace has no request");
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

struct RequestStream::Impl {
  Impl(const Arrivals& a, const Lengths& i, const Lengths& o, const std::vector<std::pair<std::int64_t, std::int64_t>>& p,
       std::int64_t count, std::uint64_t seed)
      : arrivals(a), isl(i), osl(o), pairs(p), n(count), gaps(seed), lengths(seed ^ UINT64_C(0x1E6A7D5C0FFEE123)) {
    if (a.kind == Arrivals::Kind::trace) rows = std::make_unique<RowReader>(a.trace, 3, kTraceFields);
  }
  Arrivals arrivals;
  Lengths isl, osl;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs;  // a copy: a stream may outlive its arguments
  std::int64_t n, k = 0;
  Uniform gaps, lengths;
  double t = 0;
  ps_t previous = 0;
  std::unique_ptr<RowReader> rows;
  std::string at;
  std::vector<Cell> cells;
};

RequestStream::RequestStream(const Arrivals& arrivals, const Lengths& isl, const Lengths& osl,
                             const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, std::int64_t n, std::uint64_t seed)
    : impl_(std::make_unique<Impl>(arrivals, isl, osl, pairs, n, seed)) {}
RequestStream::~RequestStream() = default;

bool RequestStream::next(Request* out) {
  Impl& m = *impl_;
  if (m.k >= m.n) return false;
  if (m.rows) {
    if (!m.rows->next(&m.at, &m.cells)) return false;
    *out = trace_row(m.at, m.cells, m.previous);
    m.previous = out->arrival, ++m.k;
    return true;
  }
  const Arrivals& a = m.arrivals;
  const double shape = 1.0 / (a.cv * a.cv);  // gamma's shape; its mean gap shape theta = 1 / rate
  if (a.kind == Arrivals::Kind::poisson) m.t += -std::log(m.gaps()) / a.rate;
  else if (a.kind == Arrivals::Kind::gamma) m.t += m.gaps.gamma(shape) / (shape * a.rate);
  if (m.t > 1e6)  // a trace's own limit: beyond it, picoseconds near int64's end
    throw InputError("--arrivals " + std::string(a.kind == Arrivals::Kind::poisson ? "poisson" : "gamma") + " with --requests " +
                     std::to_string(m.n) + ": request " + std::to_string(m.k) + " would arrive after 10^6 s; a higher rate or fewer requests");
  Request r;
  r.arrival = static_cast<ps_t>(std::llround(m.t * 1e12));
  if (!m.pairs.empty()) {
    const auto& p = m.pairs[std::min(m.pairs.size() - 1, static_cast<std::size_t>(m.lengths() * static_cast<double>(m.pairs.size())))];
    r.input = p.first, r.output = p.second;
  } else {
    r.input = draw_length(m.isl, m.lengths), r.output = draw_length(m.osl, m.lengths);
  }
  *out = r;
  ++m.k;
  return true;
}

std::vector<Request> make_requests(const Arrivals& arrivals, const Lengths& isl, const Lengths& osl,
                                   const std::vector<std::pair<std::int64_t, std::int64_t>>& pairs, std::int64_t n,
                                   std::uint64_t seed) {
  RequestStream stream(arrivals, isl, osl, pairs, n, seed);
  std::vector<Request> out;
  Request r;
  while (stream.next(&r)) out.push_back(r);
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

void Quantiles::bin(double x) {
  std::int64_t key = std::numeric_limits<std::int64_t>::min();  // 0
  if (x > 0) {
    int e = 0;
    const double m = std::frexp(x, &e);  // in [0.5, 1)
    key = static_cast<std::int64_t>(e) * (INT64_C(1) << kBinBits) + static_cast<std::int64_t>(std::ldexp(m - 0.5, kBinBits + 1));
  }
  ++bins_[key];
}

void Quantiles::add(double x) {
  if (!(x >= 0) || !std::isfinite(x)) throw InternalError("serve: a latency of " + std::to_string(x) + " s", __FILE__, __LINE__);
  min_ = n_ == 0 ? x : std::min(min_, x), max_ = n_ == 0 ? x : std::max(max_, x);
  sum_ += x, ++n_;
  if (values_.size() < kExactValues && bins_.empty()) {
    values_.push_back(x);
    return;
  }
  for (double v : values_) bin(v);  // from here on, a histogram
  values_.clear(), values_.shrink_to_fit();
  bin(x);
}

Stats Quantiles::stats() const {
  if (exact()) return stats_of(values_);
  Stats s;
  s.count = n_, s.mean = sum_ / static_cast<double>(n_);
  auto rank = [&](double p) {  // the bin of the nearest rank, at its middle, within the extremes
    const std::int64_t r = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(p / 100.0 * static_cast<double>(n_))));
    std::int64_t seen = 0;
    for (const auto& [key, count] : bins_) {
      seen += count;
      if (seen < r) continue;
      if (key == std::numeric_limits<std::int64_t>::min()) return 0.0;
      const std::int64_t e = key >= 0 ? key >> kBinBits : -((-key + (INT64_C(1) << kBinBits) - 1) >> kBinBits);
      const double sub = static_cast<double>(key - e * (INT64_C(1) << kBinBits));
      const double mid = std::ldexp(0.5 + (sub + 0.5) * std::ldexp(1.0, -(kBinBits + 1)), static_cast<int>(e));
      return std::min(max_, std::max(min_, mid));
    }
    return max_;
  };
  s.p50 = rank(50), s.p90 = rank(90), s.p99 = rank(99);
  return s;
}

std::size_t Quantiles::bytes() const { return values_.capacity() * sizeof(double) + bins_.size() * 48; }

void ReportBuilder::served(std::int64_t, const Served& s) {
  const double ft = static_cast<double>(s.first_token - s.arrival) / 1e12;
  const double per = s.output > 1 ? static_cast<double>(s.finish - s.first_token) / 1e12 / static_cast<double>(s.output - 1) : 0.0;
  ttft_.add(ft), e2e_.add(static_cast<double>(s.finish - s.arrival) / 1e12);
  if (s.output > 1) tpot_.add(per);
  met_slo_ += ft <= slo_ttft_ && per <= slo_tpot_;
  first_arrival = first_arrival < 0 ? s.arrival : std::min(first_arrival, s.arrival);
  ++requests, output_tokens += s.output, all_tokens += s.input + s.output;
}

void ReportBuilder::gap(ps_t itl) { itl_.add(static_cast<double>(itl) / 1e12); }

void ReportBuilder::step(const Step& s) { peak_kv_blocks_ = std::max(peak_kv_blocks_, s.kv_blocks); }

Report ReportBuilder::report(const Totals& totals) const {
  Report r;
  r.ttft = ttft_.stats(), r.tpot = tpot_.stats(), r.itl = itl_.stats(), r.e2e = e2e_.stats();
  r.met_slo = met_slo_;
  r.seconds = requests == 0 ? 0.0 : static_cast<double>(totals.end - first_arrival) / 1e12;
  if (r.seconds > 0) {
    const double n = static_cast<double>(requests);
    r.requests_per_s = n / r.seconds, r.goodput_per_s = static_cast<double>(r.met_slo) / r.seconds;
    r.output_tokens_per_s = static_cast<double>(output_tokens) / r.seconds, r.total_tokens_per_s = static_cast<double>(all_tokens) / r.seconds;
  }
  r.preemptions = totals.preemptions, r.peak_kv_blocks = peak_kv_blocks_;
  return r;
}

Report report_of(const ServeRun& run, double slo_ttft_s, double slo_tpot_s) {
  ReportBuilder b(slo_ttft_s, slo_tpot_s);
  for (std::size_t i = 0; i < run.requests.size(); ++i) b.served(static_cast<std::int64_t>(i), run.requests[i]);
  for (ps_t g : run.itl) b.gap(g);
  for (const Step& s : run.steps) b.step(s);
  Totals t;
  t.end = run.end, t.preemptions = run.preemptions;
  return b.report(t);
}

}  // namespace kb::serve
