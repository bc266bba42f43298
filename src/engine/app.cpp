#include "engine/app.hpp"

#include <algorithm>
#include <stdexcept>

namespace tessera {

int Task::variant_index(const std::string& variant) const {
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (variants[i].name == variant) return static_cast<int>(i);
  }
  return -1;
}

int App::task_index(const std::string& task_name) const {
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].name == task_name) return static_cast<int>(i);
  }
  return -1;
}

bool App::has_joins() const {
  return std::any_of(tasks.begin(), tasks.end(), [](const Task& t) { return t.is_join(); });
}

std::vector<TaskId> App::topological_order() const {
  std::vector<int> indegree(tasks.size(), 0);
  for (const Edge& e : edges) indegree[e.to]++;
  std::vector<TaskId> order;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (indegree[i] == 0) order.push_back(static_cast<TaskId>(i));
  }
  for (std::size_t head = 0; head < order.size(); ++head) {
    for (uint32_t ei : tasks[order[head]].out_edges) {
      if (--indegree[edges[ei].to] == 0) order.push_back(edges[ei].to);
    }
  }
  if (order.size() != tasks.size()) throw std::invalid_argument("the task graph has a cycle");
  return order;
}

void App::finalize() {
  for (Task& t : tasks) {
    t.in_edges.clear();
    t.out_edges.clear();
    t.ancestors.clear();
  }
  for (std::size_t i = 0; i < edges.size(); ++i) {
    tasks[edges[i].from].out_edges.push_back(static_cast<uint32_t>(i));
    tasks[edges[i].to].in_edges.push_back(static_cast<uint32_t>(i));
  }
  roots.clear();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].in_edges.empty()) roots.push_back(static_cast<TaskId>(i));
  }
  if (roots.empty()) throw std::invalid_argument("the task graph has no root task");
  for (TaskId t : topological_order()) {
    std::vector<TaskId> anc;
    for (uint32_t ei : tasks[t].in_edges) {
      TaskId parent = edges[ei].from;
      anc.push_back(parent);
      anc.insert(anc.end(), tasks[parent].ancestors.begin(), tasks[parent].ancestors.end());
    }
    std::sort(anc.begin(), anc.end());
    anc.erase(std::unique(anc.begin(), anc.end()), anc.end());
    tasks[t].ancestors = std::move(anc);
  }
}

}  // namespace tessera
