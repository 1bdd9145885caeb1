// merge's reader of a shard's summary (JSON), for a space of 4 groups and 10 statuses.
#include <nlohmann/json.hpp>

#include <string>

#include "fuzz.h"
#include "host/common/error.h"
#include "host/sweep/merge.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;  // not JSON: merge reports that before reading a summary
  try {
    kb::batched::SweepSummary acc = kb::empty_summary(4, 10, true);
    const kb::batched::SweepSummary s = kb::summary_from_json(j, 4, 10, "fuzz");
    kb::merge_summary(acc, s, 5);
    kb::summary_json(acc);
  } catch (const kb::InputError&) {
  }
  return 0;
}
