#include "sweep_gemm.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <iostream>

#include <unistd.h>

#include "host/common/error.h"
#include "host/common/output.h"
#include "host/kernels/gemm.h"
#include "host/sweep/axis_values.h"
#include "host/sweep/backend.h"

namespace kb {

namespace {

using batched::GemmAxis;

struct AxisSpec {
  GemmAxis axis;
  const char* name;  // as in --group and in the JSON
  const char* flag;
};

const AxisSpec kAxes[] = {
    {GemmAxis::m, "m", "--m"},
    {GemmAxis::n, "n", "--n"},
    {GemmAxis::k, "k", "--k"},
    {GemmAxis::tile_m, "tile_m", "--tile-m"},
    {GemmAxis::tile_n, "tile_n", "--tile-n"},
    {GemmAxis::tile_k, "tile_k", "--tile-k"},
    {GemmAxis::pes, "pes", "--pes"},
    {GemmAxis::cubes, "cubes", "--cubes"},
    {GemmAxis::buffers, "buffers", "--buffers"},
    {GemmAxis::dataflow, "dataflow", "--dataflow"},
    {GemmAxis::array_rows, "array_rows", "--array-rows"},
    {GemmAxis::array_cols, "array_cols", "--array-cols"},
};

constexpr std::int64_t kMaxSpace = INT64_C(1) << 50;
constexpr std::int64_t kMaxGroups = INT64_C(1) << 20;

std::int64_t field_of(const GemmConfig& c, GemmAxis a) {
  switch (a) {
    case GemmAxis::m: return c.m;
    case GemmAxis::n: return c.n;
    case GemmAxis::k: return c.k;
    case GemmAxis::tile_m: return c.tile_m;
    case GemmAxis::tile_n: return c.tile_n;
    case GemmAxis::tile_k: return c.tile_k;
    case GemmAxis::pes: return c.pes;
    case GemmAxis::cubes: return c.cubes;
    case GemmAxis::buffers: return c.buffers;
    case GemmAxis::dataflow: return c.dataflow;
    case GemmAxis::array_rows: return c.array_rows;
    case GemmAxis::array_cols: return c.array_cols;
    default: return 0;
  }
}

std::vector<std::int64_t> parse_dataflows(const std::string& text) {
  std::vector<std::int64_t> v;
  for (const std::string& item : split_list(text, ',')) {
    Dataflow d;
    if (!parse_dataflow(item, &d)) throw InputError("--dataflow " + text + ": item '" + item + "': expected os, ws or is");
    if (std::find(v.begin(), v.end(), static_cast<std::int64_t>(d)) == v.end()) v.push_back(static_cast<std::int64_t>(d));
  }
  return v;
}

bool is_tile(GemmAxis a) { return a == GemmAxis::tile_m || a == GemmAxis::tile_n || a == GemmAxis::tile_k; }

// An axis value as the JSON writes it: dataflows by name, an automatic tile as "auto".
nlohmann::json value_json(GemmAxis a, std::int64_t v) {
  if (a == GemmAxis::dataflow) return to_string(static_cast<Dataflow>(v));
  if (is_tile(a) && v == 0) return "auto";
  return v;
}

const char* status_name(int s) {
  switch (s) {
    case kGemmOk: return "valid";
    case kGemmBadShape: return "bad_shape";
    case kGemmBadTile: return "tile_larger_than_matrix";
    case kGemmBadBuffers: return "bad_buffers";
    case kGemmBadPes: return "too_many_pes";
    case kGemmBadCubes: return "too_many_cubes";
    case kGemmSramOverflow: return "sram_overflow";
    case kGemmHbmOverflow: return "hbm_overflow";
    case kGemmTimeOverflow: return "time_overflow";
    case kGemmBadHardware: return "bad_hardware";
  }
  return "unknown";
}

batched::ParetoCost parse_pareto(const std::string& s) {
  if (s == "none") return batched::ParetoCost::none;
  if (s == "pes") return batched::ParetoCost::pes;
  if (s == "sram") return batched::ParetoCost::sram;
  if (s == "hbm") return batched::ParetoCost::hbm;
  throw InputError("--pareto " + s + ": expected pes, sram, hbm or none");
}

const char* pareto_meaning(batched::ParetoCost c) {
  switch (c) {
    case batched::ParetoCost::pes: return "PEs used (pes x cubes)";
    case batched::ParetoCost::sram: return "SRAM bytes per PE";
    case batched::ParetoCost::hbm: return "HBM bytes read and written";
    default: return "none";
  }
}

// The space: group axes first, in --group order, then every other axis with more than one
// value; single values go into the base config.
struct Space {
  batched::GemmSpace s;
  std::vector<const AxisSpec*> specs;  // per axis of s
};

Space build_space(const SweepGemmArgs& a, const TopologySpec& topo) {
  const std::string* text[] = {&a.m,       &a.n,     &a.k,       &a.tile_m,   &a.tile_n,     &a.tile_k,
                               &a.pes,     &a.cubes, &a.buffers, &a.dataflow, &a.array_rows, &a.array_cols};
  std::vector<std::vector<std::int64_t>> values;
  for (std::size_t i = 0; i < std::size(kAxes); ++i) {
    const AxisSpec& ax = kAxes[i];
    if (text[i]->empty()) {
      if (ax.axis == GemmAxis::dataflow) values.push_back({static_cast<std::int64_t>(topo.dataflow)});
      else if (ax.axis == GemmAxis::array_rows) values.push_back({topo.matrix_rows});
      else if (ax.axis == GemmAxis::array_cols) values.push_back({topo.matrix_cols});
      else throw InputError(std::string(ax.flag) + ": required (a value or a list, e.g. 1024 or 1024,4096)");
    } else if (ax.axis == GemmAxis::dataflow) {
      values.push_back(parse_dataflows(*text[i]));
    } else {
      // Values no configuration could use are input errors, not invalid configs.
      std::int64_t lo = 1, hi = kGemmMaxDim, auto_value = -1;
      if (is_tile(ax.axis)) auto_value = 0;
      if (ax.axis == GemmAxis::pes) hi = topo.pes_per_cube();
      if (ax.axis == GemmAxis::cubes) hi = topo.cubes_per_sip();
      if (ax.axis == GemmAxis::buffers) hi = 2;
      if (ax.axis == GemmAxis::array_rows || ax.axis == GemmAxis::array_cols) hi = 4096;
      values.push_back(parse_axis_values(ax.flag, *text[i], lo, hi, auto_value));
    }
  }

  std::vector<std::size_t> group;
  if (a.group != "none") {
    for (const std::string& name : split_list(a.group, ',')) {
      std::size_t found = std::size(kAxes);
      for (std::size_t i = 0; i < std::size(kAxes); ++i)
        if (name == kAxes[i].name) found = i;
      if (found == std::size(kAxes))
        throw InputError("--group " + a.group + ": '" + name +
                         "' is not an axis (m, n, k, tile_m, tile_n, tile_k, pes, cubes, buffers, dataflow, "
                         "array_rows, array_cols, or none)");
      for (std::size_t g : group)
        if (g == found) throw InputError("--group " + a.group + ": '" + name + "' is named twice");
      group.push_back(found);
    }
  }

  Space sp;
  GemmParams base;
  sp.s.base = gemm_config(topo, base);
  auto add_axis = [&](std::size_t i) {
    sp.s.axes.push_back(kAxes[i].axis);
    sp.s.values.push_back(values[i]);
    sp.specs.push_back(&kAxes[i]);
  };
  for (std::size_t g : group) add_axis(g);
  sp.s.group_axes = static_cast<int>(group.size());
  for (std::size_t i = 0; i < std::size(kAxes); ++i) {
    bool grouped = false;
    for (std::size_t g : group) grouped |= g == i;
    if (grouped) continue;
    if (values[i].size() > 1) add_axis(i);
    else batched::gemm_space_set(sp.s.base, kAxes[i].axis, values[i][0]);
  }
  std::int64_t size = 1, groups = 1;
  for (std::size_t i = 0; i < sp.s.values.size(); ++i) {
    const auto len = static_cast<std::int64_t>(sp.s.values[i].size());
    if (size > kMaxSpace / len) throw InputError("the space has more than 2^50 configs; split it into several sweeps");
    size *= len;
    if (static_cast<int>(i) < sp.s.group_axes) groups *= len;
  }
  if (groups > kMaxGroups)
    throw InputError("--group " + a.group + ": " + std::to_string(groups) +
                     " groups; at most 2^20 (group by fewer axes, or --group none)");
  return sp;
}

nlohmann::json config_json(std::int64_t index, const GemmConfig& c) {
  const GemmResult r = gemm_model(c);
  nlohmann::json j{{"index", index}};
  for (const AxisSpec& ax : kAxes) j[ax.name] = value_json(ax.axis, field_of(c, ax.axis));
  j["latency_ps"] = r.latency_ps;
  j["roofline_ps"] = r.roofline_ps;
  j["mac_cycles"] = r.mac_cycles;
  j["hbm_bytes"] = r.hbm_read_bytes + r.hbm_write_bytes;
  j["sram_bytes"] = gemm_sram_bytes(c);
  j["achieved_tflops"] = 2.0 * static_cast<double>(r.macs) / static_cast<double>(r.latency_ps);  // FLOP/ps = TFLOP/s
  return j;
}

std::string us(ps_t ps) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", static_cast<double>(ps) / 1e6);
  return b;
}

void print_header() {
  std::printf("  %7s %7s %7s %6s %6s %6s %4s %5s %3s %3s %9s | %14s %14s %7s\n", "m", "n", "k", "tile_m", "tile_n",
              "tile_k", "pes", "cubes", "buf", "df", "array", "latency_us", "roofline_us", "x_roof");
}

void print_row(const GemmConfig& c) {
  const GemmResult r = gemm_model(c);
  char array[24];
  std::snprintf(array, sizeof array, "%lldx%lld", (long long)c.array_rows, (long long)c.array_cols);
  std::printf("  %7lld %7lld %7lld %6lld %6lld %6lld %4lld %5lld %3lld %3s %9s | %14s %14s %7.2f\n", (long long)c.m,
              (long long)c.n, (long long)c.k, (long long)c.tile_m, (long long)c.tile_n, (long long)c.tile_k,
              (long long)c.pes, (long long)c.cubes, (long long)c.buffers, to_string(static_cast<Dataflow>(c.dataflow)),
              array, us(r.latency_ps).c_str(), us(r.roofline_ps).c_str(),
              static_cast<double>(r.latency_ps) / static_cast<double>(r.roofline_ps));
}

}  // namespace

