#include "policy/pard/request_broker.hpp"

#include "engine/engine.hpp"

namespace tessera {

void RequestBroker::on_arrival(const Item& item, const Worker&, const Engine& engine, Time now) {
  planner_->maybe_sync(engine, now);
  planner_->on_arrival(item.task, now);
}

void RequestBroker::on_batch_start(const Worker& worker, int size, const Engine& engine, Time now) {
  planner_->maybe_sync(engine, now);
  planner_->on_batch_start(worker.task, size, now);
}

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

DropReason RequestBroker::on_batch(const Item& item, const DropContext& ctx) {
  planner_->maybe_sync(*ctx.engine, ctx.now);
  planner_->on_queue_delay(item.task, ctx.now - item.enqueued, ctx.now);
  return estimated_finish(item, ctx) > item.deadline ? DropReason::kPredictedLate
                                                     : DropReason::kNone;
}

}  // namespace tessera
