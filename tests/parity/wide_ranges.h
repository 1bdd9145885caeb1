// Pieces of the wide-range random configs of the parity tests (allreduce and decode): grids
// in a line or a box, and hardware figures made equal and round, so that arbitration ties.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "device/common/hw.h"

namespace kb::testing {

// A grid: 1 x n or n x 1 up to `line`, or up to 4 x 8 either way round.
template <class Pick>
void random_grid(std::int64_t& rows, std::int64_t& cols, Pick& pick, std::int64_t line) {
  const int k = static_cast<int>(pick(0, 3));
  if (k == 0) rows = 1, cols = pick(1, line);
  else if (k == 1) rows = pick(1, line), cols = 1;
  else rows = pick(1, 4), cols = pick(1, 8);
  if (pick(0, 1)) std::swap(rows, cols);
}

// Every link of `links`, the HBM and the DMA engines at one round bandwidth (or twice it) and
// one round latency (or none), at a round clock: equal times, so that claims tie.
template <class Pick>
void round_figures(HwConfig& h, Pick& pick, std::initializer_list<LinkSpec*> links) {
  const std::int64_t round[] = {1, 2, 4, 8, 16, 64, 100, 128, 256, 1000, 1024, 4000};
  const std::int64_t bw = round[pick(0, 11)], lat = pick(0, 2) ? 0 : round[pick(0, 11)];
  for (LinkSpec* l : links) {
    l->bandwidth_gbps = pick(0, 3) ? bw : 2 * bw;
    l->latency_ns = pick(0, 3) ? lat : 0;
  }
  h.hbm_bandwidth_gbps = bw << pick(0, 4);
  h.hbm_latency_ns = pick(0, 1) ? lat : 0;
  h.dma_bandwidth_gbps = pick(0, 1) ? bw : 2 * bw;
  h.clock_mhz = pick(0, 1) ? 1000 : 2000;
}

}  // namespace kb::testing
