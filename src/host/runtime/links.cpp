#include "links.h"

#include "../common/error.h"

namespace kb {

LinkInfo link_info(const HwConfig& h, std::int64_t id) {
  using engine::ResourceClass;
  auto pe_name = [&](std::int64_t g) {
    const std::int64_t pe = g % h.pes_per_cube(), cube = g / h.pes_per_cube();
    return "sip" + std::to_string(cube / h.cubes_per_sip()) + ".cube" + std::to_string(cube % h.cubes_per_sip()) +
           ".pe" + std::to_string(pe);
  };
  auto sip_of_pe = [&](std::int64_t g) { return static_cast<std::int32_t>(g / h.pes_per_cube() / h.cubes_per_sip()); };
  if (id < net::ipcq_in_base(h)) return {pe_name(id) + ".ipcq_out", ResourceClass::ipcq_out, sip_of_pe(id)};
  if (id < net::cube_link_base(h)) {
    const std::int64_t g = id - net::ipcq_in_base(h);
    return {pe_name(g) + ".ipcq_in", ResourceClass::ipcq, sip_of_pe(g)};
  }
  if (id < net::sip_link_base(h)) {
    const std::int64_t k = id - net::cube_link_base(h), cube = k / 4 % h.cubes_per_sip(), sip = k / 4 / h.cubes_per_sip();
    const std::int64_t d = k % 4;
    const std::int64_t to = d == net::kEast ? cube + 1 : d == net::kWest ? cube - 1 : d == net::kSouth ? cube + h.cube_cols : cube - h.cube_cols;
    return {"sip" + std::to_string(sip) + ".cube" + std::to_string(cube) + "->cube" + std::to_string(to),
            ResourceClass::cube_link, static_cast<std::int32_t>(sip)};
  }
  KB_INTERNAL_CHECK(id < net::link_count(h), "link id out of range");
  const std::int64_t k = id - net::sip_link_base(h), n = h.sips;
  auto sip = [](std::int64_t s) { return "sip" + std::to_string(s); };
  if (h.sip_topology == SipTopology::fully_connected) {
    const std::int64_t a = k / (n - 1), r = k % (n - 1), b = r < a ? r : r + 1;
    return {sip(a) + "->" + sip(b), ResourceClass::sip_link, static_cast<std::int32_t>(a)};
  }
  if (h.sip_topology == SipTopology::switch_)
    return k < n ? LinkInfo{sip(k) + "->switch", ResourceClass::sip_link, static_cast<std::int32_t>(k)}
                 : LinkInfo{"switch->" + sip(k - n), ResourceClass::sip_link, static_cast<std::int32_t>(k - n)};
  const std::int64_t s = k / 2, to = ((s + (k % 2 ? -1 : 1)) % n + n) % n;
  // On a ring of two, both ways lead to the same neighbour: the backward links say so.
  return {sip(s) + "->" + sip(to) + (n == 2 && k % 2 ? " (backward)" : ""), ResourceClass::sip_link,
          static_cast<std::int32_t>(s)};
}

}  // namespace kb
