// `kernbench-gpu sweep NAME`: a space of a family's configs evaluated by the batched model
// and reduced to the best per group, the top k, a Pareto front and a latency histogram.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "device/common/sampling.h"
#include "cmd_family.h"
#include "host/study/sweep_report.h"
#include "host/study/document.h"
#include "host/common/error.h"
#include "host/common/json_stream.h"
#include "host/common/output.h"
#include "host/common/table.h"
#include "host/parity/figures.h"
#include "host/sweep/merge.h"
#include "host/sweep/space.h"
#include "host/sweep/space_file.h"
#include "mpi.h"

namespace kb {

namespace fs = std::filesystem;

CLI::App* add_sweep_command(CLI::App* sweep, SweepArgs& a) {
  const Family& f = *a.family;
  auto* cmd = sweep->add_subcommand(
      f.name, f.description + ": best per group, top k, Pareto front and latency histogram, reduced on the device");
  for (const std::string& alias : f.aliases) cmd->alias(alias);
  const char* list = "; values: V, a list V1,V2, ranges LO:HI[:+STEP] or LO:HI:*FACTOR, or a mix";
  bool first = true;
  for (const AxisDesc& ax : f.axes) {
    std::string help = ax.help;
    if (!ax.names.empty()) help += " (" + one_of(ax.names) + ", or a list)";
    if (!ax.best.empty()) help += "; best: " + ax.best;
    help += ax.fallback.empty() ? " [required, unless in a --zip]" : " [default: " + ax.fallback + "]";
    if (first) help += list;
    first = false;
    a.given[ax.name] = cmd->add_option(ax.flag, a.axes[ax.name], help);
  }
  for (const HwAxisDesc& h : f.hw_axes)
    a.given[h.name] =
        cmd->add_option(h.flag, a.hw_axes[h.name], h.help + ", a list (same as --hw " + h.path + "=...; default: the topology's)");
  for (const PresetDesc& p : f.presets)
    a.preset_given[p.flag] = cmd->add_option(p.flag, a.presets[p.flag], p.help + " (one; an axis's own flag overrides it)");
  cmd->add_option("--hw", a.hw,
                  "sweep a topology field: PATH=LIST, e.g. cube.hbm.bandwidth_gbps=410,819,1638 (repeatable; fields: "
                  "docs/topology.md)")
      ->take_all()
      ->allow_extra_args(false);
  cmd->add_option("--zip", a.zips,
                  "fields that take their values together, NAMES=TUPLES, e.g. m,n,k=32/10240/8192,2048/8192/8192 "
                  "(names: axes, hardware axes or topology paths; a tuple's values joined by '/'; repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  a.opt["--group"] = cmd->add_option("--group", a.group,
                  "axes whose values form a group with its own best config and Pareto front, or none [default: " +
                      f.default_group + "]");
  a.opt["--top"] = cmd->add_option("--top", a.top, "report the N fastest configs of the whole space (0..1024; ties: the order given) [default: 10]");
  std::string costs;
  for (const CostDesc& c : family_costs(f)) costs += c.name + ", ";
  a.opt["--pareto"] = cmd->add_option("--pareto", a.pareto, "Pareto front of latency against: " + costs + "or none [default: " + f.default_cost + "]");
  a.opt["--no-histogram"] = cmd->add_flag("--no-histogram", a.no_histogram, "skip the latency histogram (8 bins per octave)");
  cmd->add_option("--backend", a.backend, "auto, cuda or omp")->capture_default_str();
  a.opt["--chunk"] = cmd->add_option("--chunk", a.chunk, "configs per device pass, 1..2^30; 0: 2^20 on OpenMP, 2^22 on CUDA");
  cmd->add_flag("--json", a.json, "print one JSON object instead of tables");
  cmd->add_option("--space", a.space,
                  "FILE.yaml: the space written down (axes, zips, group, objectives, reductions, topology; "
                  "docs/spaces.md); `sweep --space FILE` takes the family from the file; `--space -` reads it from "
                  "standard input (a pipe or FIFO is read once)");
  cmd->add_option("--shard", a.shard,
                  "I/N: evaluate shard I (from 0) of N, a contiguous slice of the space, and write its mergeable "
                  "summary with --out or --json (kernbench-gpu merge combines them); under mpirun each rank takes one");
  a.opt["--recheck"] = cmd->add_option("--recheck", a.recheck,
                  "re-run the N fastest configs on the reference engine after the sweep (0..1024, 0: none); a "
                  "difference is exit 3 [default: 10]");
  a.opt["--max-hours"] = cmd->add_option("--max-hours", a.max_hours,
                  "refuse a space whose estimated time (measured on a sample of it) is longer; 0: no limit [default: 24]");
  a.opt["--progress-every"] = cmd->add_option("--progress-every", a.progress_every,
                  "seconds between progress lines (done/total, configs/s, ETA) when stderr is not a terminal; 0: none "
                  "[default: 10]");
  a.max_ops.add(cmd, "; the re-check passes over larger configs");
  cmd->add_option("--out", a.out, "also write the JSON to FILE");
  cmd->add_option("--csv", a.csv,
                  "also write the reported configs to FILE as CSV: a row per best, top and Pareto config, with the "
                  "columns of the JSON rows after report, group_index and cost");
  a.topo.add(cmd, false);
  return cmd;
}

namespace {

// An integer option by the strict rule (decimal digits, in lo..hi), or `fallback` when not given.
std::int64_t int_option(const SweepArgs& a, const char* flag, const std::string& text, std::int64_t lo, std::int64_t hi,
                        std::int64_t fallback) {
  if (a.opt.at(flag)->count() == 0) return fallback;
  std::int64_t v = 0;
  std::string why;
  if (!parse_int_in(text, lo, hi, &v, &why)) throw InputError(std::string(flag) + " " + (text.empty() ? std::string("''") : text) + ": " + why);
  return v;
}

// A number of hours or seconds: decimal digits with an optional fraction (no sign, exponent,
// nan or inf), or `fallback` when not given.
double decimal_option(const SweepArgs& a, const char* flag, const std::string& text, double fallback) {
  if (a.opt.at(flag)->count() == 0) return fallback;
  std::size_t i = 0, digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i, ++digits;
  }
  if (text.empty() || digits == 0 || i != text.size() || text.size() > 32)
    throw InputError(std::string(flag) + " " + (text.empty() ? std::string("''") : text) + ": expected a number >= 0 in decimal digits, e.g. 2 or 0.5");
  return std::strtod(text.c_str(), nullptr);
}

}  // namespace



