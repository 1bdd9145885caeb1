#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spec.h"

namespace kb {

// The machine's peak fp16 rate, TFLOP/s (2 flops per MAC per cycle, every PE).
double peak_fp16_tflops(const HwConfig& h);

// Totals of a topology for `topo show`.
nlohmann::json topology_summary(const TopologySpec& t);
std::string topology_summary_text(const TopologySpec& t);

}  // namespace kb
