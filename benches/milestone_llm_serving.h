// The runs of milestone-llm-serving, for the bench and its tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/api/serve.h"

namespace kb {

// A serving setup: a model, a tensor-parallel mapping over SIPs, aggregated ("" ) or
// disaggregated ("P:D"), and the arrival rates it is run at (requests a second).
struct ServingSetup {
  std::string model, name;
  std::int64_t tp;
  std::string disagg;
  std::vector<double> rates;
};
const std::vector<ServingSetup>& serving_setups();

inline const char* const kServingIsl = "lognormal:1024:0.6";
inline const char* const kServingOsl = "lognormal:256:0.5";
constexpr std::int64_t kServingRequests = 400;

// The serve request of one run: `setup` at `rate` on the topology file given.
api::ServeRequest serving_request(const ServingSetup& setup, double rate, const std::string& topology_path);

}  // namespace kb
