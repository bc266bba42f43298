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
// Ownership: LiveDeployment lives in Server::Impl. Thread safety: apply_mutex serialises
// reconfigurations; `mutex` guards the counters and history, read by any thread.

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "models/model_spec.hpp"
#include "profile/profile_table.hpp"

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

struct LiveDeployment {
  static constexpr std::size_t kHistory = 64;

  App app;                // the application endpoint's app
  ProfileTable profiles;  // the run's profiles (for POST /v2/tessera/deployment)
  ModelsConfig models;    // where a variant loaded later comes from
  std::mutex apply_mutex;

  mutable std::mutex mutex;
  uint64_t applied = 0;
  double last_applied_unix_s = -1.0;
  std::deque<ReconfigurationEvent> history;

  void record(ReconfigurationEvent event);
};

// The Prometheus lines: tessera_reconfigurations_total and
// tessera_last_reconfiguration_timestamp_seconds.
std::string render_reconfiguration_metrics(const LiveDeployment& live);

}  // namespace tessera
