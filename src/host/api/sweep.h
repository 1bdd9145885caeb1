// The typed API's sweep (ADR 0029): a request (the space and the options as values, each
// option's text as given, not command words), the runner that carries it out (the space
// built, its estimate, this process's part or shard of it, MPI, the reductions) and a
// reporter that sees what a user sees: the size and the estimate before the work, progress
// between chunks, every config's latency where asked for, and the outcome. The command line
// parses its words into a SweepRequest (src/host/cli/cmd_sweep.cpp); the Python module builds
// one from keyword arguments. Every check is the runner's.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host/api/eval.h"
#include "host/study/sweep_report.h"

namespace kb::api {

struct SweepRequest {
  const Family* family = nullptr;
  // The space: the axes, hardware axes and presets given (texts by name; a preset by its
  // flag), --hw lists (PATH=LIST), zips (NAMES=TUPLES) and the group; or a space file.
  std::map<std::string, std::string> axes, hw_axes, presets;
  std::vector<std::string> hw, zips;
  std::optional<std::string> group, pareto;
  std::string space;  // a space file ("-": standard input)
  TopologyRequest topology;
  // Options by their texts, absent when not given: the runner reads each by the one
  // integer rule and names the flag in an error.
  std::optional<std::string> top, recheck, chunk, max_hours, progress_every, max_ops;
  bool no_histogram = false, no_histogram_given = false;
  std::string backend = "auto";
  std::string shard;  // "I/N"
  std::string out, csv;
  bool json = false;  // the outcome as one JSON document (else tables)
};

// The space's size and how the sweep will run, known before any config is evaluated.
struct SweepPlan {
  const Family* family = nullptr;
  std::int64_t configs = 0, axes = 0, groups = 0;
  BackendKind backend = BackendKind::omp;
  std::string topology;  // its name and --set overrides, as the size line shows them
  int ranks = 1;         // MPI ranks
  std::int64_t shard_i = -1, shard_n = 0;
  std::int64_t shard_configs = 0, shard_block = 0;  // of this shard (or of each MPI rank's)
  bool quiet = false;                                // an MPI rank other than 0: reports nothing
  bool json = false;                                 // the request's --json
  double progress_every = 10;                        // the request's --progress-every
  // The estimate: the rate on a sample (0 configs sampled: too small to sample) and the rows
  // to write.
  double seconds = 0, rate = 0;
  std::int64_t sampled = 0, write_rows = 0, write_bytes = 0;
};

class SweepReporter {
 public:
  virtual ~SweepReporter() = default;
  // Before the work: the size and the estimate.
  virtual void planned(const SweepPlan&) {}
  // Between chunks: configs done of this process's `total`; `job` is the whole job's (MPI).
  virtual void progress(std::int64_t /*done*/, std::int64_t /*total*/, std::int64_t /*job*/, double /*seconds*/) {}
  // Whether progress() is wanted (a reporter that shows nothing saves the calls).
  virtual bool wants_progress() const { return false; }
  // Where every config's latency goes, in flat-index order (null: not wanted); `configs`
  // of them. Called once, before the work, and only for a sweep that is not a shard.
  virtual std::int64_t* latencies(std::int64_t /*configs*/) { return nullptr; }
  // Whether latencies are wanted (a shard refuses them).
  virtual bool wants_latencies() const { return false; }
  // The outcome: the files --out and --csv, written by report_sweep (a reporter adds where
  // the tables or the JSON go, or takes the document; this one shows nothing).
  virtual void finished(const SweepOutcome& o, SweepReportTo to);
  // After the work, when progress was shown on a live line: it is cleared.
  virtual void done() {}
};

// The command line's reporter: the size and estimate lines on `out` (`err` under --json),
// progress as a live line on a terminal or a line every --progress-every seconds otherwise
// (on `err`), and the outcome's tables or JSON on `out`.
class TerminalSweepReporter : public SweepReporter {
 public:
  TerminalSweepReporter(std::ostream& out, std::ostream& err) : out_(out), err_(err) {}
  void planned(const SweepPlan& p) override;
  void finished(const SweepOutcome& o, SweepReportTo to) override;
  void progress(std::int64_t done, std::int64_t total, std::int64_t job, double seconds) override;
  bool wants_progress() const override { return wants_; }
  void done() override;

 private:
  std::ostream& out_;
  std::ostream& err_;
  double every_ = 10;
  std::int64_t job_ = 0;
  bool wants_ = false, tty_ = false, shown_ = false;
  double last_ = 0;
};

// Runs the request: checks, the space, the estimate (and --max-hours), the work, the
// re-check, and the reporter's calls in order.
void sweep(const SweepRequest& request, SweepReporter& reporter);

}  // namespace kb::api
