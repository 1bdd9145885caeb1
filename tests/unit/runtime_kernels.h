// Small kernels the runtime's tests share: a buffer on every PE, a copy between two ranks'
// instances, and a launch on cubes 0 and 1 in either order.
#pragma once

#include <initializer_list>

#include "host/runtime/context.h"

namespace kb::unittest {

// A buffer of `bytes` on every PE of the machine, for copies between any two ranks.
inline SymBuf everywhere(RuntimeContext& ctx, std::int64_t bytes) {
  const TopologySpec& t = ctx.topology();
  return ctx.symmetric(bytes, DType::f16, LaunchGrid{t.sips, t.cubes_per_sip(), t.pes_per_cube()}, "everywhere");
}

// `bytes` from this rank's instance of `s` to `to`'s.
inline OpId send_to(PeProgram& p, SymBuf s, const Rank& to, std::int64_t bytes, std::initializer_list<OpId> deps = {}) {
  return p.copy(p.local(s), to, p.at(s, to), bytes, deps);
}

// `kernel` launched on cubes 0..2 of one SIP in rank order or, `reversed`, on cube 1 and
// then on cube 0 alone (cube 1's ops added first).
template <typename Kernel>
void launch_cubes_0_and_1(RuntimeContext& ctx, bool reversed, Kernel&& kernel) {
  if (!reversed) {
    ctx.launch("both", LaunchGrid{1, 3, 1}, kernel);
    return;
  }
  ctx.launch("one", LaunchGrid{1, 2, 1}, [&](PeProgram& p) {
    if (p.rank().cube == 1) kernel(p);
  });
  ctx.launch("zero", LaunchGrid{1, 1, 1}, kernel);
}

}  // namespace kb::unittest
