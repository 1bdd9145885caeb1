// `kernbench-gpu sweep gemm`: a space of GEMM configs evaluated by the batched model and
// reduced to the best per group, the top k, a Pareto front and a latency histogram.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "host/topology/spec.h"

namespace kb {

struct SweepGemmArgs {
  // One value list per axis (see parse_axis_values); empty: the default noted in --help.
  std::string m, n, k, tile_m = "auto", tile_n = "auto", tile_k = "auto", pes = "1", cubes = "1", buffers = "2";
  std::string dataflow, array_rows, array_cols;  // default: the topology's
  std::string group = "m,n,k";
  int top = 10;
  std::string pareto = "pes";
  bool no_histogram = false;
  std::string backend = "auto";
  std::int64_t chunk = 0;  // 0: 2^20 on OpenMP, 2^22 on CUDA
  bool json = false;
  std::string out;
};

void add_sweep_gemm_options(CLI::App* cmd, SweepGemmArgs& a);
// `sets`: the --set overrides behind `topo`, for the record.
void cmd_sweep_gemm(const SweepGemmArgs& a, const TopologySpec& topo, const std::vector<std::string>& sets);

}  // namespace kb
