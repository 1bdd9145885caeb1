#include "sweep.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "device/common/sampling.h"
#include "host/api/mpi.h"
#include "host/common/error.h"
#include "host/common/output.h"
#include "host/sweep/merge.h"
#include "host/sweep/space.h"
#include "host/sweep/space_file.h"
#include "host/topology/fields.h"

namespace kb::api {

namespace {

// An integer option by the one rule (decimal digits, in lo..hi), or `fallback` when not given.
std::int64_t int_option(const char* flag, const std::optional<std::string>& text, std::int64_t lo, std::int64_t hi,
                        std::int64_t fallback) {
  if (!text) return fallback;
  std::int64_t v = 0;
  std::string why;
  if (!parse_int_in(*text, lo, hi, &v, &why))
    throw InputError(std::string(flag) + " " + (text->empty() ? std::string("''") : *text) + ": " + why);
  return v;
}

// A number of hours or seconds: decimal digits with an optional fraction (no sign, exponent,
// nan or inf), or `fallback` when not given.
double decimal_option(const char* flag, const std::optional<std::string>& given, double fallback) {
  if (!given) return fallback;
  const std::string& text = *given;
  std::size_t i = 0, digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  }
  if (text.empty() || digits == 0 || i != text.size() || text.size() > 32)
    throw InputError(std::string(flag) + " " + (text.empty() ? std::string("''") : text) +
                     ": expected a number >= 0 in decimal digits, e.g. 2 or 0.5");
  return std::strtod(text.c_str(), nullptr);
}

// A space file (--space) sets the axes, zips and group; its objectives and reductions replace
// the defaults where the request is silent, and its topology is used unless --topology is
// given. Options that would set the space too are refused.
std::optional<SpaceFile> apply_space_file(const Family& f, SweepRequest& r) {
  if (r.space.empty()) return std::nullopt;
  std::optional<SpaceFile> file = load_space_file(r.space);
  if (!f.named(file->family))
    throw InputError(r.space + ": family " + file->family + ": the file is a " + file->family + " space, not " + f.name);
  std::string flag;
  for (const AxisDesc& ax : f.axes)
    if (r.axes.count(ax.name)) flag = ax.flag;
  for (const HwAxisDesc& h : f.hw_axes)
    if (r.hw_axes.count(h.name)) flag = h.flag;
  if (!r.hw.empty()) flag = "--hw";
  if (!r.zips.empty()) flag = "--zip";
  if (r.group) flag = "--group";
  if (!flag.empty()) throw InputError("--space " + r.space + ": the file sets the space; " + flag + " cannot be given too");
  // The file's reductions apply where the request is silent (docs/spaces.md).
  if (file->pareto && !r.pareto) r.pareto = *file->pareto;
  if (file->histogram && !r.no_histogram_given) r.no_histogram = !*file->histogram;
  if (r.topology.path.empty() && !file->topology.empty()) r.topology.path = file->topology;
  return file;
}

// The space as asked: the family's axes and hardware axes given, --hw lists, zips and the
// group, or the space file's; a field both swept and set (--set) is refused.
SpaceRequest space_of(const Family& f, const SweepRequest& r, const std::optional<SpaceFile>& file) {
  SpaceRequest req;
  for (const AxisDesc& ax : f.axes) {
    const auto given = r.axes.find(ax.name);
    if (given != r.axes.end()) req.axes[ax.name] = given->second;
  }
  for (const PresetDesc& p : f.presets) {
    const auto given = r.presets.find(p.flag);
    if (given == r.presets.end()) continue;
    if (file) throw InputError("--space " + r.space + ": the file sets the space; " + p.flag + " cannot be given too");
    const std::string& v = given->second;
    if (p.sets_fields()) req.presets[p.flag] = v;  // the fields it sets, or that follow from it (Family::prepare)
    if (p.sweeps) {  // a list: each value its own prepare step (Family::prepare_reads), standing for no axis
      p.sweeps(v);
      continue;
    }
    if (!p.apply && !p.passes_lists && v.find(',') != std::string::npos)
      throw InputError(p.flag + " " + v + ": one value a sweep (sweep the axes it stands for, or run one sweep each)");
    for (const auto& [name, value] : p.expand(v)) req.axes.emplace(name, value);  // an axis's own flag wins
  }
  for (const HwAxisDesc& h : f.hw_axes) {
    const auto given = r.hw_axes.find(h.name);
    if (given != r.hw_axes.end()) req.hw.push_back({h.flag, h.path, given->second});
  }
  for (const std::string& h : r.hw) {
    const auto eq = h.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--hw " + h + ": expected PATH=LIST, e.g. cube.hbm.bandwidth_gbps=410,819,1638");
    req.hw.push_back({"--hw", h.substr(0, eq), h.substr(eq + 1)});
  }
  req.zips = r.zips;
  req.group = r.group.value_or("");
  if (file) req = file->req;
  for (const HwList& h : req.hw) {
    const std::string setter = r.topology.setter_of(h.path);
    if (!setter.empty())
      throw InputError(h.flag + (h.flag == "--hw" ? " " + h.path + "=" : " ") + h.list + " and " + setter + " both set " + h.path +
                       ": sweep it or set it, not both");
  }
  return req;
}

// Each given value's text is not empty, and every name is the family's: the command line's
// parser meets most of these first; a request built in a program meets them here.
void check_names(const Family& f, const SweepRequest& r) {
  check_named(f, r.axes, r.hw_axes, r.presets, false);
  if (r.group && r.group->empty()) throw empty_value("--group");
  if (r.pareto && r.pareto->empty()) throw empty_value("--pareto");
}

std::string duration_text(double s) {
  char b[64];
  if (s < 120) std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s < 7200) std::snprintf(b, sizeof b, "%.0f min", s / 60);
  else std::snprintf(b, sizeof b, "%.1f h", s / 3600);
  return std::string(b);
}

