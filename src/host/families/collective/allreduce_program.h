// Collectives on the reference runtime. The library call (`launch_collective`) issues the
// op graph of any config of src/device/models/collective/collective.h: ranks at one level (PEs of a
// cube, cubes of a SIP, SIPs), any algorithm, buffers in SRAM or HBM, chunked. The direct
// launch (`run_ring_direct`) is a hand-written ring allreduce over SRAM with explicit copies
// and vector adds, no library call: the original tool's parity reference, whose timeline the
// library's ring must match op for op.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "../../../device/models/collective/allreduce_model.h"
#include "../../runtime/context.h"

namespace kb {

struct CollectiveRun {
  RunReport report;
  std::vector<std::vector<float>> inputs;  // data mode: per rank, the values it started with
  std::vector<std::vector<float>> values;  // data mode: per rank, its buffer afterwards
  // Every op that occupied a resource: (resource, start, end), sorted.
  std::vector<std::tuple<std::string, ps_t, ps_t>> timeline;
};


// Runs the config (which allreduce_check must accept) through the library call; data mode
// fills every rank's buffer with random values from `seed`, or with inputs[r] (bytes / 2
// values a rank) when given.
CollectiveRun run_collective(const AllreduceConfig& c, bool data, std::uint64_t seed = 1,
                             const std::string* trace_path = nullptr,
                             const std::vector<std::vector<float>>* inputs = nullptr);

// The direct-launch ring allreduce (SRAM buffers, any level and chunking).
CollectiveRun run_ring_direct(const AllreduceConfig& c, bool data, std::uint64_t seed = 1);

// The ops run_collective builds for `c`, at most (found from the schedule, not the graph).
std::int64_t allreduce_reference_ops(const AllreduceConfig& c);
// The family's reference: the figures of run_collective, as the model reports them.
AllreduceResult allreduce_reference(const AllreduceConfig& c, const std::string* trace_path);

// Data mode's check: each rank's values after the run (run_collective's `values`) against
// what the op defines, computed in float64 from the inputs: the sum (allreduce: every rank;
// reduce: the root; reducescatter: each rank's own piece), or the pieces moved (allgather:
// piece k of every rank is rank k's; alltoall: piece k of rank r is rank k's piece r).
struct CollectiveDataCheck {
  std::int64_t values = 0;      // values compared
  std::int64_t wrong = 0;       // values outside the tolerance (f16 rounding of p - 1 adds; moved: exact)
  double max_abs_error = 0;     // against float64
  double max_abs_expected = 0;  // the largest |value| expected
};
CollectiveDataCheck collective_data_check(const AllreduceConfig& c, const CollectiveRun& run);
// Why a config cannot run in data mode ("" when it can): its values must fit in memory.
std::string collective_data_refusal(const AllreduceConfig& c);

// The one-line reason a status names, for `eval collective`.
std::string allreduce_status_message(std::int32_t status, const AllreduceConfig& c);

const char* to_string(CollLevel l);
const char* to_string(CollAlgo a);

}  // namespace kb
