#include "figures.h"

namespace kb {

std::string figures_diff(const Family& f, const void* config, const void* ref, const void* exec) {
  std::string d;
  for (const ColumnDesc& c : f.columns) {
    if (!c.parity) continue;
    const nlohmann::json a = c.get(config, ref), b = c.get(config, exec);
    if (a != b) d += (d.empty() ? "" : ", ") + c.name + " " + a.dump() + " != " + b.dump();
  }
  return d;
}

}  // namespace kb