// The time the sweep will take, from the rate on a sample of the space; a space whose
// estimate passes --max-hours is refused. The sample is stratified: the space is cut into 256
// equal strata and a small block is evaluated at a pseudo-random place in each, the strata
// visited in bit-reversed order (0, 128, 64, 192, ...), so that the blocks sampled at any
// moment are spread over the whole space, and sampling stops after about a second: the
// estimate (and a refusal) comes at once, however slow or mixed the space is. The sample
// fills no host cache (HostSampling): a space whose configs repeat a few structures many
// times (the allreduce model's replay) runs faster than estimated, never slower for that.
struct Estimate {
  double rate = 0, seconds = 0;  // seconds: the sweep's and the writing's
  std::int64_t sampled = 0;  // 0: the space is too small to sample
  WriteCost write;           // the per-group rows the outputs will hold
};
Estimate estimate_time(const BuiltSpace& sp, BackendKind backend, std::int64_t chunk, std::int64_t mine_configs,
                       double max_hours, const WriteCost& write) {
  const std::int64_t total_configs = sp.space.size();
  Estimate e;
  const bool cuda = backend == BackendKind::cuda;
  // Spaces this small (2^18 configs on the CPU, 2^22 on a GPU) are not sampled: they take
  // seconds at the slowest rates the models run at.
  const std::int64_t least = cuda ? INT64_C(1) << 22 : INT64_C(1) << 18, block = cuda ? INT64_C(1) << 14 : 1024;
  constexpr int kStrata = 256;
  constexpr double kBudgetSeconds = 1.0;
  if (total_configs > least) {
    batched::Reductions probe;
    const HostSampling sampling;  // the models' host caches stay as they are (src/device/common/sampling.h)
    const std::int64_t stratum = total_configs / kStrata;  // > block
    const auto s0 = std::chrono::steady_clock::now();
    double spent = 0;
    for (int j = 0; j < kStrata && spent < kBudgetSeconds; ++j) {
      int k = 0;  // stratum j, bit-reversed over 8 bits
      for (int b = 0; b < 8; ++b) k |= ((j >> b) & 1) << (7 - b);
      // A fixed pseudo-random place in the stratum (splitmix64 of its number): the same sample at every run.
      std::uint64_t z = static_cast<std::uint64_t>(k) * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull, z = (z ^ (z >> 27)) * 0x94d049bb133111ebull, z ^= z >> 31;
      probe.begin = k * stratum + static_cast<std::int64_t>(z % static_cast<std::uint64_t>(stratum - block + 1));
      probe.end = probe.begin + block;
      e.sampled += sweep(backend, sp.space, std::min(chunk, block), 0, probe).evaluated;
      spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    }
    e.rate = static_cast<double>(e.sampled) / std::max(spent, 1e-9);
    e.seconds = static_cast<double>(mine_configs) / e.rate;
  }
  e.write = write;
  e.seconds += write.seconds;
  if (max_hours > 0 && e.seconds > max_hours * 3600)
    throw InputError("the space has " + std::to_string(total_configs) + " configs; at " + std::to_string(static_cast<long long>(e.rate)) +
                     " configs/s (measured on " + std::to_string(e.sampled) + " of them)" +
                     (write.rows > 0 ? ", and " + std::to_string(write.rows) + " rows to write," : "") +
                     " it would take about " + duration_text(e.seconds) + ", past --max-hours " + [&] {
                       char b[32];
                       std::snprintf(b, sizeof b, "%g", max_hours);
                       return std::string(b);
                     }() +
                     ": shrink the space, split it (--shard, mpirun) or raise --max-hours");
  return e;
}

