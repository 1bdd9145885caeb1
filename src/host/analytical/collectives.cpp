#include "collectives.h"

#include <cmath>

#include "../../device/common/units.h"
#include "../common/error.h"

namespace kb::analytical {

const char* to_string(AllreduceAlgo a) {
  return a == AllreduceAlgo::ring ? "ring" : a == AllreduceAlgo::hd ? "hd" : "tree";
}

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
  }
  return std::llround(t);
}

double algbw_gbps(std::int64_t bytes, std::int64_t latency_ps) {
  // bytes per ps x 1000 = GB/s (10^9 bytes/s)
  return latency_ps > 0 ? 1000.0 * static_cast<double>(bytes) / static_cast<double>(latency_ps) : 0.0;
}

double allreduce_busbw_gbps(std::int64_t bytes, std::int64_t latency_ps, std::int64_t ranks) {
  return ranks > 0 ? algbw_gbps(bytes, latency_ps) * 2.0 * static_cast<double>(ranks - 1) / static_cast<double>(ranks)
                   : 0.0;
}

}  // namespace kb::analytical
