#include "policy/jigsaw_dropping.hpp"

#include <algorithm>
#include <cmath>

#include "engine/deployment_view.hpp"

namespace tessera {

JigsawDropping::JigsawDropping(const App& app, Time stale_after, Time default_timeout,
                               StaleRule rule)
    : app_(app),
      stale_after_(stale_after),
      default_timeout_(default_timeout),
      rule_(rule),
      order_(app.topological_order()) {}

void JigsawDropping::refresh(const DeploymentView& view) {
  if (view.deployment_version() == version_) return;
  version_ = view.deployment_version();
  const std::size_t n = app_.tasks.size();
  fastest_.assign(n, 0.0);
  for (std::size_t t = 0; t < n; ++t) {
    Time best = std::numeric_limits<Time>::infinity();
    for (const Worker* w : view.workers_of(static_cast<TaskId>(t))) {
      for (std::size_t v = 0; v < w->variants.size(); ++v) {
        best = std::min(best, w->profiled_latency(static_cast<int>(v), 1));
      }
    }
    fastest_[t] = std::isinf(best) ? 0.0 : best;
  }
  // Children before parents: walk the topological order backwards.
  after_.assign(n, 0.0);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    Time longest = 0.0;
    for (uint32_t e : app_.tasks[*it].out_edges) {
      const Edge& edge = app_.edges[e];
      longest = std::max(longest, edge.delay + fastest_[edge.to] + after_[edge.to]);
    }
    after_[*it] = longest;
  }
}

Time JigsawDropping::fastest_after(TaskId task, const DeploymentView& view) {
  refresh(view);
  return after_[task];
}

DropReason JigsawDropping::on_enqueue(const Item& item, const DropContext& ctx) {
  refresh(*ctx.view);
  const Time best_finish = ctx.now + fastest_[item.task] + after_[item.task];
  return best_finish > item.deadline ? DropReason::kPredictedLate : DropReason::kNone;
}

DropReason JigsawDropping::on_batch(const Item& item, const DropContext& ctx) {
  refresh(*ctx.view);
  if (rule_ == StaleRule::kAtPickup) {
    const Time timeout = ctx.worker->batch_timeout_or(default_timeout_);
    if (ctx.now - item.enqueued > timeout + stale_after_) return DropReason::kStale;
  }
  const Time best_finish = ctx.batch_start + ctx.exec_time + after_[item.task];
  return best_finish > item.deadline ? DropReason::kPredictedLate : DropReason::kNone;
}

Time JigsawDropping::stale_at(const Item& item, const Worker& worker) const {
  if (rule_ != StaleRule::kQueued) return std::numeric_limits<Time>::infinity();
  return item.enqueued + worker.batch_timeout_or(default_timeout_) + stale_after_;
}

}  // namespace tessera