// Outputs a file-size limit (ulimit -f) would cut short are refused before any work, as an
// environment error: the kernel would stop the writer part-way (SIGXFSZ, which main ignores,
// so that a write past the limit fails instead) and leave half a document. Standard output
// counts where it is a regular file.
std::string bytes_text(std::int64_t b) {
  char s[32];
  if (b >= INT64_C(1000000000)) std::snprintf(s, sizeof s, "%.3g GB", static_cast<double>(b) / 1e9);
  else if (b >= 1000000) std::snprintf(s, sizeof s, "%.3g MB", static_cast<double>(b) / 1e6);
  else std::snprintf(s, sizeof s, "%lld bytes", static_cast<long long>(b));
  return s;
}

void check_file_size_limit(const WriteCost& w, bool json_to_stdout, const std::string& out, const std::string& csv) {
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return;
  const auto limit = static_cast<std::int64_t>(lim.rlim_cur);
  struct stat st {};
  const bool stdout_file = ::fstat(1, &st) == 0 && S_ISREG(st.st_mode);
  auto check = [&](const std::string& what, std::int64_t bytes) {
    if (bytes > limit)
      throw EnvironmentError(what + " would be about " + bytes_text(bytes) + ", past this process's file-size limit of " +
                             bytes_text(limit) + " (ulimit -f): raise the limit, or make fewer groups (--group)");
  };
  if (json_to_stdout && stdout_file) check("the JSON on standard output", w.json_bytes);
  if (!out.empty()) check("--out " + out, w.json_bytes);
  if (!csv.empty()) check("--csv " + csv, w.csv_bytes);
}

