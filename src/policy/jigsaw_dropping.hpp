#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "engine/app.hpp"
#include "policy/dropping.hpp"

namespace tessera {

// JigsawServe's early dropping (§3.3, after Loki), in every task:
// - deadline-infeasible: an item is dropped when it cannot meet its deadline even if it
//   ran now (or when its batch starts) and the fastest deployed variants of every task
//   after it served its descendants at batch size 1, with no batching delay;
// - stale: an item is dropped when it has waited in its task's queue longer than its
//   worker's batching timeout plus `stale_after` (the paper: "A task also drops requests
//   that are considered to be stale, which can happen if all the model instances filled up
//   their batches and the request is not picked up by any model instance of the task").
//   The MILP gives each task 2 Lhat(t): Lhat(t) to wait for a batch and Lhat(t) to run it;
//   an item that has waited Lhat(t) and the threshold has overrun its task's share.
//   StaleRule::kQueued (the paper's reading): the item is purged while still waiting,
//   picked up by no instance (stale_at; the instance scheduler purges the queue's front
//   when the queue is touched and by a timer); an item an instance picks up is only checked
//   for its deadline. StaleRule::kAtPickup (tessera's earlier rule): the wait is checked at
//   the moment an instance picks the item up, whether or not its deadline is reachable.
// "Fastest deployed" reads the engine's live workers, so it follows reconfigurations.
class JigsawDropping final : public DropPolicy {
 public:
  enum class StaleRule { kQueued, kAtPickup };

  // `default_timeout` is the batching timeout of workers whose deployment sets none.
  JigsawDropping(const App& app, Time stale_after, Time default_timeout,
                 StaleRule rule = StaleRule::kQueued);

  DropReason on_enqueue(const Item& item, const DropContext& ctx) override;
  DropReason on_batch(const Item& item, const DropContext& ctx) override;
  Time stale_at(const Item& item, const Worker& worker) const override;
  bool purges_stale() const override { return rule_ == StaleRule::kQueued; }

  // The least time from the end of `task`'s execution to the end of the item's slowest
  // branch: hops plus the fastest deployed latency of every task after it.
  Time fastest_after(TaskId task, const DeploymentView& view);

 private:
  void refresh(const DeploymentView& view);

  const App& app_;
  Time stale_after_;
  Time default_timeout_;
  StaleRule rule_;
  std::vector<TaskId> order_;  // topological
  uint64_t version_ = std::numeric_limits<uint64_t>::max();
  std::vector<Time> fastest_;  // per task: the fastest deployed batch-1 latency
  std::vector<Time> after_;    // per task
};

}  // namespace tessera