namespace {

// A space file (--space) sets the axes, zips and group; its objectives and reductions replace
// the defaults where the command line is silent, and its topology is used unless --topology
// is given. Flags that would set the space too are refused.
std::optional<SpaceFile> apply_space_file(const Family& f, SweepArgs& a) {
  if (a.space.empty()) return std::nullopt;
  std::optional<SpaceFile> file = load_space_file(a.space);
  if (!f.named(file->family))
    throw InputError(a.space + ": family " + file->family + ": the file is a " + file->family + " space, not " + f.name);
  std::string flag;
  for (const AxisDesc& ax : f.axes)
    if (a.given.at(ax.name)->count() > 0) flag = ax.flag;
  for (const HwAxisDesc& h : f.hw_axes)
    if (a.given.at(h.name)->count() > 0) flag = h.flag;
  if (!a.hw.empty()) flag = "--hw";
  if (!a.zips.empty()) flag = "--zip";
  if (a.opt.at("--group")->count() > 0) flag = "--group";
  if (!flag.empty()) throw InputError("--space " + a.space + ": the file sets the space; " + flag + " cannot be given too");
  // The file's reductions apply where the command line is silent (docs/spaces.md).
  if (file->pareto && a.opt.at("--pareto")->count() == 0) a.pareto = *file->pareto;
  if (file->histogram && a.opt.at("--no-histogram")->count() == 0) a.no_histogram = !*file->histogram;
  if (a.topo.path.empty() && !file->topology.empty()) a.topo.path = file->topology;
  return file;
}

// The space as asked: the family's axes and hardware axes given, --hw lists, zips and the
// group, or the space file's; a field both swept and set (--set) is refused.
SweepRequest request_of(const Family& f, const SweepArgs& a, const std::optional<SpaceFile>& file) {
  SweepRequest req;
  for (const AxisDesc& ax : f.axes)
    if (a.given.at(ax.name)->count() > 0) req.axes[ax.name] = a.axes.at(ax.name);
  for (const PresetDesc& p : f.presets) {
    if (a.preset_given.at(p.flag)->count() == 0) continue;
    if (file) throw InputError("--space " + a.space + ": the file sets the space; " + p.flag + " cannot be given too");
    const std::string& v = a.presets.at(p.flag);
    if (p.apply) req.presets[p.flag] = v;
    else if (v.find(',') != std::string::npos)
      throw InputError(p.flag + " " + v + ": one value a sweep (sweep the axes it stands for, or run one sweep each)");
    for (const auto& [name, value] : p.expand(v)) req.axes.emplace(name, value);  // an axis's own flag wins
  }
  for (const HwAxisDesc& h : f.hw_axes)
    if (a.given.at(h.name)->count() > 0) req.hw.push_back({h.flag, h.path, a.hw_axes.at(h.name)});
  for (const std::string& h : a.hw) {
    const auto eq = h.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--hw " + h + ": expected PATH=LIST, e.g. cube.hbm.bandwidth_gbps=410,819,1638");
    req.hw.push_back({"--hw", h.substr(0, eq), h.substr(eq + 1)});
  }
  req.zips = a.zips;
  req.group = a.group;
  if (file) req = file->req;
  for (const HwList& h : req.hw) {
    const std::string setter = a.topo.setter_of(h.path);
    if (!setter.empty())
      throw InputError(h.flag + (h.flag == "--hw" ? " " + h.path + "=" : " ") + h.list + " and " + setter + " both set " + h.path +
                       ": sweep it or set it, not both");
  }
  return req;
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
// folded as merge folds shards), with progress on stderr: on a terminal a live line, at most
// once a second; otherwise (a log, CI, MPI) one line every `progress_every` seconds. Under
// MPI rank 0 reports for the job, its shard standing for all of them (shards are equal to
// within one config). `seconds` gets the wall time.
batched::SweepSummary run_part(const Family& f, const BuiltSpace& sp, BackendKind backend, std::int64_t chunk,
                               batched::Reductions red, std::int64_t shard_i, std::int64_t shard_n, int ranks, bool quiet,
                               bool json, double progress_every, double* seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  bool shown_progress = false;
  const Embedding* emb = embedding();  // in process: its callback, no lines of our own
  const bool tty = !emb && ::isatty(STDERR_FILENO) && ranks == 1;
  const std::int64_t mine = shard_n > 0 ? shard_configs(sp.space.size(), shard_i, shard_n) : sp.space.size();
  std::int64_t before = 0;  // configs of this shard's earlier blocks
  const std::int64_t job = ranks > 1 ? sp.space.size() : mine;
  if (emb && emb->progress) {
    red.progress = [&, mine](std::int64_t done_block) { emb->progress(before + done_block, mine); };
  } else if (!emb && !quiet && (tty ? !json : progress_every > 0)) {
    red.progress = [&, mine, job](std::int64_t done_block) {
      const std::int64_t done_mine = before + done_block;
      const auto now = std::chrono::steady_clock::now();
      const auto every = tty ? std::chrono::duration<double>(1) : std::chrono::duration<double>(progress_every);
      if (now - last < every || done_mine >= mine) return;
      last = now;
      shown_progress = tty;
      const double spent = std::chrono::duration<double>(now - t0).count();
      const double frac = static_cast<double>(done_mine) / static_cast<double>(mine);
      const double done = frac * static_cast<double>(job), rate = done / spent, left = spent * (1 - frac) / frac;
      if (tty)
        std::fprintf(stderr, "\r  %5.1f%% of %lld configs, about %.0f s left   ", 100.0 * frac, (long long)job, left);
      else
        std::fprintf(stderr, "progress: %.0f/%lld configs (%.1f%%), %.3g configs/s, ETA %.0f s\n", done, (long long)job,
                     100.0 * frac, rate, left);
      std::fflush(stderr);
    };
  }
  batched::SweepSummary sum;
  std::vector<std::int64_t>* latencies = emb ? emb->latencies : nullptr;
  if (latencies) {
    if (shard_n > 0)
      throw InputError("latencies: not of a shard (its configs are blocks spread over the space); ask for them of "
                       "the whole sweep");
    if (mine > emb->max_latencies)
      throw InputError("latencies: the space has " + std::to_string(mine) + " configs, more than the " +
                       std::to_string(emb->max_latencies) + " asked for at most");
    latencies->assign(static_cast<std::size_t>(mine), -1);
  }
  if (shard_n == 0) {
    if (latencies) red.latencies = latencies->data();
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
  if (shown_progress) std::fprintf(stderr, "\r%60s\r", "");
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

void cmd_sweep(const SweepArgs& args) {
  const Family& f = *args.family;
  SweepArgs a = args;
  const std::optional<SpaceFile> file = apply_space_file(f, a);
  for (const char* flag : {"--group", "--pareto"})
    if (a.opt.at(flag)->count() > 0 && (flag[2] == 'g' ? a.group : a.pareto).empty())
      throw InputError(std::string(flag) + " '': an empty value; leave the option out for its default");
  const int top = static_cast<int>(int_option(a, "--top", a.top, 0, batched::kMaxTopK, file && file->top ? *file->top : 10));
  const int recheck =
      static_cast<int>(int_option(a, "--recheck", a.recheck, 0, batched::kMaxTopK, file && file->recheck ? *file->recheck : 10));
  const std::int64_t chunk_given = int_option(a, "--chunk", a.chunk, 0, INT64_C(1) << 30, 0);
  const double max_hours = decimal_option(a, "--max-hours", a.max_hours, 24);
  const std::int64_t max_ops = a.max_ops.value();
  const double progress_every = decimal_option(a, "--progress-every", a.progress_every, 10);
  const TopologySpec topo = a.topo.load();
  const SweepRequest req = request_of(f, a, file);
  const BuiltSpace sp = file ? build_space_from_file(f, topo, *file) : build_space(f, topo, req);
  check_output_path("--out", a.out, "sweep.json");
  check_output_path("--csv", a.csv, "sweep.csv");
  check_outputs_distinct({{"--space", a.space}, {"--topology", a.topo.path}}, {{"--out", a.out}, {"--csv", a.csv}});
  batched::Reductions red;
  red.top_k = std::max(top, recheck);
  const std::string pareto_name = a.pareto.empty() ? f.default_cost : a.pareto;
  red.pareto = parse_pareto(f, pareto_name);
  red.histogram = !a.no_histogram;
  const BackendKind backend = resolve_backend(a.backend, f.id);
  const std::int64_t chunk = chunk_given > 0 ? chunk_given : backend == BackendKind::cuda ? INT64_C(1) << 22 : INT64_C(1) << 20;
  std::int64_t shard_i = -1, shard_n = 0;
  if (!a.shard.empty()) {
    parse_shard("--shard", a.shard, &shard_i, &shard_n);
    if (a.out.empty() && !a.json) throw InputError("--shard: a shard's summary is its JSON: give --out FILE or --json");
  }
  const int ranks = mpi_size();
  if (ranks > 1) {
    if (shard_n > 0) throw InputError("--shard: under MPI each rank takes its own shard; leave --shard out");
    shard_i = mpi_rank(), shard_n = ranks;
    if (backend == BackendKind::cuda) batched::cuda_use_device(mpi_local_rank());  // one GPU per rank of a node
  }
  validate_sweep(sp.space, chunk, red);  // before anything is printed
  const bool quiet = ranks > 1 && mpi_rank() != 0;  // under MPI rank 0 speaks for the job

  const std::int64_t total_configs = sp.space.size();
  const std::int64_t mine_configs = shard_n > 0 ? shard_configs(total_configs, shard_i, shard_n) : total_configs;
  // A shard (--shard) writes its summary, not the rows; rank 0 of an MPI job writes them
  // once, and every rank counts them, so that all take the same --max-hours decision.
  const bool writes_rows = a.shard.empty();
  const WriteCost write = writes_rows ? write_cost(f, sp, red.pareto != 0, a.json || !a.out.empty(), !a.csv.empty(), a.json && !a.out.empty()) : WriteCost{};
  const Estimate estimate = estimate_time(sp, backend, chunk, mine_configs, max_hours, write);
  check_file_size_limit(write, a.json, a.out, a.csv);
  std::string topo_text = topo.name;
  for (const auto& set : topo.overrides) topo_text += " --set " + set;
  const std::string group_text = a.group.empty() ? f.default_group : a.group;
  if (!a.json && !quiet) {  // the size first: a space too large to wait for can be stopped at once
    cli_printf("sweep %s: %lld configs over %zu axes, %lld group(s), backend %s, topology %s\n", f.name.c_str(),
                (long long)sp.space.size(), sp.space.axes.size(), (long long)sp.space.groups(), to_string(backend),
                topo_text.c_str());
    if (ranks > 1)
      cli_printf("  over %d MPI ranks, each a shard of about %lld configs (blocks of %lld, interleaved)\n", ranks,
                  (long long)shard_configs(sp.space.size(), 0, ranks), (long long)shard_block(sp.space.size(), ranks));
    else if (shard_n > 0)
      cli_printf("  shard %lld/%lld: %lld configs (blocks of %lld, interleaved)\n", (long long)shard_i, (long long)shard_n,
                  (long long)shard_configs(sp.space.size(), shard_i, shard_n), (long long)shard_block(sp.space.size(), shard_n));
    cli_out().flush();
  }
  if ((estimate.sampled > 0 || estimate.write.rows > 0) && !quiet) {
    std::string line = "  estimate: about " + duration_text(estimate.seconds);
    char part[200];
    if (estimate.sampled > 0) {
      std::snprintf(part, sizeof part, " at %.3g configs/s (measured on %lld configs)", estimate.rate,
                    (long long)estimate.sampled);
      line += part;
    }
    if (estimate.write.rows > 0) {
      std::snprintf(part, sizeof part, "%s writing %lld rows (about %.3g GB) included", estimate.sampled > 0 ? "," : "",
                    (long long)estimate.write.rows, static_cast<double>(estimate.write.bytes) / 1e9);
      line += part;
    }
    line += "\n";
    (a.json ? cli_err() : cli_out()) << line;  // the JSON alone on stdout
  }

  double seconds = 0;
  const batched::SweepSummary sum =
      run_part(f, sp, backend, chunk, red, shard_i, shard_n, ranks, quiet, a.json, progress_every, &seconds);
  SweepOutcome o;
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
  o.sum = sum;
  o.seconds = seconds;
  if (ranks > 1) {
    if (!gather_ranks(o, ranks, quiet)) return;
  } else {
    o.shard_i = shard_i, o.shard_n = shard_n;
  }
  report_sweep(o, a.json, a.out, a.csv);
}

}  // namespace kb
