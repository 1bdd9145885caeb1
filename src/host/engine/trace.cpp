// Chrome trace event export: complete ("X") events in microseconds, one thread per resource,
// one process per SIP; resource-less ops (waits, signals) are left out.
#include <nlohmann/json.hpp>

#include "engine.h"

namespace kb::engine {

std::string chrome_trace_json(const Graph& g, const RunResult& r) {
  using nlohmann::json;
  json events = json::array();
  const auto& res = g.resources();
  for (std::size_t i = 0; i < res.size(); ++i) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", res[i].sip}, {"tid", i},
                      {"args", {{"name", res[i].name}}}});
  }
  const auto& ops = g.ops();
  for (std::size_t i = 0; i < ops.size() && i < r.timing.size(); ++i) {
    const Op& op = ops[i];
    const OpTiming& t = r.timing[i];
    if (op.resource == kNoResource || t.start < 0) continue;
    json args = {{"op", i}, {"start_ps", t.start}, {"busy_ps", op.busy_ps}, {"latency_ps", op.latency_ps}};
    if (op.bytes) args["bytes"] = op.bytes;
    if (op.macs) args["macs"] = op.macs;
    if (op.cycles) args["cycles"] = op.cycles;
    events.push_back({{"ph", "X"},
                      {"name", std::string(to_string(op.kind))},
                      {"cat", g.labels()[static_cast<std::size_t>(op.label)]},
                      {"pid", res[static_cast<std::size_t>(op.resource)].sip},
                      {"tid", op.resource},
                      {"ts", static_cast<double>(t.start) / 1e6},
                      {"dur", static_cast<double>(op.busy_ps) / 1e6},
                      {"args", args}});
  }
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
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ns"}, {"links", links}};
  return doc.dump();
}

}  // namespace kb::engine
