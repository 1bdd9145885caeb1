// The typed API under the command line and the Python package, for one config (`eval`): a
// request (what to run, as values, not command words), the runner that carries it out, and
// the result it found, which a reporter turns into what the user sees: the terminal's text,
// the --json document, or Python objects. The command line parses its words into an
// EvalRequest (src/host/cli/cmd_eval.cpp); the Python module builds one from keyword
// arguments (src/python/module.cpp). Every check is the runner's, so both get the same
// one-line errors. docs/adr/0029-typed-api.md says why.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/common/error.h"
#include "host/common/table.h"
#include "host/families/family.h"
#include "host/sweep/backend.h"
#include "host/topology/spec.h"

namespace kb::api {

// A topology as a request names it: a file and PATH=VALUE overrides. `set_origin` names the
// flag that set an override when it was not --set ("--ipcq-gbps 5"), so that two values for
// one field are refused naming both.
struct TopologyRequest {
  std::string path;         // "": topologies/default.yaml
  bool path_given = false;  // given and empty is refused (leave it out for the default)
  std::vector<std::string> sets;
  std::map<std::size_t, std::string> set_origin;

  TopologySpec load() const;
  // The flag that set field `path` (e.g. "--set cube.hbm.bandwidth_gbps=819"), or "".
  std::string setter_of(const std::string& field) const;
};

// --max-ops's text as a number: decimal digits in 1..2^31-1 (InputError naming the flag).
std::int64_t parse_max_ops(const std::string& text);

// One config of a family, run on the reference engine and/or the batched model. Values are
// the command line's texts for the axes (a number, a name, auto or best), keyed by name; an
// axis, hardware axis or preset absent from its map takes its default.
struct EvalRequest {
  const Family* family = nullptr;
  std::map<std::string, std::string> axes;     // axis name -> text ("" for a bare flag such as --allreduce)
  std::map<std::string, std::string> hw_axes;  // hardware axis name -> text
  std::map<std::string, std::string> presets;  // preset flag (--model) -> text
  TopologyRequest topology;
  std::string engine = "both";   // reference, batched or both
  std::string backend = "auto";  // auto, cuda or omp
  std::string trace;             // a Chrome trace of the reference run, when not empty
  std::optional<std::string> max_ops;  // --max-ops's text (none: kDefaultMaxOps)
  bool data = false;             // also a run with values against float64 (families with a data mode)
  std::string seed = "1";        // --data's seed
};

// What an eval found: the config, the axes picked as "best", each engine's figures and their
// parity, and the data run's comparison.
struct EvalResult {
  const Family* family = nullptr;
  std::string engine, trace;
  bool data = false;
  TopologySpec topology;
  std::vector<unsigned char> config;  // the family's config, completed
  std::vector<const AxisDesc*> best_axes;
  std::size_t candidates = 0, valid = 0;  // of the "best" pick
  BackendKind backend = BackendKind::omp;
  bool reference = false, batched = false;  // which engines ran
  std::string diff;                         // the parity figures that differ ("" when identical)
  Table config_table{std::vector<Column>{}};  // one row: the config
  Table figures{std::vector<Column>{}};       // the agreed figures, then the reference's and the batched model's
  nlohmann::json data_json;
  std::string data_line;
  nlohmann::json kernels;  // Family::kernels of the config (null: the family lists none)
};

// eval_config's refusal of a well-formed request whose config the model cannot run: its
// status is invalid (it does not fit the machine), or no candidate of its "best" axes is
// valid. One run reports it as any InputError; a sweep of runs (sweep serve) reports the
// config as one that cannot run, and goes on.
class InvalidConfig : public InputError {
 public:
  using InputError::InputError;
};

// A request's config, completed and checked (InputError naming the flag; InvalidConfig when
// it cannot run), with the topology it was made for and the axes picked as "best" (each
// evaluated on the batched model).
struct EvalConfig {
  TopologySpec topology;
  std::vector<unsigned char> config;
  std::vector<const AxisDesc*> best_axes;
  std::size_t candidates = 0, valid = 0;
};
EvalConfig eval_config(EvalRequest request);

// Runs the request: every check first (InputError naming the flag), then the engines. A
// parity failure is not thrown here: the result says so (`diff`), and eval() reports it
// before it throws.
EvalResult run_eval(EvalRequest request);

// The checks every request shares: each axis, hardware axis and preset named is the family's
// (InputError naming the family otherwise), and none has an empty text (`bare_empty`: an
// axis the family takes bare, as eval's flag alone, may be empty).
void check_named(const Family& f, const std::map<std::string, std::string>& axes,
                 const std::map<std::string, std::string>& hw_axes, const std::map<std::string, std::string>& presets,
                 bool bare_empty);
// "FLAG '': an empty value; leave the option out for its default".
InputError empty_value(const std::string& flag);

// What a user sees of an eval.
class EvalReporter {
 public:
  virtual ~EvalReporter() = default;
  virtual void report(const EvalResult& r) = 0;
};
// `eval --json`'s document; the reporters that write it, or the terminal's lines, to a stream.
nlohmann::json eval_json(const EvalResult& r);
class JsonEvalReporter : public EvalReporter {
 public:
  explicit JsonEvalReporter(std::ostream& out) : out_(out) {}
  void report(const EvalResult& r) override;

 private:
  std::ostream& out_;
};
class TerminalEvalReporter : public EvalReporter {
 public:
  explicit TerminalEvalReporter(std::ostream& out) : out_(out) {}
  void report(const EvalResult& r) override;

 private:
  std::ostream& out_;
};

// run_eval, then the report; a parity failure throws InternalError after it is reported.
void eval(const EvalRequest& request, EvalReporter& reporter);

}  // namespace kb::api
