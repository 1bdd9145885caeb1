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

// Element-ops of op (what the vector engine's energy per element-op is charged for): each
// pass of vector_cycles over the rows·cols values, one element-op per value (the lanes a
// last cycle leaves idle and a reduction's fold are not counted).
KB_HD constexpr std::int64_t vector_element_ops(VecOp op, std::int64_t rows, std::int64_t cols) {
  switch (op) {
    case VecOp::row_sumsq: return 2 * rows * cols;
    case VecOp::exp:
    case VecOp::rsqrt: return kExpPasses * rows * cols;
    case VecOp::rope: return 3 * rows * cols;
    case VecOp::silu: return (kExpPasses + 3) * rows * cols;
    default: return rows * cols;
  }
}

// SRAM bytes op reads and writes, with dst and src holding dst_bytes and src_bytes a value:
// every operand value read once, every result written once. Reductions read src and write one
// value per row of dst; unary ops (scale, exp, rsqrt, silu) work in place on dst; copy reads
// src; the elementwise binary ops read dst and src; the broadcasts read dst and one src value
// per row (row_sub, row_mul, row_div) or per column (col_mul); rope reads dst and the rows'
// cos/sin table of `period` values each.
struct SramBytes {
  std::int64_t read, write;
};
KB_HD constexpr SramBytes vector_sram(VecOp op, std::int64_t rows, std::int64_t cols, std::int64_t dst_bytes,
                                       std::int64_t src_bytes, std::int64_t period = 0) {
  const std::int64_t n = rows * cols;
  switch (op) {
    case VecOp::row_sum:
    case VecOp::row_max:
    case VecOp::row_sumsq: return SramBytes{n * src_bytes, rows * dst_bytes};
    case VecOp::scale:
    case VecOp::exp:
    case VecOp::rsqrt:
    case VecOp::silu: return SramBytes{n * dst_bytes, n * dst_bytes};
    case VecOp::copy: return SramBytes{n * src_bytes, n * dst_bytes};
    case VecOp::row_sub:
    case VecOp::row_mul:
    case VecOp::row_div: return SramBytes{n * dst_bytes + rows * src_bytes, n * dst_bytes};
    case VecOp::col_mul: return SramBytes{n * dst_bytes + cols * src_bytes, n * dst_bytes};
    case VecOp::rope: return SramBytes{n * dst_bytes + rows * period * src_bytes, n * dst_bytes};
    default: return SramBytes{n * (dst_bytes + src_bytes), n * dst_bytes};  // add, mul, max, sub
  }
}

}  // namespace kb

namespace kb {

// SRAM bytes of a matmul C (m x n) = A (m x k) B (k x n), plus C when it accumulates: A, B
// and (then) C read once, C written once, each at its buffer's value size.
KB_HD constexpr SramBytes matmul_sram(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t a_bytes,
                                      std::int64_t b_bytes, std::int64_t c_bytes, bool accumulate) {
  return SramBytes{m * k * a_bytes + k * n * b_bytes + (accumulate ? m * n * c_bytes : 0), m * n * c_bytes};
}

}  // namespace kb
