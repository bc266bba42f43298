#pragma once

// Checks on a reservation data plane's record of actual resource uses, and the small
// WideResNet plan, shared by the reservation and NIC-sharing tests. Header-only, no state.

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "dataplane/ppipe/ppipe_plan.hpp"
#include "dataplane/ppipe/reservation_plane.hpp"

namespace tessera::reservation::testing {

// WideResNet-101 on 4 L4 + 4 T4 (2 per server, 50 Gbps, 1/5 effective):
//   pipeline 0: whole model on 2 L4, batch 2;
//   pipeline 1: blocks [0,4) on `t4` T4 -> [4,10) on `half_l4` half-L4 vGPUs, batch 1.
inline ppipe::PpipePlan wrn_plan(int t4 = 4, int half_l4 = 4) {
  ppipe::PpipePlan plan;
  plan.cluster.classes = {{"L4", 4, 2, 50.0, 4}, {"T4", 4, 2, 50.0, 4}};
  ppipe::DnnPlan d;
  d.dnn = "wide_resnet101_2";
  d.slo_ms = 67.1;
  ppipe::Pipeline whole;
  whole.batch = 2;
  whole.partitions.push_back({0, 10, "L4", 1, 2});
  ppipe::Pipeline split;
  split.batch = 1;
  split.partitions.push_back({0, 4, "T4", 1, t4});
  split.partitions.push_back({4, 10, "L4", 2, half_l4});
  d.pipelines = {whole, split};
  plan.dnns.push_back(d);
  return plan;
}

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
