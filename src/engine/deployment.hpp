#pragma once

// Deployment: what runs where, as a planner or a person writes it: groups of identical
// instances and the network links between their servers. A plain value; the engine copies
// what it needs when it starts or reconfigures.

#include <string>
#include <vector>

#include "engine/app.hpp"
#include "engine/links.hpp"

namespace tessera {

// `count` identical workers of one task, running one variant on one segment kind.
struct WorkerGroup {
  TaskId task = 0;
  std::vector<int> variants;  // task variant indices (one unless the worker hosts a supernet)
  std::string segment;
  int max_batch = 1;
  int count = 1;
  Time batch_timeout = -1.0;  // Worker::batch_timeout
  // Names of the links (Deployment::links) the group's instances send and receive on; empty
  // for none.
  std::string uplink = {};
  std::string downlink = {};
};

// How many instances of what run where. Produced by hand or by a planner.
struct Deployment {
  std::vector<WorkerGroup> groups;
  std::vector<LinkSpec> links;

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
