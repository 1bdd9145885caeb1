// Matrix-engine timing: the analytical systolic-array model of SCALE-Sim (Samajdar et al.,
// "A Systematic Methodology for Characterizing Scalability of DNN Accelerators using
// SCALE-Sim", ISPASS 2020), as SCALE-Sim v2 (scalesim-project/scale-sim-v2) computes it. See
// docs/model.md section 3 for the derivation.
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
// ceil(Sr/rows) * ceil(Sc/cols) folds are needed, a partial fold costing a full one (SCALE-Sim
// pads it with idle rows and columns). A ws or is fold first loads the stationary operand
// (rows cycles), then streams T values with the skew of the array (rows + cols + T - 2): 2 rows
// + cols + T - 2. An os fold streams both operands in, skewed, and drains its outputs while the
// next operands stream: T + rows + cols - 2 (SCALE-Sim v2's systolic_compute_os; the paper's
// 2 rows + cols + T - 2 charged a separate drain of rows cycles). SCALE-Sim v2 reports one
// cycle less for a whole GEMM, as it numbers cycles from 0.
KB_HD constexpr std::int64_t systolic_cycles(std::int64_t m, std::int64_t n, std::int64_t k,
                                             std::int64_t rows, std::int64_t cols, Dataflow df) {
  const std::int64_t sr = df == Dataflow::os ? m : k;
  const std::int64_t sc = df == Dataflow::is ? m : n;
  const std::int64_t t = df == Dataflow::os ? k : (df == Dataflow::ws ? m : n);
  const std::int64_t fold = df == Dataflow::os ? t + rows + cols - 2 : 2 * rows + cols + t - 2;
  return ceil_div(sr, rows) * ceil_div(sc, cols) * fold;
}

}  // namespace kb