void add_sweep_gemm_options(CLI::App* cmd, SweepGemmArgs& a) {
  const char* list = "values: V, a list V1,V2, ranges LO:HI[:+STEP] or LO:HI:*FACTOR, or a mix";
  cmd->add_option("--m", a.m, std::string("rows of A and C; ") + list)->required();
  cmd->add_option("--n", a.n, "columns of B and C")->required();
  cmd->add_option("--k", a.k, "columns of A, rows of B")->required();
  cmd->add_option("--tile-m", a.tile_m, "output tile rows; auto: min(128, m)")->capture_default_str();
  cmd->add_option("--tile-n", a.tile_n, "output tile columns; auto: min(128, n)")->capture_default_str();
  cmd->add_option("--tile-k", a.tile_k, "k-slice per step; auto: min(128, k)")->capture_default_str();
  cmd->add_option("--pes", a.pes, "PEs per cube (1..the cube's PEs)")->capture_default_str();
  cmd->add_option("--cubes", a.cubes, "cubes (1..the SIP's cubes)")->capture_default_str();
  cmd->add_option("--buffers", a.buffers, "SRAM buffer sets (1 or 2)")->capture_default_str();
  cmd->add_option("--dataflow", a.dataflow, "os, ws, is or a list (default: the topology's)");
  cmd->add_option("--array-rows", a.array_rows, "systolic array rows (default: the topology's)");
  cmd->add_option("--array-cols", a.array_cols, "systolic array columns (default: the topology's)");
  cmd->add_option("--group", a.group,
                  "axes whose values form a group with its own best config and Pareto front, or none")
      ->capture_default_str();
  cmd->add_option("--top", a.top, "report the N fastest configs of the whole space (0..1024; ties: the order given)")
      ->capture_default_str();
  cmd->add_option("--pareto", a.pareto, "Pareto front of latency against: pes, sram, hbm or none")
      ->capture_default_str();
  cmd->add_flag("--no-histogram", a.no_histogram, "skip the latency histogram (8 bins per octave)");
  cmd->add_option("--backend", a.backend, "auto, cuda or omp")->capture_default_str();
  cmd->add_option("--chunk", a.chunk, "configs per device pass, 1..2^30; 0: 2^20 on OpenMP, 2^22 on CUDA");
  cmd->add_flag("--json", a.json, "print one JSON object instead of tables");
  cmd->add_option("--out", a.out, "also write the JSON to FILE");
}

