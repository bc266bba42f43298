#pragma once

// Live reconfiguration of a running server (docs/serve.md#live-re-planning): the types of
// Server::reconfigure and Server::deployment_status, and the state behind them.
//
// A reconfiguration moves the application endpoint to a new deployment in one step: the
// models it needs are loaded and warmed up first, on the caller's thread (off the request
// path); then, on the event loop and as one Engine::apply, the new instances start and
// the ones the new deployment no longer has leave service. A leaving instance finishes
// the batch it holds; its queued items go to the task's other (new) instances. Requests
// that arrive meanwhile wait in the loop's queue and are served by whatever deployment
// runs when they are admitted. Nothing is answered twice: the engine's ledger is the same.
// A refused reconfiguration (a variant with no model, a shape that does not fit, a task
// left without instances, no profile) changes nothing.
//
// Ownership: LiveReconfiguration is the Server's; it references the application endpoint,
// the model registry, the event loop and the metrics (the server's, which outlive it).
// Threads: reconfigure() from any thread but the event loop (one at a time: a mutex), the
// status and metrics from any thread.

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "models/model_spec.hpp"
#include "profile/profile_table.hpp"
#include "serve/http/http_frontend.hpp"
#include "serve/metrics/server_metrics.hpp"
#include "serve/runtime/endpoint.hpp"
#include "serve/runtime/event_loop.hpp"
#include "serve/runtime/model_registry.hpp"

namespace tessera {

// What one Server::reconfigure call did.
struct ReconfigureResult {
  bool applied = false;    // the deployment changed (or already was the target)
  std::string error;       // why it was refused (applied == false); nothing changed
  int started = 0;         // instances started
  int stopped = 0;         // instances taken out of service
  int models_loaded = 0;   // models loaded for it (variants the server had not loaded)
  double seconds = 0.0;    // the whole call, model loading included
  double switch_ms = 0.0;  // the atomic switch on the event loop
};

// One applied reconfiguration, for /v2/tessera/deployment.
struct ReconfigurationEvent {
  double unix_s = 0.0;  // wall-clock time it was applied
  int started = 0;
  int stopped = 0;
  std::string summary;  // the new deployment in short (deployment_summary)
  std::string note;     // the caller's (e.g. the controller's window and rate)
};

// The application endpoint's deployment now.
struct DeploymentStatus {
  std::string app;
  Deployment deployment;                      // live instances grouped by kind (count per group)
  std::vector<uint64_t> group_batches;        // batches run so far by each group's instances
  uint64_t arrivals = 0;                      // requests admitted to the application endpoint
  uint64_t reconfigurations = 0;              // applied so far
  double last_applied_unix_s = -1.0;          // -1: none yet
  std::vector<ReconfigurationEvent> history;  // the last ones, oldest first
};

// "detect: yolov5m@gpu-ampere x2 b8; classify: ..." (task: variant@segment xcount bmax_batch).
std::string deployment_summary(const App& app, const Deployment& deployment);

class LiveReconfiguration {
 public:
  static constexpr std::size_t kHistory = 64;

  // `application`: the endpoint it moves; nullptr when the server serves models only (every
  // reconfiguration is refused). `profiles` time new instances unless a call brings its
  // own; `models` says where a variant loaded later comes from.
  LiveReconfiguration(App app, ProfileTable profiles, ModelsConfig models, Endpoint* application,
                      ModelRegistry& registry, EventLoop& loop, ServerMetrics& metrics);

  // Reconfigurations are taken while serving: from the server's start to its shutdown.
  void set_serving(bool serving);
  // Server::reconfigure.
  ReconfigureResult reconfigure(const Deployment& target, const ProfileTable* profiles,
                                const std::string& note);
  // Server::deployment_status.
  DeploymentStatus status();
  // GET /v2/tessera/deployment (the status) and POST (a deployment to move to).
  HttpResponse route(const HttpRequest& request);
  // The Prometheus lines: tessera_reconfigurations_total and
  // tessera_last_reconfiguration_timestamp_seconds.
  std::string render_metrics() const;

 private:
  void record(ReconfigurationEvent event);

  const App app_;
  const ProfileTable profiles_;
  const ModelsConfig models_;
  Endpoint* application_;
  ModelRegistry& registry_;
  EventLoop& loop_;
  ServerMetrics& metrics_;
  std::atomic<bool> serving_{false};
  std::atomic<bool> started_{false};  // serving has begun (the loop runs)
  std::mutex apply_mutex_;            // one reconfiguration at a time

  mutable std::mutex mutex_;  // the counters and the history
  uint64_t applied_ = 0;
  double last_applied_unix_s_ = -1.0;
  std::deque<ReconfigurationEvent> history_;
};

}  // namespace tessera
