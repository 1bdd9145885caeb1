// Matrix-engine timing: the analytical systolic-array model published with SCALE-Sim
// (Samajdar et al., "A Systematic Methodology for Characterizing Scalability of DNN
// Accelerators using SCALE-Sim", ISPASS 2020). See docs/model.md for the derivation.
#pragma once

#include <cstdint>

#include "../common/kb_hd.h"
#include "../common/hw.h"
#include "../common/units.h"

namespace kb {

// Cycles for C[m,n] += A[m,k] * B[k,n] on a rows x cols array.
// The dataflow picks which GEMM dimensions are spatial (Sr on array rows, Sc on array
// columns) and which one streams in time (T):
//   os: Sr = m, Sc = n, T = k      ws: Sr = k, Sc = n, T = m      is: Sr = k, Sc = m, T = n
// Each fold of the array costs fill + stream + drain = 2*rows + cols + T - 2 cycles, and
// ceil(Sr/rows) * ceil(Sc/cols) folds are needed; partial folds cost a full fold.
KB_HD constexpr std::int64_t systolic_cycles(std::int64_t m, std::int64_t n, std::int64_t k,
                                             std::int64_t rows, std::int64_t cols, Dataflow df) {
  const std::int64_t sr = df == Dataflow::os ? m : k;
  const std::int64_t sc = df == Dataflow::is ? m : n;
  const std::int64_t t = df == Dataflow::os ? k : (df == Dataflow::ws ? m : n);
  return ceil_div(sr, rows) * ceil_div(sc, cols) * (2 * rows + cols + t - 2);
}

}  // namespace kb
