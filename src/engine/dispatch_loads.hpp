#pragma once

// DispatchLoads: the load of each live worker of one task, in the order of the task's
// worker list, kept up to date by the engine for a dispatcher that chooses by load, so that
// a choice reads one small array instead of every worker's queue and batches.
//
// A worker's load here is the items in its own queue, its forming batch and its running
// batch. A task-wide queue (every worker of the task holds the same one) adds the same
// number to every worker, so it is left out: comparisons and ties come out as with it.
//
// The engine refreshes a worker's entry whenever the worker may have changed and before
// anything that may dispatch: after its queue grew, after each call into the worker's
// instance scheduler, and at each SchedulerHost call naming the worker (so a dispatch nested
// inside a scheduler call sees the worker as it is at that moment). That relies on the
// InstanceScheduler contract: a scheduler changes no instance but the one it is called for,
// other than through SchedulerHost calls naming it. A scheduler called from outside the
// engine (InstanceScheduler::cancel from Engine::stop_request; the live server's
// LlmInstanceScheduler::finish_with_step, followed by Engine::note_worker_changed) is read
// again the same way. reset() follows the list when workers are added or stopped (a
// reconfiguration's edit, a killed worker).
//
// Owned by the dispatcher that reads it; written by the engine. Not thread-safe: the
// engine's thread only.

#include <cstdint>
#include <vector>

#include "engine/policies.hpp"
#include "engine/worker.hpp"

namespace tessera {

class DispatchLoads {
 public:
  // The task's live workers are now `workers` (the engine's list; its address identifies it).
  void reset(const std::vector<Worker*>& workers);
  // Reads `worker`'s load again; a worker not in the list is ignored.
  void refresh(const Worker& worker) {
    if (worker.id < position_.size() && position_[worker.id] >= 0) {
      load_[static_cast<std::size_t>(position_[worker.id])] = load_of(worker);
    }
  }
  // Whether these loads follow `workers` (a dispatcher called with another list, as a unit
  // test may, has to read the workers instead).
  bool follows(const std::vector<Worker*>& workers) const {
    return &workers == list_ && workers.size() == load_.size();
  }
  // By position in the list.
  const std::vector<uint32_t>& loads() const { return load_; }

 private:
  uint32_t load_of(const Worker& worker) const {
    const std::size_t own = worker.forming.size() + worker.running.size();
    return static_cast<uint32_t>(shared_queue_ ? own : own + worker.queue->size());
  }

  const std::vector<Worker*>* list_ = nullptr;
  bool shared_queue_ = false;
  std::vector<int32_t> position_;  // by WorkerId; -1: not in the list
  std::vector<uint32_t> load_;     // by position
};

}  // namespace tessera
