#include "serve/server/worker_mode.hpp"

#include <stdexcept>

#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "policy/policy_set.hpp"
#include "profile/profile_table.hpp"

namespace tessera {
namespace {

constexpr const char* kWorkerSegment = "worker";
constexpr double kWorkerSloS = 3600.0;  // the worker keeps no SLO of its own

}  // namespace

std::unique_ptr<Server> make_worker_server(const ModelsConfig& models, const WorkerOptions& worker,
                                           ServeOptions options) {
  if (models.models.empty()) {
    throw std::invalid_argument("worker mode: the models file lists no models");
  }
  if (worker.max_batch < 1 || worker.max_batch > 4096) {
    throw std::invalid_argument("worker mode: max batch must be in [1, 4096]");
  }
  App app;
  app.name = "tessera-worker";
  app.slo = kWorkerSloS;
  Deployment deployment;
  ProfileTable profiles;
  for (const ModelSpec& m : models.models) {
    if (m.source == ModelSpec::Source::kProfileTimed) {
      throw std::invalid_argument("worker mode: model '" + m.variant +
                                  "' is a profile-timed emulation, which needs a plan's "
                                  "profiles; use the zoo's `sleep` model for a device of known "
                                  "speed");
    }
    Task task;
    task.name = m.variant;
    task.variants.push_back(Variant{m.variant, 1.0, 1.0});
    app.tasks.push_back(std::move(task));
    deployment.groups.push_back(WorkerGroup{
        static_cast<TaskId>(app.tasks.size() - 1), {0}, kWorkerSegment, worker.max_batch, 1});
    // The engine's eager batching and `none` dropping never consult latencies; the curve
    // is only there because every deployed variant needs one.
    for (int b = 1; b <= worker.max_batch; ++b) profiles.add(m.variant, kWorkerSegment, b, 1.0);
  }
  app.finalize();
  PolicyConfig policies;  // round_robin, fifo, eager batching, no dropping
  options.app_endpoint = false;
  options.model_endpoints = true;
  return std::make_unique<Server>(app, deployment, profiles, policies, 1, models,
                                  std::move(options));
}

}  // namespace tessera