void cmd_sweep_gemm(const SweepGemmArgs& a, const TopologySpec& topo, const std::vector<std::string>& sets) {
  const Space sp = build_space(a, topo);
  if (!a.out.empty() && std::filesystem::is_directory(a.out))
    throw InputError("--out " + a.out + ": is a folder; give a file name, e.g. " + a.out + "/sweep.json");
  batched::GemmReductions red;
  red.top_k = a.top;
  red.pareto = parse_pareto(a.pareto);
  red.histogram = !a.no_histogram;
  if (a.chunk < 0 || a.chunk > (INT64_C(1) << 30)) throw InputError("--chunk " + std::to_string(a.chunk) + ": must be in 1..2^30 (or 0 for the default)");
  const BackendKind backend = resolve_backend(a.backend);
  const std::int64_t chunk = a.chunk > 0 ? a.chunk : backend == BackendKind::cuda ? INT64_C(1) << 22 : INT64_C(1) << 20;
  validate_sweep(sp.s, chunk, red);  // before anything is printed

  std::string topo_text = topo.name;
  for (const auto& set : sets) topo_text += " --set " + set;
  if (!a.json) {  // the size first: a space too large to wait for can be stopped at once
    std::printf("sweep gemm: %lld configs over %zu axes, %lld group(s), backend %s, topology %s\n",
                (long long)sp.s.size(), sp.s.axes.size(), (long long)sp.s.groups(), to_string(backend), topo_text.c_str());
    std::fflush(stdout);
  }
  const auto t0 = std::chrono::steady_clock::now();
  // On a terminal, a progress line on stderr at most once a second.
  auto last = t0;
  bool shown_progress = false;
  if (!a.json && ::isatty(STDERR_FILENO)) {
    red.progress = [&, total = sp.s.size()](std::int64_t done) {
      const auto now = std::chrono::steady_clock::now();
      if (now - last < std::chrono::seconds(1) || done >= total) return;
      last = now;
      shown_progress = true;
      const double spent = std::chrono::duration<double>(now - t0).count();
      std::fprintf(stderr, "\r  %5.1f%% of %lld configs, about %.0f s left   ", 100.0 * static_cast<double>(done) / static_cast<double>(total),
                   (long long)total, spent * static_cast<double>(total - done) / static_cast<double>(done));
    };
  }
  const batched::GemmSweepSummary sum = sweep_gemm(backend, sp.s, chunk, 0, red);
  if (shown_progress) std::fprintf(stderr, "\r%60s\r", "");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::int64_t size = sp.s.size();
  const std::int64_t group_stride = size / sp.s.groups();
  const batched::GemmSpaceDecoder decode(sp.s);

  auto group_key = [&](std::int64_t g) {
    const GemmConfig first = decode(g * group_stride);
    nlohmann::json key = nlohmann::json::object();
    for (std::size_t i = 0; i < static_cast<std::size_t>(sp.s.group_axes); ++i)
      key[sp.specs[i]->name] = value_json(sp.s.axes[i], field_of(first, sp.s.axes[i]));
    return key;
  };
  auto first_reason = [&](std::int64_t g) {
    const GemmConfig first = decode(g * group_stride);
    return gemm_status_message(gemm_model(first).status, first);
  };
  // The JSON (one model evaluation per reported config) only when it is asked for.
  if (a.json || !a.out.empty()) {
    nlohmann::json j;
    j["schema"] = "kernbench-gpu/gemm-space-sweep";
    j["schema_version"] = "1.0.0";
    j["generator"] = std::string("kernbench-gpu ") + KB_VERSION;
    j["topology"] = {{"name", topo.name}, {"hash", hash_hex(topo.hash)}, {"overrides", sets}};
    j["backend"] = to_string(backend);
    nlohmann::json axes = nlohmann::json::array();
    auto axis_values = [](GemmAxis ax, const std::vector<std::int64_t>& v) {
      nlohmann::json out = nlohmann::json::array();
      for (std::int64_t x : v) out.push_back(value_json(ax, x));
      return out;
    };
    for (std::size_t i = 0; i < sp.s.axes.size(); ++i)
      axes.push_back({{"name", sp.specs[i]->name}, {"values", axis_values(sp.s.axes[i], sp.s.values[i])}});
    nlohmann::json fixed = nlohmann::json::object();  // every field no axis sweeps
    for (const AxisSpec& ax : kAxes)
      if (std::find(sp.s.axes.begin(), sp.s.axes.end(), ax.axis) == sp.s.axes.end())
        fixed[ax.name] = value_json(ax.axis, field_of(sp.s.base, ax.axis));
    nlohmann::json group = nlohmann::json::array();
    for (int i = 0; i < sp.s.group_axes; ++i) group.push_back(sp.specs[static_cast<std::size_t>(i)]->name);
    j["space"] = {{"size", size}, {"axes", axes}, {"fixed", fixed}, {"group", group}, {"groups", sp.s.groups()}};
    j["evaluated"] = sum.evaluated;
    j["valid"] = sum.valid;
    nlohmann::json invalid = nlohmann::json::object();  // invalid configs by reason
    for (int st = 1; st < kGemmStatusCount; ++st)
      if (sum.by_status[st] > 0) invalid[status_name(st)] = sum.by_status[st];
    j["invalid"] = invalid;
    j["latency_checksum"] = sum.latency_checksum;
    j["timing"] = {{"seconds", seconds}, {"configs_per_s", seconds > 0 ? static_cast<double>(size) / seconds : 0.0}};
    nlohmann::json best = nlohmann::json::array();
    for (std::size_t g = 0; g < sum.best.size(); ++g) {
      const auto& b = sum.best[g];
      nlohmann::json entry{{"group", group_key(static_cast<std::int64_t>(g))},
                           {"best", b.index < 0 ? nlohmann::json() : config_json(b.index, decode(b.index))}};
      if (b.index < 0) entry["reason"] = "no valid config; the first: " + first_reason(static_cast<std::int64_t>(g));
      best.push_back(entry);
    }
    j["best_per_group"] = best;
    nlohmann::json top = nlohmann::json::array();
    for (const auto& t : sum.top) top.push_back(config_json(t.index, decode(t.index)));
    j["top"] = top;
    if (red.pareto != batched::ParetoCost::none) {
      nlohmann::json fronts = nlohmann::json::array();
      for (const auto& p : sum.pareto) {
        if (fronts.empty() || fronts.back()["group_index"] != p.group)
          fronts.push_back({{"group_index", p.group}, {"group", group_key(p.group)}, {"points", nlohmann::json::array()}});
        nlohmann::json c = config_json(p.index, decode(p.index));
        c["cost"] = p.cost;
        fronts.back()["points"].push_back(c);
      }
      j["pareto"] = {{"cost", a.pareto}, {"meaning", pareto_meaning(red.pareto)}, {"fronts", fronts}};
    }
    if (red.histogram) {
      nlohmann::json bins = nlohmann::json::array();
      for (int b = 0; b < batched::kHistBins; ++b)
        if (sum.histogram[static_cast<std::size_t>(b)] > 0)
          bins.push_back({{"lo_ps", batched::hist_bin_lo(b)}, {"hi_ps", batched::hist_bin_lo(b + 1)},
                          {"count", sum.histogram[static_cast<std::size_t>(b)]}});
      j["histogram"] = {{"bins_per_octave", batched::kHistBinsPerOctave}, {"bins", bins}};
    }
    if (!a.out.empty()) write_file_atomic(a.out, j.dump(2) + "\n");
    if (a.json) {
      std::cout << j.dump(2) << "\n";
      return;
    }
  }

  std::printf("  valid %lld (%.1f%%), %.3f s, %.3g configs/s\n", (long long)sum.valid,
              size > 0 ? 100.0 * static_cast<double>(sum.valid) / static_cast<double>(size) : 0.0, seconds,
              seconds > 0 ? static_cast<double>(size) / seconds : 0.0);
  if (sum.valid == 0) std::printf("  no valid config in the space\n");
  if (sum.valid < size) {
    std::string why;
    for (int st = 1; st < kGemmStatusCount; ++st)
      if (sum.by_status[st] > 0) why += (why.empty() ? "" : ", ") + std::string(status_name(st)) + " " + std::to_string(sum.by_status[st]);
    std::printf("  invalid %lld: %s\n", (long long)(size - sum.valid), why.c_str());
  }
  bool mixed = false;  // do m, n or k vary inside a group?
  for (std::size_t i = static_cast<std::size_t>(sp.s.group_axes); i < sp.s.axes.size(); ++i)
    mixed |= sp.s.axes[i] == GemmAxis::m || sp.s.axes[i] == GemmAxis::n || sp.s.axes[i] == GemmAxis::k;
  if (mixed) std::printf("  note: m, n or k vary inside a group, so its best and its front compare different problems\n");
  std::printf("  columns: buf = SRAM buffer sets, df = dataflow, x_roof = latency / roofline\n");
  const std::size_t shown = std::min<std::size_t>(sum.best.size(), 50);
  std::printf("\nbest per group (%s):\n", a.group.c_str());
  print_header();
  for (std::size_t g = 0; g < shown; ++g) {
    if (sum.best[g].index < 0)
      std::printf("  group %s: no valid config (the first: %s)\n", group_key(static_cast<std::int64_t>(g)).dump().c_str(),
                  first_reason(static_cast<std::int64_t>(g)).c_str());
    else print_row(decode(sum.best[g].index));
  }
  if (shown < sum.best.size()) std::printf("  ... and %zu more groups (see --json)\n", sum.best.size() - shown);
  if (!sum.top.empty()) {
    std::printf("\ntop %zu of the whole space:\n", sum.top.size());
    print_header();
    for (const auto& t : sum.top) print_row(decode(t.index));
  }
  if (red.pareto != batched::ParetoCost::none && !sum.pareto.empty()) {
    std::printf("\nPareto front per group, latency against %s:\n", pareto_meaning(red.pareto));
    std::int64_t fronts = 0, last = -1;
    for (const auto& p : sum.pareto) {
      if (p.group != last) {
        if (++fronts > 10) break;
        last = p.group;
        std::printf("  group %s\n  %9s", group_key(p.group).dump().c_str(), "cost");
        print_header();
      }
      std::printf("  %9lld", (long long)p.cost);
      print_row(decode(p.index));
    }
    if (fronts > 10) std::printf("  ... fronts of further groups in --json\n");
  }
  if (red.histogram && sum.valid > 0) {
    std::printf("\nlatency of the valid configs, one line per octave of picoseconds (--json: 8 bins per octave):\n");
    const int per = batched::kHistBinsPerOctave;
    std::int64_t peak = 0;
    std::vector<std::int64_t> oct(batched::kHistBins / per, 0);
    for (int b = 0; b < batched::kHistBins; ++b) oct[static_cast<std::size_t>(b / per)] += sum.histogram[static_cast<std::size_t>(b)];
    for (std::int64_t c : oct) peak = std::max(peak, c);
    for (std::size_t o = 0; o < oct.size(); ++o) {
      if (oct[o] == 0) continue;
      const int bar = static_cast<int>(40 * oct[o] / peak);
      std::printf("  [%12s, %12s) us %12lld  %s\n", us(batched::hist_bin_lo(static_cast<int>(o) * per)).c_str(),
                  us(batched::hist_bin_lo(static_cast<int>(o + 1) * per)).c_str(), (long long)oct[o],
                  std::string(static_cast<std::size_t>(std::max(bar, 1)), '#').c_str());
    }
  }
  if (!a.out.empty()) std::printf("\nwrote %s\n", a.out.c_str());
}

}  // namespace kb
