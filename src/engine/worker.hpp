#pragma once

// Worker: the state of one deployed instance (a model on a GPU, MIG slice, MPS share or a
// pipeline partition's pool member): its profile, its queue, the step it runs and the batch
// it forms. The engine owns every Worker; its InstanceScheduler decides what it runs next;
// policies read it through DeploymentView. Not thread-safe: touched on the engine's thread.

#include <memory>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "engine/item.hpp"
#include "engine/links.hpp"

namespace tessera {

class WorkQueue;

// One model instance on one hardware segment (a GPU, a MIG slice, an MPS share, a
// pipeline partition's pool member). It runs at most one batch at a time and, with
// batching policies that allow it, forms the next batch while the current one runs.
struct Worker {
  WorkerId id = 0;
  TaskId task = 0;
  std::string segment;
  int max_batch = 1;
  // The deployment's bound on how long a batch may wait to fill (JigsawServe's Lhat(t), set
  // by the planner); < 0 leaves it to the batching policy.
  Time batch_timeout = -1.0;
  // The batch wait bound that applies: the deployment's, else the policy's `fallback`.
  Time batch_timeout_or(Time fallback) const {
    return batch_timeout >= 0 ? batch_timeout : fallback;
  }
  std::vector<int> variants;  // task variant indices this worker can run (one, or a supernet's)
  // Profiled latency: latency[i][b] for variants[i] at batch size b (index 0 unused).
  std::vector<std::vector<Time>> latency;

  // The worker's queue; with a task-wide queue (SuperServe's router) every worker of the
  // task holds the same one and pulls from it when idle.
  std::shared_ptr<WorkQueue> queue;
  std::vector<Item> running;
  std::vector<Item> forming;
  int running_variant = 0;  // index into `variants`
  int forming_variant = 0;
  int forming_cap = 0;  // size limit of the forming batch, chosen when it was opened
  Time running_start = 0.0;
  Time running_duration = 0.0;  // the cost model's time for the running step
  Time running_expected_end = 0.0;
  Time last_batch_end = -1.0;  // when the previous batch finished; < 0 before the first
  // Items its instance scheduler keeps across steps, outside queue, forming and running
  // (an LLM instance's admitted requests); counted by load().
  std::size_t held = 0;
  bool busy = false;
  bool alive = true;
  uint64_t timer_generation = 0;
  Time timer_at = -1.0;  // when the pending timer fires; < 0 when none is pending
  // The network links this instance sends on and receives on (its server's NIC), for edges
  // that move bytes; kNoLink when the deployment names none.
  LinkId uplink = kNoLink;
  LinkId downlink = kNoLink;

  // Statistics for reports.
  uint64_t batches = 0;
  uint64_t items_done = 0;
  Time busy_time = 0.0;

  std::size_t load() const;  // queued + forming + running + held items
  Time profiled_latency(int variant_slot, int batch) const {
    const auto& row = latency[static_cast<std::size_t>(variant_slot)];
    if (batch < 1) batch = 1;
    if (batch >= static_cast<int>(row.size())) return row.back();
    return row[static_cast<std::size_t>(batch)];
  }
};

}  // namespace tessera
