// Names and engine classes of the network's links (src/device/common/network.h).
#pragma once

#include <string>

#include "../../device/common/network.h"
#include "../engine/graph.h"

namespace kb {

struct LinkInfo {
  std::string name;  // "sip0.cube1.pe0.ipcq_in", "sip0.cube0->cube1", "sip1->sip2", "sip0->switch"
  engine::ResourceClass cls;
  std::int32_t sip;  // the SIP it leaves from (the switch's links: the SIP they serve)
};

LinkInfo link_info(const HwConfig& h, std::int64_t link);

}  // namespace kb
