#include "policy/pard/request_broker.hpp"

#include <limits>

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

Time RequestBroker::stale_at(const Item& item, const Worker& worker) const {
  const Time hopeless =
      item.deadline - worker.profiled_latency(0, 1) - planner_->downstream_floor(item.task);
  if (worker.busy && worker.running_expected_end > hopeless) {
    return -std::numeric_limits<Time>::infinity();
  }
  return hopeless;
}

DropReason RequestBroker::decide(const Item& item, const DropContext& ctx) {
  return estimated_finish(item, ctx) > item.deadline ? DropReason::kPredictedLate
                                                     : DropReason::kNone;
}

}  // namespace tessera
