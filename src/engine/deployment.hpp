#pragma once

#include <string>
#include <vector>

#include "engine/app.hpp"

namespace tessera {

// `count` identical workers of one task, running one variant on one segment kind.
struct WorkerGroup {
  TaskId task = 0;
  std::vector<int> variants;  // task variant indices (one unless the worker hosts a supernet)
  std::string segment;
  int max_batch = 1;
  int count = 1;
  Time batch_timeout = -1.0;  // Worker::batch_timeout
};

// How many instances of what run where. Produced by hand or by a planner.
struct Deployment {
  std::vector<WorkerGroup> groups;

  int total_workers() const {
    int n = 0;
    for (const auto& g : groups) n += g.count;
    return n;
  }
  int workers_of(TaskId task) const {
    int n = 0;
    for (const auto& g : groups) n += g.task == task ? g.count : 0;
    return n;
  }
};

}  // namespace tessera
