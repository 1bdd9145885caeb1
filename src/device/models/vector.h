// Vector-engine timing, for both engines (docs/model.md section 4). A vector op works on
// `lanes` elements per cycle, pipelined, with no latency beyond its busy time.
#pragma once

#include <cstdint>

#include "../common/kb_hd.h"
#include "../common/units.h"

namespace kb {

enum class VecOp : std::int32_t {
  add = 0, mul, max, scale, exp, row_sum, row_max,
  copy, sub,                 // dst = src; dst -= src
  row_sub, row_mul, row_div,  // dst[r, c] -= / *= / /= src[r]: one value per row, broadcast along it
  // The layer program's (docs/model.md section 13.4): dst[r] = sum over c of src[r, c]^2;
  // dst = 1 / sqrt(dst s + eps); dst[r, c] *= src[c]; rotary embedding of each head of
  // dst[r, :] by the row's cos and sin in src; dst = dst sigmoid(dst) (SiLU).
  row_sumsq, rsqrt, col_mul, rope, silu
};

// exp is range reduction, a polynomial and a scale by a power of two: four passes of the
// lanes instead of one.
constexpr std::int64_t kExpPasses = 4;

// Cycles of op over `rows` x `cols` elements. Elementwise ops (add, mul, max, scale, exp,
// copy, sub) and the row-broadcast ops (row_sub, row_mul, row_div) treat them as rows·cols
// values, one pass each (a divider is assumed pipelined like the other lanes' units). A row reduction adds (or takes the max of) each row's
// values into the lanes, ceil(cols / lanes) cycles, then folds the lanes in a tree of
// ceil(log2(min(lanes, cols))) cycles; rows one after another. The layer program's ops are
// passes of these: row_sumsq a multiply pass then a row sum; rsqrt exp-class (a seed and
// Newton steps); col_mul one pass; rope three (x cos, the rotated half x sin, their sum);
// silu exp's passes, an add, a divide and a multiply (x / (1 + e^-x)).
KB_HD constexpr std::int64_t vector_cycles(VecOp op, std::int64_t rows, std::int64_t cols, std::int64_t lanes) {
  switch (op) {
    case VecOp::row_sum:
    case VecOp::row_max:
      return rows * (ceil_div(cols, lanes) + ceil_log2(cols < lanes ? cols : lanes));
    case VecOp::row_sumsq:
      return ceil_div(rows * cols, lanes) + rows * (ceil_div(cols, lanes) + ceil_log2(cols < lanes ? cols : lanes));
    case VecOp::exp:
    case VecOp::rsqrt: return kExpPasses * ceil_div(rows * cols, lanes);
    case VecOp::rope: return 3 * ceil_div(rows * cols, lanes);
    case VecOp::silu: return (kExpPasses + 3) * ceil_div(rows * cols, lanes);
    default: return ceil_div(rows * cols, lanes);
  }
}

}  // namespace kb
