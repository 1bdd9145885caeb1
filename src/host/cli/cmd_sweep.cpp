// `kernbench-gpu sweep NAME`: a space of a family's configs evaluated by the batched model
// and reduced to the best per group, the top k, a Pareto front and a latency histogram. The
// words become an api::SweepRequest; the runner and its reporters are src/host/api/sweep.h.
// `merge`, the same way, an api::MergeRequest.
#include <optional>

#include "cmd_family.h"
#include "host/api/merge_shards.h"
#include "host/api/sweep.h"
#include "host/sweep/space.h"

namespace kb {


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

// The parsed words as a request: the values given, by name, and each option's text.
api::SweepRequest sweep_request(const SweepArgs& a) {
  const Family& f = *a.family;
  api::SweepRequest r;
  r.family = &f;
  for (const AxisDesc& ax : f.axes)
    if (a.given.at(ax.name)->count() > 0) r.axes[ax.name] = a.axes.at(ax.name);
  for (const HwAxisDesc& h : f.hw_axes)
    if (a.given.at(h.name)->count() > 0) r.hw_axes[h.name] = a.hw_axes.at(h.name);
  for (const PresetDesc& p : f.presets)
    if (a.preset_given.at(p.flag)->count() > 0) r.presets[p.flag] = a.presets.at(p.flag);
  r.hw = a.hw, r.zips = a.zips;
  auto text = [&](const char* flag, const std::string& value) {
    return a.opt.at(flag)->count() > 0 ? std::optional<std::string>(value) : std::nullopt;
  };
  r.group = text("--group", a.group), r.pareto = text("--pareto", a.pareto);
  r.top = text("--top", a.top), r.recheck = text("--recheck", a.recheck), r.chunk = text("--chunk", a.chunk);
  r.max_hours = text("--max-hours", a.max_hours), r.progress_every = text("--progress-every", a.progress_every);
  r.max_ops = a.max_ops.value();
  r.no_histogram = a.no_histogram, r.no_histogram_given = a.opt.at("--no-histogram")->count() > 0;
  r.space = a.space;
  r.topology = a.topo.request();
  r.backend = a.backend, r.shard = a.shard, r.out = a.out, r.csv = a.csv, r.json = a.json;
  return r;
}

void cmd_sweep(const SweepArgs& a) {
  api::TerminalSweepReporter terminal(cli_out(), cli_err());
  api::sweep(sweep_request(a), terminal);
}

// `merge`: the shards' files as a request (src/host/api/merge_shards.h).
CLI::App* add_merge_command(CLI::App& app, MergeArgs& a) {
  auto* cmd = app.add_subcommand(
      "merge", "combine the outputs of a sweep's shards (sweep ... --shard I/N --out FILE) into the output of one run");
  cmd->add_option("files", a.files, "the shards' JSON files, every shard of one sweep once")->required();
  cmd->add_flag("--json", a.json, "print one JSON object instead of tables");
  cmd->add_option("--out", a.out, "also write the JSON to FILE");
  cmd->add_option("--csv", a.csv, "also write the reported configs to FILE as CSV");
  a.max_ops.add(cmd, "; the re-check passes over larger configs");
  return cmd;
}

void cmd_merge(const MergeArgs& a) {
  api::MergeRequest r;
  r.files = a.files, r.out = a.out, r.csv = a.csv, r.json = a.json;
  r.max_ops = a.max_ops.value();
  api::TerminalSweepReporter terminal(cli_out(), cli_err());  // the outcome's tables or JSON
  api::merge(r, terminal);
}

}  // namespace kb
