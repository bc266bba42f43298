#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "engine/deployment.hpp"
#include "engine/item.hpp"

namespace tessera::control {

// What kind of instance a worker is: workers of one kind are interchangeable, so a new
// plan keeps the ones both plans have and changes only the difference.
struct WorkerKind {
  TaskId task = 0;
  std::vector<int> variants;
  std::string segment;
  int max_batch = 1;

  static WorkerKind of(const WorkerGroup& group);
  auto tie() const { return std::tie(task, variants, segment, max_batch); }
  bool operator<(const WorkerKind& o) const { return tie() < o.tie(); }
};

// One reconfiguration: the workers to start and the workers to stop.
struct ReconfigurationStep {
  std::vector<WorkerGroup> start;
  std::vector<WorkerId> stop;
  int started_workers() const;
  bool empty() const { return start.empty() && stop.empty(); }
};

// The workers of the running deployment, by kind.
class LiveWorkers {
 public:
  void add(const WorkerGroup& group, const std::vector<WorkerId>& ids);
  // What turns the live workers into `target`; the stopped workers leave this set now
  // (the caller stops them), the started ones join it when the caller adds them.
  ReconfigurationStep change_to(const Deployment& target);
  int size() const;

 private:
  std::map<WorkerKind, std::vector<WorkerId>> by_kind_;
};

}  // namespace tessera::control