// This process's part of the space (the whole of it, or its shard's blocks one after another,
// folded as merge folds shards), with progress to the reporter between chunks. Under MPI
// rank 0 reports for the job, its shard standing for all of them (shards are equal to within
// one config). `seconds` gets the wall time.
batched::SweepSummary run_part(const Family& f, const BuiltSpace& sp, BackendKind backend, std::int64_t chunk,
                               batched::Reductions red, const SweepPlan& plan, SweepReporter& reporter, double* seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t shard_i = plan.shard_i, shard_n = plan.shard_n;
  const std::int64_t mine = shard_n > 0 ? shard_configs(sp.space.size(), shard_i, shard_n) : sp.space.size();
  std::int64_t before = 0;  // configs of this shard's earlier blocks
  const std::int64_t job = plan.ranks > 1 ? sp.space.size() : mine;
  if (!plan.quiet && reporter.wants_progress())
    red.progress = [&, mine, job](std::int64_t done_block) {
      reporter.progress(before + done_block, mine, job,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    };
  batched::SweepSummary sum;
  std::int64_t* latencies = nullptr;
  if (reporter.wants_latencies()) {
    if (shard_n > 0)
      throw InputError("latencies: not of a shard (its configs are blocks spread over the space); ask for them of "
                       "the whole sweep");
    latencies = reporter.latencies(mine);
  }
  if (shard_n == 0) {
    red.latencies = latencies;
    sum = sweep(backend, sp.space, chunk, 0, red);
  } else {  // this shard's blocks, one after another, folded as merge folds shards
    sum = empty_summary(sp.space.groups(), static_cast<int>(f.statuses.size()), red.histogram);
    const std::int64_t size = sp.space.size(), block = shard_block(size, shard_n);
    for (std::int64_t b = shard_i; b * block < size; b += shard_n) {
      red.begin = b * block, red.end = std::min(size, (b + 1) * block);
      merge_summary(sum, sweep(backend, sp.space, chunk, 0, red), red.top_k);
      before += red.end - red.begin;
    }
  }
  reporter.done();
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

// Under MPI: every rank's summary to rank 0, which merges them into `o` and speaks for the
// job. False on the other ranks, which report nothing.
bool gather_ranks(SweepOutcome& o, int ranks, bool quiet) {
  const Family& f = *o.f;
  const std::vector<std::string> all = mpi_gather(summary_json(o.sum).dump());
  const double slowest = mpi_max(o.seconds);
  if (quiet) return false;
  batched::SweepSummary merged;
  nlohmann::json parts = nlohmann::json::array();
  for (std::size_t r = 0; r < all.size(); ++r) {
    const batched::SweepSummary s = summary_from_json(nlohmann::json::parse(all[r]), o.sp.space.groups(),
                                                      static_cast<int>(f.statuses.size()), "MPI rank " + std::to_string(r));
    merge_summary(merged, s, o.red.top_k);
    parts.push_back({{"rank", r}, {"evaluated", s.evaluated}});
  }
  o.sum = std::move(merged);
  o.seconds = slowest;
  o.merged = {{"mpi_ranks", ranks}, {"shards", parts}};
  return true;
}

}  // namespace

void SweepReporter::finished(const SweepOutcome& o, SweepReportTo to) { report_sweep(o, to); }

void TerminalSweepReporter::finished(const SweepOutcome& o, SweepReportTo to) {
  to.text = &out_;
  report_sweep(o, to);
}

void TerminalSweepReporter::planned(const SweepPlan& p) {
  every_ = p.progress_every;
  tty_ = ::isatty(STDERR_FILENO) && p.ranks == 1;
  wants_ = !p.quiet && (tty_ ? !p.json : every_ > 0);
  if (p.quiet) return;
  if (!p.json) {  // the size first: a space too large to wait for can be stopped at once
    stream_printf(out_, "sweep %s: %lld configs over %lld axes, %lld group(s), backend %s, topology %s\n", p.family->name.c_str(),
               (long long)p.configs, (long long)p.axes, (long long)p.groups, to_string(p.backend), p.topology.c_str());
    if (p.ranks > 1)
      stream_printf(out_, "  over %d MPI ranks, each a shard of about %lld configs (blocks of %lld, interleaved)\n", p.ranks,
                 (long long)p.shard_configs, (long long)p.shard_block);
    else if (p.shard_n > 0)
      stream_printf(out_, "  shard %lld/%lld: %lld configs (blocks of %lld, interleaved)\n", (long long)p.shard_i,
                 (long long)p.shard_n, (long long)p.shard_configs, (long long)p.shard_block);
    out_.flush();
  }
  if (p.sampled > 0 || p.write_rows > 0) {
    std::string line = "  estimate: about " + duration_text(p.seconds);
    char part[200];
    if (p.sampled > 0) {
      std::snprintf(part, sizeof part, " at %.3g configs/s (measured on %lld configs)", p.rate, (long long)p.sampled);
      line += part;
    }
    if (p.write_rows > 0) {
      std::snprintf(part, sizeof part, "%s writing %lld rows (about %.3g GB) included", p.sampled > 0 ? "," : "",
                    (long long)p.write_rows, static_cast<double>(p.write_bytes) / 1e9);
      line += part;
    }
    line += "\n";
    (p.json ? err_ : out_) << line;  // the JSON alone on stdout
  }
}

// On a terminal a live line, at most once a second; otherwise (a log, CI, MPI) one line
// every --progress-every seconds.
void TerminalSweepReporter::progress(std::int64_t done_mine, std::int64_t mine, std::int64_t job, double spent) {
  if (spent - last_ < (tty_ ? 1.0 : every_) || done_mine >= mine) return;
  last_ = spent;
  shown_ = tty_;
  const double frac = static_cast<double>(done_mine) / static_cast<double>(mine);
  const double done = frac * static_cast<double>(job), rate = done / spent, left = spent * (1 - frac) / frac;
  if (tty_)
    stream_printf(err_, "\r  %5.1f%% of %lld configs, about %.0f s left   ", 100.0 * frac, (long long)job, left);
  else
    stream_printf(err_, "progress: %.0f/%lld configs (%.1f%%), %.3g configs/s, ETA %.0f s\n", done, (long long)job,
                  100.0 * frac, rate, left);
  err_.flush();
}

void TerminalSweepReporter::done() {
  if (shown_) stream_printf(err_, "\r%60s\r", "");
  shown_ = false;
}

void sweep(const SweepRequest& request, SweepReporter& reporter) {
  KB_INTERNAL_CHECK(request.family != nullptr, "sweep: a request without a family");
  const Family& f = *request.family;
  // A space file is read once per sweep, however often it is parsed (a pipe can be read only
  // once); the next sweep reads it again, so an edited file counts.
  struct ForgetSpaceFiles {
    ~ForgetSpaceFiles() { forget_space_files(); }
  } forget;
  SweepRequest r = request;
  check_names(f, r);
  const std::optional<SpaceFile> file = apply_space_file(f, r);
  const int top = static_cast<int>(int_option("--top", r.top, 0, batched::kMaxTopK, file && file->top ? *file->top : 10));
  const int recheck =
      static_cast<int>(int_option("--recheck", r.recheck, 0, batched::kMaxTopK, file && file->recheck ? *file->recheck : 10));
  const std::int64_t chunk_given = int_option("--chunk", r.chunk, 0, INT64_C(1) << 30, 0);
  const double max_hours = decimal_option("--max-hours", r.max_hours, 24);
  const std::int64_t max_ops = r.max_ops ? parse_max_ops(*r.max_ops) : kDefaultMaxOps;
  SweepPlan plan;
  plan.family = &f;
  plan.json = r.json;
  plan.progress_every = decimal_option("--progress-every", r.progress_every, 10);
  const TopologySpec topo = r.topology.load();
  const SpaceRequest req = space_of(f, r, file);
  const BuiltSpace sp = file ? build_space_from_file(f, topo, *file) : build_space(f, topo, req);
  check_output_path("--out", r.out, "sweep.json");
  check_output_path("--csv", r.csv, "sweep.csv");
  check_outputs_distinct({{"--space", r.space}, {"--topology", r.topology.path}}, {{"--out", r.out}, {"--csv", r.csv}});
  batched::Reductions red;
  red.top_k = std::max(top, recheck);
  const std::string pareto_name = r.pareto.value_or(f.default_cost);
  red.pareto = parse_pareto(f, pareto_name);
  red.histogram = !r.no_histogram;
  const BackendKind backend = resolve_backend(r.backend, f.id);
  const std::int64_t chunk = chunk_given > 0 ? chunk_given : backend == BackendKind::cuda ? INT64_C(1) << 22 : INT64_C(1) << 20;
  std::int64_t shard_i = -1, shard_n = 0;
  if (!r.shard.empty()) {
    parse_shard("--shard", r.shard, &shard_i, &shard_n);
    if (r.out.empty() && !r.json) throw InputError("--shard: a shard's summary is its JSON: give --out FILE or --json");
  }
  const int ranks = mpi_size();
  if (ranks > 1) {
    if (shard_n > 0) throw InputError("--shard: under MPI each rank takes its own shard; leave --shard out");
    shard_i = mpi_rank(), shard_n = ranks;
    if (backend == BackendKind::cuda) batched::cuda_use_device(mpi_local_rank());  // one GPU per rank of a node
  }
  validate_sweep(sp.space, chunk, red);  // before anything is reported
  const bool quiet = ranks > 1 && mpi_rank() != 0;  // under MPI rank 0 speaks for the job

  const std::int64_t total_configs = sp.space.size();
  const std::int64_t mine_configs = shard_n > 0 ? shard_configs(total_configs, shard_i, shard_n) : total_configs;
  // A shard (--shard) writes its summary, not the rows; rank 0 of an MPI job writes them
  // once, and every rank counts them, so that all take the same --max-hours decision.
  const bool writes_rows = r.shard.empty();
  const WriteCost write =
      writes_rows ? write_cost(f, sp, red.pareto != 0, r.json || !r.out.empty(), !r.csv.empty(), r.json && !r.out.empty())
                  : WriteCost{};
  const Estimate estimate = estimate_time(sp, backend, chunk, mine_configs, max_hours, write);
  check_file_size_limit(write, r.json, r.out, r.csv);
  plan.configs = total_configs, plan.axes = static_cast<std::int64_t>(sp.space.axes.size()), plan.groups = sp.space.groups();
  plan.backend = backend;
  plan.topology = topo.name;
  for (const auto& set : topo.overrides) plan.topology += " --set " + set;
  plan.ranks = ranks, plan.quiet = quiet;
  plan.shard_i = shard_i, plan.shard_n = shard_n;
  if (shard_n > 0) {
    plan.shard_configs = shard_configs(total_configs, ranks > 1 ? 0 : shard_i, shard_n);
    plan.shard_block = shard_block(total_configs, shard_n);
  }
  plan.seconds = estimate.seconds, plan.rate = estimate.rate, plan.sampled = estimate.sampled;
  plan.write_rows = estimate.write.rows, plan.write_bytes = estimate.write.bytes;
  reporter.planned(plan);

  SweepOutcome o;
  o.sum = run_part(f, sp, backend, chunk, red, plan, reporter, &o.seconds);
  o.f = &f;
  o.topo = topo;
  o.req = req;
  o.sp = sp;
  o.red = red;
  o.top = top;
  o.recheck = recheck;
  o.max_ops = max_ops;
  o.pareto_name = pareto_name;
  o.backend = backend;
  if (ranks > 1) {
    if (!gather_ranks(o, ranks, quiet)) return;
  } else {
    o.shard_i = shard_i, o.shard_n = shard_n;
  }
  SweepReportTo to;
  to.json = r.json, to.out = r.out, to.csv = r.csv;
  reporter.finished(o, to);
}

}  // namespace kb::api
