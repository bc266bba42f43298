#include "engine/deployment_diff.hpp"

#include <algorithm>

#include "engine/worker.hpp"

namespace tessera {

InstanceKind InstanceKind::of(const WorkerGroup& group) {
  return InstanceKind{group.task, group.variants, group.segment, group.max_batch};
}

InstanceKind InstanceKind::of(const Worker& worker) {
  return InstanceKind{worker.task, worker.variants, worker.segment, worker.max_batch};
}

LiveInstances LiveInstances::of(const DeploymentView& view) {
  LiveInstances live;
  for (std::size_t t = 0; t < view.app().tasks.size(); ++t) {
    for (const Worker* w : view.workers_of(static_cast<TaskId>(t))) {
      live.by_kind_[InstanceKind::of(*w)].push_back(w->id);
    }
  }
  for (auto& [kind, ids] : live.by_kind_) std::sort(ids.begin(), ids.end());
  return live;
}

void LiveInstances::add(const WorkerGroup& group, const std::vector<WorkerId>& ids) {
  auto& list = by_kind_[InstanceKind::of(group)];
  list.insert(list.end(), ids.begin(), ids.end());
}

int LiveInstances::size() const {
  int n = 0;
  for (const auto& [kind, ids] : by_kind_) n += static_cast<int>(ids.size());
  return n;
}

DeploymentEdit LiveInstances::change_to(const Deployment& target) {
  std::map<InstanceKind, WorkerGroup> wanted;
  for (const WorkerGroup& g : target.groups) {
    auto [it, fresh] = wanted.emplace(InstanceKind::of(g), g);
    if (!fresh) it->second.count += g.count;
  }
  DeploymentEdit edit;
  for (auto& [kind, ids] : by_kind_) {
    auto it = wanted.find(kind);
    const std::size_t keep =
        it == wanted.end() ? 0 : std::min<std::size_t>(ids.size(), std::size_t(it->second.count));
    // The newest instances go first; the oldest keep serving.
    while (ids.size() > keep) {
      edit.stop.push_back(ids.back());
      ids.pop_back();
    }
  }
  for (const auto& [kind, group] : wanted) {
    auto it = by_kind_.find(kind);
    const int have = it == by_kind_.end() ? 0 : static_cast<int>(it->second.size());
    if (group.count > have) {
      WorkerGroup add = group;
      add.count = group.count - have;
      edit.start.push_back(std::move(add));
    }
  }
  for (const WorkerGroup& g : target.groups) {
    if (g.batch_timeout >= 0) edit.batch_timeouts.emplace_back(g.task, g.batch_timeout);
  }
  return edit;
}

int started_instances(const DeploymentEdit& edit) {
  int n = 0;
  for (const WorkerGroup& g : edit.start) n += g.count;
  return n;
}

}  // namespace tessera
