// Figures of an allreduce config that neither engine computes: the alpha-beta-gamma model's
// time for it (src/host/analytical/collectives.h), with a, b and c from its level's links.
#pragma once

#include <cstdint>

#include "../../../device/models/collective/collective.h"
#include "../../analytical/collectives.h"

namespace kb {

// a: one step's latency (one hop of the level: a PE copy queue, a cube link, a SIP link;
// hier: each phase its own level's),
// b: ps per byte of that link, c: ps per byte of a vector-engine add (f16).
analytical::StepCosts collective_step_costs(const AllreduceConfig& c);

// The model's time for the config (0 when it has no model: a status other than valid).
std::int64_t collective_analytical_ps(const AllreduceConfig& c);

}  // namespace kb
