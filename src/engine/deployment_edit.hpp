#pragma once

// DeploymentEdit: one reconfiguration of a running deployment (instances to start, instances
// to take out of service, new batch timeouts), applied by Engine::apply as one atomic step:
// it is checked whole before anything changes, and no event runs between its parts. The
// simulator's controller and the live server apply the same edits (as LevelDB applies a
// VersionEdit).

#include <optional>
#include <utility>
#include <vector>

#include "core/time.hpp"
#include "engine/deployment.hpp"
#include "engine/item.hpp"

namespace tessera {

struct DeploymentEdit {
  std::vector<WorkerGroup> start;                       // new instances, group by group
  std::vector<WorkerId> stop;                           // instances leaving service
  std::vector<std::pair<TaskId, Time>> batch_timeouts;  // per task, for its live instances
  // Sets the engine's reconfiguring mode: true before the stopped instances leave (items for
  // a task with no live instance then wait for new ones), false after the new ones start
  // (what still waits then fails). Unset leaves it as it is.
  std::optional<bool> reconfiguring;

  bool empty() const {
    return start.empty() && stop.empty() && batch_timeouts.empty() && !reconfiguring;
  }
};

}  // namespace tessera
