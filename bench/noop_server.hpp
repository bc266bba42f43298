#pragma once

// The application the serving benchmarks (serve_bench over HTTP, grpc_bench over gRPC)
// serve: one task with a no-op model taking FP32 [4], one CPU worker, eager batching up to
// 32, a 1 s SLO. What a request costs there is the serving path itself. Bench-only,
// header-only; plain values the caller owns and hands to tessera::Server.

#include "serve/server/server.hpp"

namespace tessera::bench {

struct NoopServing {
  App app;
  Deployment deployment;
  ProfileTable profiles;
  ModelsConfig models;
};

inline NoopServing noop_serving() {
  NoopServing s;
  s.app.name = "noop";
  s.app.slo = 1.0;
  Task task;
  task.name = "noop";
  task.variants.push_back(Variant{"noop", 1.0, 1.0});
  s.app.tasks.push_back(task);
  s.app.finalize();
  s.deployment.groups.push_back(WorkerGroup{0, {0}, "cpu", 32, 1});
  for (int b = 1; b <= 32; ++b) s.profiles.add("noop", "cpu", b, 0.01);
  ModelSpec noop;
  noop.variant = "noop";
  noop.arch = "noop";
  noop.input_shape = {4};
  s.models.models.push_back(noop);
  return s;
}

}  // namespace tessera::bench
