// The typed API's merge (ADR 0029): the outputs of one sweep's shards (sweep --shard I/N
// --out FILE), each checked field by field, combined into the outcome one run would have
// given, which the reporter shows (the tables or JSON, --out and --csv).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "host/api/sweep.h"

namespace kb::api {

struct MergeRequest {
  std::vector<std::string> files;  // every shard of one sweep, once
  std::string out, csv;
  bool json = false;
  std::optional<std::string> max_ops;  // --max-ops's text: the re-check passes over larger configs
};

void merge(const MergeRequest& request, SweepReporter& reporter);

}  // namespace kb::api
