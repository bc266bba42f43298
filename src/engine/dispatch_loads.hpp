#pragma once

// DispatchLoads: the load of each live worker of one task, in the order of the task's
// worker list, kept up to date by the engine for a dispatcher that chooses by load, so that
// a choice reads a few words instead of every worker's queue and batches.
//
// A worker's load here is the items in its own queue, its forming batch and its running
// batch. A task-wide queue (every worker of the task holds the same one) adds the same
// number to every worker, so it is left out: comparisons and ties come out as with it.
//
// refresh() only marks the worker: its load is read when the next choice is made
// (least_from), once however many times it changed in between, and as it is at that
// moment, which is what an eager read at every change would have left.
//
// Besides each position's load it keeps, per load value, the set of positions at that load
// (a bitset of the list's positions) and the least load held: least_from(start), the first
// position of least load from `start` on (wrapping), is then one or a few word scans, not
// a pass over the list. Moving a worker from one load to another flips two bits; when the
// least load's set empties the least moves up to the next load held (as far as the moved
// worker's new load, at most).
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
// Memory: the sets take one bit per position per load value up to the highest load seen
// (grown, never shrunk, so the steady state allocates nothing); the items that make up a
// load take far more.
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
  // `worker` may have changed: its load is read again before the next choice; a worker not
  // in the list is ignored.
  void refresh(const Worker& worker) {
    if (worker.id >= position_.size()) return;
    const int32_t pos = position_[worker.id];
    if (pos >= 0 && !stale_[static_cast<std::size_t>(pos)]) {
      stale_[static_cast<std::size_t>(pos)] = 1;
      stale_list_.push_back(static_cast<uint32_t>(pos));
    }
  }
  // Whether these loads follow `workers` (a dispatcher called with another list, as a unit
  // test may, has to read the workers instead).
  bool follows(const std::vector<Worker*>& workers) const {
    return &workers == list_ && workers.size() == load_.size();
  }
  // The first position from `start` on, wrapping to 0, whose load is the least (the
  // marked workers read first); -1 for an empty list. `start` < the list's size.
  int least_from(std::size_t start);

 private:
  uint32_t load_of(const Worker& worker) const {
    const std::size_t own = worker.forming.size() + worker.running.size();
    return static_cast<uint32_t>(shared_queue_ ? own : own + worker.queue->size());
  }
  void set(std::size_t pos, uint32_t load);
  void read_stale();                                // the marked workers' loads
  void add_member(std::size_t pos, uint32_t load);  // grows the sets to hold `load`
  uint64_t* members(uint32_t load) { return &members_[std::size_t{load} * words_]; }
  const uint64_t* members(uint32_t load) const { return &members_[std::size_t{load} * words_]; }

  const std::vector<Worker*>* list_ = nullptr;
  bool shared_queue_ = false;
  std::vector<int32_t> position_;     // by WorkerId; -1: not in the list
  std::vector<uint32_t> load_;        // by position
  std::vector<uint8_t> stale_;        // by position: marked by refresh() since its last read
  std::vector<uint32_t> stale_list_;  // the marked positions (capacity: the list's size)
  std::size_t words_ = 1;             // 64-bit words per position set
  std::vector<uint64_t> members_;     // [load * words_ + w]: the positions at each load
  std::vector<uint32_t> count_;       // by load: how many positions hold it
  uint32_t least_ = 0;                // the least load held (0 when the list is empty)
};

}  // namespace tessera
