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
//   worker's batching timeout plus `stale_after` (the paper: "all the model instances
//   filled up their batches and the request is not picked up"). The MILP gives each task
//   2 Lhat(t): Lhat(t) to wait for a batch and Lhat(t) to run it; an item that has waited
//   Lhat(t) and the threshold has overrun its task's share.
// "Fastest deployed" reads the engine's live workers, so it follows reconfigurations.
class JigsawDropping final : public DropPolicy {
 public:
  // `default_timeout` is the batching timeout of workers whose deployment sets none.
  JigsawDropping(const App& app, Time stale_after, Time default_timeout);

  DropReason on_enqueue(const Item& item, const DropContext& ctx) override;
  DropReason on_batch(const Item& item, const DropContext& ctx) override;

  // The least time from the end of `task`'s execution to the end of the item's slowest
  // branch: hops plus the fastest deployed latency of every task after it.
  Time fastest_after(TaskId task, const DeploymentView& view);

 private:
  void refresh(const DeploymentView& view);

  const App& app_;
  Time stale_after_;
  Time default_timeout_;
  std::vector<TaskId> order_;  // topological
  uint64_t version_ = std::numeric_limits<uint64_t>::max();
  std::vector<Time> fastest_;  // per task: the fastest deployed batch-1 latency
  std::vector<Time> after_;    // per task
};

}  // namespace tessera
