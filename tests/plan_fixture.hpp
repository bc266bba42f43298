#pragma once

// A tiny planning problem shared by the controller tests (simulated and live re-planning):
// det -> cls, one variant each ("d", "c"), on a 1g/2g MIG catalogue, profiles for batch
// 1 and 4 (the 2g slices 0.6x faster). Enough to plan, small enough to be solved in
// milliseconds. Header-only; each call builds a fresh value.

#include "plan/jigsawserve/problem.hpp"

namespace tessera::testing {

inline plan::PlanInput tiny_plan_input() {
  plan::PlanInput in;
  in.app.name = "tiny";
  in.app.slo = 1.0;
  Task det{"det", {{"d", 1.0, 2.0}}, {}, {}, {}, {}};
  Task cls{"cls", {{"c", 1.0, 1.0}}, {}, {}, {}, {}};
  in.app.tasks = {det, cls};
  in.app.edges = {Edge{0, 1, EdgeMode::kAll, {}, 0.0}};
  in.app.finalize();
  in.catalogue.mig = {{"1g", 1, 1, {0, 1, 2, 3, 4, 5, 6}, 1}, {"2g", 2, 2, {0, 2, 4}, 2}};
  in.catalogue.mps_max = 1;
  in.catalogue.build_segments();
  in.batch_sizes = {1, 4};
  for (const auto& seg : in.catalogue.segments) {
    const double speed = seg.name.rfind("2g", 0) == 0 ? 0.6 : 1.0;
    in.profiles.add("d", seg.name, 1, 20 * speed);
    in.profiles.add("d", seg.name, 4, 40 * speed);
    in.profiles.add("c", seg.name, 1, 10 * speed);
    in.profiles.add("c", seg.name, 4, 20 * speed);
  }
  in.slices = 14;
  in.latency_slo_ms = 1000;
  in.accuracy_slo = 0.9;
  return in;
}

}  // namespace tessera::testing
