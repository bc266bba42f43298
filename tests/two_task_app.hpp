// Test helper: a two-task app ("a" and "b", no edges, one variant each at accuracy 1 and
// fan-out 1, SLO 0.1 s) for tests of per-task metrics. Header-only; each call returns a new,
// finalized App.
#pragma once

#include <string>

#include "engine/app.hpp"

namespace tessera::testing {

inline App two_task_app(const std::string& name) {
  App app;
  app.name = name;
  app.slo = 0.1;
  for (const char* task : {"a", "b"}) {
    Task t;
    t.name = task;
    t.variants.push_back(Variant{task, 1.0, 1.0});
    app.tasks.push_back(t);
  }
  app.finalize();
  return app;
}

}  // namespace tessera::testing
