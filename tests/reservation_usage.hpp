#pragma once

// Checks on a reservation data plane's record of actual resource uses, shared by the
// reservation and NIC-sharing tests. Header-only, no state.

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "dataplane/ppipe/reservation_plane.hpp"

namespace tessera::reservation::testing {

// The largest overlap between two actual uses of one resource, over the uses that are
// link transfers (`link` true) or steps on a vGPU (false); 0 when none overlap.
inline Time worst_overlap(const std::vector<ReservationPlane::Usage>& usage, bool link) {
  std::map<uint32_t, std::vector<std::pair<Time, Time>>> by;
  for (const auto& u : usage) {
    if (u.link == link) by[u.resource].push_back({u.start, u.end});
  }
  Time worst = 0.0;
  for (auto& [res, v] : by) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 1; i < v.size(); ++i) {
      worst = std::max(worst, v[i - 1].second - v[i].first);
    }
  }
  return worst;
}

}  // namespace tessera::reservation::testing
