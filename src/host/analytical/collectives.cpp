#include "collectives.h"

#include <algorithm>
#include <cmath>

#include "../../device/common/units.h"
#include "../common/error.h"

namespace kb::analytical {

std::int64_t allreduce_ps(AllreduceAlgo algo, std::int64_t p, std::int64_t n, const StepCosts& k) {
  if (p < 2) throw InputError("allreduce: at least 2 ranks (got " + std::to_string(p) + ")");
  if (n < 1) throw InputError("allreduce: at least 1 byte (got " + std::to_string(n) + ")");
  const double share = static_cast<double>(p - 1) / static_cast<double>(p), bytes = static_cast<double>(n);
  const double lg = static_cast<double>(ceil_log2(p));
  double t = 0;
  switch (algo) {
    case AllreduceAlgo::ring:
      t = 2.0 * static_cast<double>(p - 1) * k.alpha_ps + 2.0 * share * bytes * k.beta_ps_per_byte +
          share * bytes * k.gamma_ps_per_byte;
      break;
    case AllreduceAlgo::hd:
      if ((p & (p - 1)) != 0)
        throw InputError("allreduce hd: recursive halving and doubling needs a power of two ranks (got " +
                         std::to_string(p) + ")");
      t = 2.0 * lg * k.alpha_ps + 2.0 * share * bytes * k.beta_ps_per_byte + share * bytes * k.gamma_ps_per_byte;
      break;
    case AllreduceAlgo::tree:
      t = 2.0 * lg * (k.alpha_ps + bytes * k.beta_ps_per_byte) + lg * bytes * k.gamma_ps_per_byte;
      break;
    case AllreduceAlgo::mesh2d:
    case AllreduceAlgo::root:
      throw InputError(std::string("allreduce ") + kCollAlgoNames[static_cast<int>(algo)] + ": the model needs the grid (collective_ps)");
    case AllreduceAlgo::pairwise: throw InputError("allreduce: pairwise exchange is an all-to-all's algorithm");
  }
  return std::llround(t);
}

std::int64_t collective_ps(AllreduceAlgo algo, bool reduce, std::int64_t rows, std::int64_t cols, std::int64_t n,
                           const StepCosts& k) {
  const std::int64_t p = rows * cols;
  if (rows < 1 || cols < 1 || p < 2) throw InputError("collective: at least 2 ranks (got " + std::to_string(p) + ")");
  if (n < 1) throw InputError("collective: at least 1 byte (got " + std::to_string(n) + ")");
  const double a = k.alpha_ps, b = k.beta_ps_per_byte, c = k.gamma_ps_per_byte, bytes = static_cast<double>(n);
  const double share = static_cast<double>(p - 1) / static_cast<double>(p);
  // A ring reduce-scatter (or all-gather, without c) of m bytes over q ranks.
  auto rs = [&](std::int64_t q, double m, bool add) {
    const double f = static_cast<double>(q - 1) / static_cast<double>(q);
    return static_cast<double>(q - 1) * a + f * m * (b + (add ? c : 0.0));
  };
  const double gather = a + share * bytes * b;  // p - 1 pieces into one rank, one after another
  if (!reduce && algo != AllreduceAlgo::mesh2d && algo != AllreduceAlgo::root) return allreduce_ps(algo, p, n, k);
  double t = 0;
  switch (algo) {
    case AllreduceAlgo::ring: t = rs(p, bytes, true) + gather; break;
    case AllreduceAlgo::hd:
      if ((p & (p - 1)) != 0)
        throw InputError("reduce hd: recursive halving needs a power of two ranks (got " + std::to_string(p) + ")");
      t = static_cast<double>(ceil_log2(p)) * a + share * bytes * (b + c) + gather;
      break;
    case AllreduceAlgo::tree: t = static_cast<double>(ceil_log2(p)) * (a + bytes * (b + c)); break;
    case AllreduceAlgo::mesh2d: {
      const double row = rs(cols, bytes, true), col = rs(rows, bytes / static_cast<double>(cols), true);
      t = reduce ? row + col + gather
                 : row + col + rs(rows, bytes / static_cast<double>(cols), false) + rs(cols, bytes, false);
      break;
    }
    case AllreduceAlgo::root: {
      const std::int64_t r0 = rows / 2, c0 = cols / 2;
      const double steps = static_cast<double>(std::max(c0, cols - 1 - c0) + std::max(r0, rows - 1 - r0));
      t = steps * (a + bytes * (b + c)) + (reduce ? 0.0 : steps * (a + bytes * b));
      break;
    }
    case AllreduceAlgo::pairwise: throw InputError("allreduce: pairwise exchange is an all-to-all's algorithm");
  }
  return std::llround(t);
}

std::int64_t collective_op_ps(CollOp op, AllreduceAlgo algo, std::int64_t rows, std::int64_t cols, std::int64_t n,
                              const StepCosts& k) {
  if (op == CollOp::allreduce || op == CollOp::reduce) return collective_ps(algo, op == CollOp::reduce, rows, cols, n, k);
  const std::int64_t p = rows * cols;
  if (rows < 1 || cols < 1 || p < 2) throw InputError("collective: at least 2 ranks (got " + std::to_string(p) + ")");
  if (n < 1) throw InputError("collective: at least 1 byte (got " + std::to_string(n) + ")");
  const double a = k.alpha_ps, b = k.beta_ps_per_byte, c = k.gamma_ps_per_byte, bytes = static_cast<double>(n);
  const double share = static_cast<double>(p - 1) / static_cast<double>(p);
  const std::string name = kCollOpNames[static_cast<int>(op)];
  if (op == CollOp::alltoall) {
    if (algo != AllreduceAlgo::pairwise) throw InputError(name + ": runs by pairwise exchange");
    return std::llround(static_cast<double>(p - 1) * (a + b * bytes / static_cast<double>(p)));
  }
  if (op != CollOp::allgather && op != CollOp::reducescatter) throw InputError("collective: not a config's op");
  double steps = 0;
  if (algo == AllreduceAlgo::ring) {
    steps = static_cast<double>(p - 1);
  } else if (algo == AllreduceAlgo::hd) {
    if ((p & (p - 1)) != 0)
      throw InputError(name + " hd: recursive halving or doubling needs a power of two ranks (got " + std::to_string(p) + ")");
    steps = static_cast<double>(ceil_log2(p));
  } else {
    throw InputError(name + ": runs on a ring or by halving-doubling");
  }
  return std::llround(steps * a + share * bytes * (b + (op == CollOp::reducescatter ? c : 0.0)));
}

double algbw_gbps(std::int64_t bytes, std::int64_t latency_ps) {
  // bytes per ps x 1000 = GB/s (10^9 bytes/s)
  return latency_ps > 0 ? 1000.0 * static_cast<double>(bytes) / static_cast<double>(latency_ps) : 0.0;
}

double busbw_gbps(CollOp op, std::int64_t bytes, std::int64_t latency_ps, std::int64_t ranks) {
  if (ranks <= 0) return 0.0;
  const double p = static_cast<double>(ranks), algbw = algbw_gbps(bytes, latency_ps);
  switch (op) {
    case CollOp::allreduce: return algbw * 2.0 * (p - 1.0) / p;
    case CollOp::allgather:
    case CollOp::reducescatter:
    case CollOp::alltoall: return algbw * (p - 1.0) / p;
    case CollOp::reduce:
    case CollOp::bcast: return algbw;
  }
  return algbw;
}

double allreduce_busbw_gbps(std::int64_t bytes, std::int64_t latency_ps, std::int64_t ranks) {
  return ranks > 0 ? algbw_gbps(bytes, latency_ps) * 2.0 * static_cast<double>(ranks - 1) / static_cast<double>(ranks)
                   : 0.0;
}

}  // namespace kb::analytical
