#pragma once

// DeploymentView: the narrow, read-only window policies get onto a running deployment (the
// app, each task's live instances with their profiles and queues, and a version number that
// changes with every reconfiguration). The Engine implements it; policies hold no other
// reference to the engine, so they cannot change its state behind its back.
//
// Thread safety: none. A view is read on its engine's thread only, and only during a call
// from that engine.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/app.hpp"
#include "engine/worker.hpp"

namespace tessera {

class DeploymentView {
 public:
  virtual ~DeploymentView() = default;
  virtual const App& app() const = 0;
  // The task's instances in service (taken-out instances are not listed).
  virtual const std::vector<Worker*>& workers_of(TaskId task) const = 0;
  // Items queued at the task, including batches still forming.
  virtual std::size_t queued_at(TaskId task) const = 0;
  // Changes whenever an instance is added or taken out of service, for policies that cache
  // facts about the deployment.
  virtual uint64_t deployment_version() const = 0;
};

}  // namespace tessera
