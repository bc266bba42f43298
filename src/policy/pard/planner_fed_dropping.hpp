#pragma once

#include <memory>

#include "policy/dropping.hpp"
#include "policy/pard/state_planner.hpp"

namespace tessera {

// A dropping policy that feeds PARD's State Planner: it reports every arrival, batch start
// and queueing delay (t_b − t_r) to the planner, syncing it lazily, and leaves only the
// decision at t_b to the subclass. The Request Broker and the split-budget policies share it.
class PlannerFedDropping : public DropPolicy {
 public:
  explicit PlannerFedDropping(std::shared_ptr<StatePlanner> planner)
      : planner_(std::move(planner)) {}

  void on_arrival(const Item& item, const Worker&, const DeploymentView& view, Time now) final {
    planner_->maybe_sync(view, now);
    planner_->on_arrival(item.task, now);
  }
  void on_batch_start(const Worker& worker, int size, const DeploymentView& view, Time now) final {
    planner_->maybe_sync(view, now);
    planner_->on_batch_start(worker.task, size, now);
  }
  DropReason on_batch(const Item& item, const DropContext& ctx) final {
    planner_->maybe_sync(*ctx.view, ctx.now);
    planner_->on_queue_delay(item.task, ctx.now - item.enqueued, ctx.now);
    return decide(item, ctx);
  }

 protected:
  // The drop decision for an item about to join a batch, with the planner up to date.
  virtual DropReason decide(const Item& item, const DropContext& ctx) = 0;

  std::shared_ptr<StatePlanner> planner_;
};

}  // namespace tessera
