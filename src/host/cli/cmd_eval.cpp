// `kernbench-gpu eval NAME`: one config of a family on the reference engine and/or the
// batched model, with every figure of the family's results table. The words become an
// api::EvalRequest; the runner and the reporters are src/host/api/eval.h.
#include "cmd_family.h"
#include "host/api/eval.h"
#include "host/sweep/space.h"

namespace kb {

CLI::App* add_eval_command(CLI::App* eval, EvalArgs& a) {
  const Family& f = *a.family;
  auto* cmd = eval->add_subcommand(f.name, f.description + ", on the reference engine and/or the batched model");
  for (const std::string& alias : f.aliases) cmd->alias(alias);
  for (const AxisDesc& ax : f.axes) {
    std::string help = ax.help;
    if (!ax.names.empty()) help += " (" + one_of(ax.names) + ")";
    if (!ax.best.empty()) help += "; best: the one of least latency of " + ax.best;
    if (!ax.fallback.empty() && ax.fallback != "auto") help += " [default: " + ax.fallback + "]";
    auto* opt = cmd->add_option(ax.flag, a.axes[ax.name], help);
    if (ax.fallback.empty()) opt->required();
    if (f.bare.count(ax.name)) opt->expected(0, 1);
    a.given[ax.name] = opt;
  }
  for (const HwAxisDesc& h : f.hw_axes)
    a.given[h.name] = cmd->add_option(h.flag, a.hw_axes[h.name], h.help + " (same as --set " + h.path + "=...)");
  for (const PresetDesc& p : f.presets)
    a.preset_given[p.flag] = cmd->add_option(p.flag, a.presets[p.flag], p.help + "; a flag of its own overrides one value");
  cmd->add_option("--engine", a.engine, "reference, batched or both")->capture_default_str();
  cmd->add_option("--backend", a.backend, "batched-model backend: auto, cuda or omp")->capture_default_str();
  cmd->add_option("--trace", a.trace, "write a Chrome trace (Perfetto) of the reference run to FILE");
  a.max_ops.add(cmd, "");
  if (f.data_run) {
    cmd->add_flag("--data", a.data,
                  "also run the reference engine with values (random weights from --seed) and compare its output with a "
                  "float64 forward pass");
    cmd->add_option("--seed", a.seed, "the seed of --data's values")->capture_default_str();
  }
  cmd->add_flag("--json", a.json, "print one JSON object");
  a.topo.add(cmd, false);
  return cmd;
}

// The parsed words as a request: the values given (a bare flag's as ""), by name.
api::EvalRequest eval_request(const EvalArgs& a) {
  const Family& f = *a.family;
  api::EvalRequest r;
  r.family = &f;
  for (const AxisDesc& ax : f.axes)
    if (a.given.at(ax.name)->count() != 0) r.axes[ax.name] = a.axes.at(ax.name);
  for (const HwAxisDesc& h : f.hw_axes)
    if (a.given.at(h.name)->count() != 0) r.hw_axes[h.name] = a.hw_axes.at(h.name);
  for (const PresetDesc& p : f.presets)
    if (a.preset_given.at(p.flag)->count() != 0) r.presets[p.flag] = a.presets.at(p.flag);
  r.topology = a.topo.request();
  r.engine = a.engine, r.backend = a.backend, r.trace = a.trace;
  r.max_ops = a.max_ops.value();
  r.data = a.data, r.seed = a.seed;
  return r;
}

void cmd_eval(const EvalArgs& a) {
  const api::EvalRequest request = eval_request(a);
  api::JsonEvalReporter json(cli_out());
  api::TerminalEvalReporter terminal(cli_out());
  api::eval(request, a.json ? static_cast<api::EvalReporter&>(json) : terminal);
}

}  // namespace kb
