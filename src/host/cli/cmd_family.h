// `eval NAME` and `sweep NAME` for every workload family, from its descriptor.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "host/api/eval.h"
#include "host/families/family.h"

namespace kb {

struct TopoArgs {
  std::string path;
  std::vector<std::string> sets;
  // Where each entry of `sets` came from, when not --set ("--ipcq-gbps 5"): two entries
  // for one field are refused, naming both.
  std::map<std::size_t, std::string> set_origin;
  CLI::Option* given = nullptr;  // --topology, to tell an empty path from none
  void add(CLI::App* app, bool positional);
  api::TopologyRequest request() const;
  TopologySpec load() const { return request().load(); }
  // The flag that set field `path` (e.g. "--set cube.hbm.bandwidth_gbps=819"), or "".
  std::string setter_of(const std::string& path) const;
};
std::string default_topology();

// --max-ops, as eval, sweep and merge take it: decimal digits in 1..2^31-1, kDefaultMaxOps
// when the option is absent.
struct MaxOpsArg {
  std::string text;
  CLI::Option* given = nullptr;
  void add(CLI::App* app, const std::string& more_help);
  std::optional<std::string> value() const;  // its text as given; none when not given
};

struct EvalArgs {
  const Family* family = nullptr;
  std::map<std::string, std::string> presets;  // preset flag -> value text
  std::map<std::string, CLI::Option*> preset_given;
  std::map<std::string, std::string> axes;     // axis name -> value text (given ones only)
  std::map<std::string, std::string> hw_axes;  // hardware axis name -> value text
  std::map<std::string, CLI::Option*> given;
  TopoArgs topo;
  std::string trace, engine = "both", backend = "auto";
  MaxOpsArg max_ops;  // the reference run's op cap
  bool json = false;
  bool data = false;  // --data (families with a data mode)
  std::string seed = "1";
};

struct SweepArgs {
  const Family* family = nullptr;
  std::map<std::string, std::string> presets;  // preset flag -> value text
  std::map<std::string, CLI::Option*> preset_given;
  std::map<std::string, std::string> axes, hw_axes;
  std::map<std::string, CLI::Option*> given;
  std::vector<std::string> hw, zips;
  // Numbers are taken as text and read by the one strict parser (decimal digits only);
  // an option not given is empty, so that a space file's value applies unless it is.
  std::string group;
  std::string top;     // default 10
  std::string pareto;
  bool no_histogram = false;
  std::string backend = "auto";
  std::string chunk;   // 0 (default): 2^20 on OpenMP, 2^22 on CUDA
  bool json = false;
  std::string out, csv;
  TopoArgs topo;
  std::string space;       // a space file (src/host/sweep/space_file.h)
  std::string shard;       // "I/N": evaluate shard I of N and write its mergeable summary
  std::string recheck;         // re-run the N fastest configs on the reference engine (0: none); default 10
  std::string progress_every;  // seconds between progress lines when stderr is not a terminal; default 10
  std::string max_hours;       // refuse a space whose estimated time is longer (0: no limit); default 24
  MaxOpsArg max_ops;           // re-check only configs whose reference run builds at most this many ops
  std::map<std::string, CLI::Option*> opt;  // the options above by flag, to tell given from not
};

struct MergeArgs {
  std::vector<std::string> files;
  bool json = false;
  std::string out, csv;
  MaxOpsArg max_ops;  // as sweep's
};

CLI::App* add_eval_command(CLI::App* eval, EvalArgs& a);
CLI::App* add_sweep_command(CLI::App* sweep, SweepArgs& a);
void cmd_eval(const EvalArgs& a);
void cmd_sweep(const SweepArgs& a);
CLI::App* add_merge_command(CLI::App& app, MergeArgs& a);
void cmd_merge(const MergeArgs& a);

// `model list`, `model show` (cmd_model.cpp).
struct ModelArgs {
  CLI::App *cmd = nullptr, *list = nullptr, *show = nullptr, *place = nullptr;
  std::string model, weight_bytes, kv_bytes = "2", context = "4096";  // weight_bytes "": the file's, else 2
  std::string phase = "decode", batch = "1", prompt = "2048", tp = "1", tp_level = "cube", pp = "1", pp_layers;
  CLI::Option *pp_given = nullptr, *pp_layers_given = nullptr;
  TopoArgs topo;
  bool json = false;
};
void add_model_commands(CLI::App& app, ModelArgs& a);
void cmd_model(const ModelArgs& a);

}  // namespace kb
