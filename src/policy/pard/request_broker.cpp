#include "policy/pard/request_broker.hpp"

#include "engine/deployment_view.hpp"

namespace tessera {

Time RequestBroker::estimated_finish(const Item& item, const DropContext& ctx) const {
  Time downstream = 0.0;
  switch (planner_->settings().estimate) {
    case DownstreamEstimate::kFull:
      downstream = planner_->downstream_latency(item.task);
      break;
    case DownstreamEstimate::kBackward:
      break;
    case DownstreamEstimate::kServiceOnly:
      downstream = planner_->downstream_service(item.task);
      break;
  }
  return ctx.batch_start + ctx.exec_time + downstream;
}

Time RequestBroker::stale_at(const Item& item, const Worker&) const {
  // Neither this worker's next free moment nor its speed: a task-wide queue may be served
  // by another worker, so the bound is the task's fastest worker starting now.
  return item.deadline - planner_->fastest_exec(item.task) - planner_->downstream_floor(item.task);
}

DropReason RequestBroker::decide(const Item& item, const DropContext& ctx) {
  return estimated_finish(item, ctx) > item.deadline ? DropReason::kPredictedLate
                                                     : DropReason::kNone;
}

}  // namespace tessera
