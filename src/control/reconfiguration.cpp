#include "control/reconfiguration.hpp"

namespace tessera::control {

WorkerKind WorkerKind::of(const WorkerGroup& group) {
  return WorkerKind{group.task, group.variants, group.segment, group.max_batch};
}

int ReconfigurationStep::started_workers() const {
  int n = 0;
  for (const auto& g : start) n += g.count;
  return n;
}

void LiveWorkers::add(const WorkerGroup& group, const std::vector<WorkerId>& ids) {
  auto& list = by_kind_[WorkerKind::of(group)];
  list.insert(list.end(), ids.begin(), ids.end());
}

int LiveWorkers::size() const {
  int n = 0;
  for (const auto& [kind, ids] : by_kind_) n += static_cast<int>(ids.size());
  return n;
}

ReconfigurationStep LiveWorkers::change_to(const Deployment& target) {
  std::map<WorkerKind, WorkerGroup> wanted;
  for (const WorkerGroup& g : target.groups) {
    auto [it, fresh] = wanted.emplace(WorkerKind::of(g), g);
    if (!fresh) it->second.count += g.count;
  }
  ReconfigurationStep step;
  for (auto& [kind, ids] : by_kind_) {
    auto it = wanted.find(kind);
    const std::size_t keep =
        it == wanted.end() ? 0 : std::min<std::size_t>(ids.size(), std::size_t(it->second.count));
    // The newest workers go first; the oldest keep serving.
    while (ids.size() > keep) {
      step.stop.push_back(ids.back());
      ids.pop_back();
    }
  }
  for (auto& [kind, group] : wanted) {
    auto it = by_kind_.find(kind);
    const int have = it == by_kind_.end() ? 0 : static_cast<int>(it->second.size());
    if (group.count > have) {
      WorkerGroup add = group;
      add.count = group.count - have;
      step.start.push_back(std::move(add));
    }
  }
  return step;
}

}  // namespace tessera::control
