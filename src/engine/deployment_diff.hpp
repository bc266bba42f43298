#pragma once

// The difference between the instances an engine runs and a target deployment, as one
// DeploymentEdit (docs/architecture.md#reconfiguration-as-one-edit). Instances of one kind
// (task, variants, segment, max batch) are interchangeable, so a new deployment keeps the
// instances both have and changes only the difference: of a kind the target has fewer of,
// the newest instances stop; of a kind it has more of, new ones start; a target group's
// batch timeout (when >= 0) becomes its task's. The one diff of the re-planning controller
// (simulated) and of the live server's reconfiguration.
//
// A plain value; not thread-safe.

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "engine/deployment.hpp"
#include "engine/deployment_edit.hpp"
#include "engine/deployment_view.hpp"
#include "engine/item.hpp"

namespace tessera {

// What kind of instance a worker is.
struct InstanceKind {
  TaskId task = 0;
  std::vector<int> variants;
  std::string segment;
  int max_batch = 1;

  static InstanceKind of(const WorkerGroup& group);
  static InstanceKind of(const Worker& worker);
  auto tie() const { return std::tie(task, variants, segment, max_batch); }
  bool operator<(const InstanceKind& o) const { return tie() < o.tie(); }
};

// The live instances by kind, each kind's in the order they started.
class LiveInstances {
 public:
  // The live workers of `view` (an engine), in id order.
  static LiveInstances of(const DeploymentView& view);

  void add(const WorkerGroup& group, const std::vector<WorkerId>& ids);
  // The edit that turns these instances into `target` (start, stop, batch timeouts). The
  // stopped instances leave this set now (the caller applies the edit); the started ones
  // join it when the caller add()s them with the ids the engine gave.
  DeploymentEdit change_to(const Deployment& target);
  int size() const;

 private:
  std::map<InstanceKind, std::vector<WorkerId>> by_kind_;
};

// Instances `edit` starts, over its groups.
int started_instances(const DeploymentEdit& edit);

}  // namespace tessera
