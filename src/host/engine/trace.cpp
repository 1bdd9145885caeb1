// Chrome trace event export: complete ("X") events in microseconds, one thread per resource,
// one process per SIP; resource-less ops (waits, signals) are left out.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <sstream>
#include <vector>

#include "engine.h"
#include "host/common/json_stream.h"

namespace kb::engine {

void write_chrome_trace(std::ostream& os, const Graph& g, const RunResult& r) {
  using nlohmann::json;
  const auto& res = g.resources();
  const auto& ops = g.ops();
  // One event per resource (its name), then one per op that ran on a resource; each is made
  // as it is written, so a trace of millions of ops costs 4 bytes per op here.
  std::vector<std::uint32_t> ran;
  for (std::size_t i = 0; i < ops.size() && i < r.timing.size(); ++i)
    if (ops[i].resource != kNoResource && r.timing[i].start >= 0) ran.push_back(static_cast<std::uint32_t>(i));
  auto event = [&](std::int64_t e) -> json {
    if (e < static_cast<std::int64_t>(res.size())) {
      const std::size_t i = static_cast<std::size_t>(e);
      return {{"ph", "M"}, {"name", "thread_name"}, {"pid", res[i].sip}, {"tid", i}, {"args", {{"name", res[i].name}}}};
    }
    const std::size_t i = ran[static_cast<std::size_t>(e) - res.size()];
    const Op& op = ops[i];
    const OpTiming& t = r.timing[i];
    json args = {{"op", i}, {"start_ps", t.start}, {"busy_ps", op.busy_ps}, {"latency_ps", op.latency_ps}};
    if (op.bytes) args["bytes"] = op.bytes;
    if (op.macs) args["macs"] = op.macs;
    if (op.cycles) args["cycles"] = op.cycles;
    return {{"ph", "X"},
            {"name", std::string(to_string(op.kind))},
            {"cat", g.labels()[static_cast<std::size_t>(op.label)]},
            {"pid", res[static_cast<std::size_t>(op.resource)].sip},
            {"tid", op.resource},
            {"ts", static_cast<double>(t.start) / 1e6},
            {"dur", static_cast<double>(op.busy_ps) / 1e6},
            {"args", args}};
  };
  // Per link direction and port: what it carried and how long it was busy (trace viewers
  // ignore this key; tools read it).
  json links = json::array();
  for (std::size_t i = 0; i < res.size(); ++i) {
    const ResourceClass c = res[i].cls;
    if (c != ResourceClass::ipcq && c != ResourceClass::ipcq_out && c != ResourceClass::cube_link &&
        c != ResourceClass::sip_link)
      continue;
    links.push_back({{"name", res[i].name},
                     {"class", to_string(c)},
                     {"bytes", i < r.resource_bytes.size() ? r.resource_bytes[i] : 0},
                     {"busy_ps", i < r.resource_busy_ps.size() ? r.resource_busy_ps[i] : 0}});
  }
  const json doc = {{"traceEvents", nullptr}, {"displayTimeUnit", "ns"}, {"links", links}};
  write_json(os, doc, {{"/traceEvents", {static_cast<std::int64_t>(res.size() + ran.size()), event}}}, -1);
}

std::string chrome_trace_json(const Graph& g, const RunResult& r) {
  std::ostringstream os;
  write_chrome_trace(os, g, r);
  return os.str();
}

}  // namespace kb::engine
