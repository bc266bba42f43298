#include "policy/split_budget.hpp"

#include <algorithm>

#include "engine/deployment_view.hpp"

namespace tessera {
namespace {

// For every task: the largest cost sum over the root-to-leaf paths through it.
std::vector<double> heaviest_path_through(const App& app, const std::vector<double>& cost) {
  const auto order = app.topological_order();
  std::vector<double> up(app.tasks.size(), 0.0);    // heaviest path ending at t (inclusive)
  std::vector<double> down(app.tasks.size(), 0.0);  // heaviest path starting at t (inclusive)
  for (TaskId t : order) {
    double best = 0.0;
    for (uint32_t e : app.tasks[t].in_edges) best = std::max(best, up[app.edges[e].from]);
    up[t] = best + cost[t];
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    double best = 0.0;
    for (uint32_t e : app.tasks[*it].out_edges) best = std::max(best, down[app.edges[e].to]);
    down[*it] = best + cost[*it];
  }
  std::vector<double> through(app.tasks.size());
  for (std::size_t t = 0; t < through.size(); ++t) through[t] = up[t] + down[t] - cost[t];
  return through;
}

std::vector<double> fractions(const App& app, const std::vector<double>& cost) {
  const auto through = heaviest_path_through(app, cost);
  std::vector<double> out(cost.size(), 1.0);
  for (std::size_t t = 0; t < cost.size(); ++t)
    out[t] = through[t] > 0 ? cost[t] / through[t] : 1.0;
  return out;
}

}  // namespace

SplitBudgetDropping::SplitBudgetDropping(std::shared_ptr<StatePlanner> planner, bool worst_case,
                                         SplitCheck check)
    : PlannerFedDropping(std::move(planner)), worst_case_(worst_case), check_(check) {}

void SplitBudgetDropping::compute_static(const DeploymentView& view) {
  const App& app = view.app();
  std::vector<double> cost(app.tasks.size(), 0.0);
  for (std::size_t t = 0; t < cost.size(); ++t) {
    int n = 0;
    for (const Worker* w : view.workers_of(static_cast<TaskId>(t))) {
      cost[t] += w->profiled_latency(0, w->max_batch);
      ++n;
    }
    if (n) cost[t] /= n;
  }
  static_fraction_ = fractions(app, cost);
}

double SplitBudgetDropping::budget_fraction(TaskId task, const DeploymentView& view) {
  if (!worst_case_) {
    if (static_fraction_.empty()) compute_static(view);
    return static_fraction_[task];
  }
  if (wcl_sync_ != planner_->syncs()) {
    const App& app = view.app();
    std::vector<double> wcl(app.tasks.size());
    for (std::size_t t = 0; t < wcl.size(); ++t) {
      const auto id = static_cast<TaskId>(t);
      wcl[t] = planner_->queue_delay(id) + 2.0 * planner_->exec_time(id);
    }
    wcl_fraction_ = fractions(app, wcl);
    wcl_sync_ = planner_->syncs();
  }
  return wcl_fraction_[task];
}

DropReason SplitBudgetDropping::decide(const Item& item, const DropContext& ctx) {
  const Time budget = (item.deadline - item.origin) * budget_fraction(item.task, *ctx.view);
  Time spent_here = ctx.batch_start - item.enqueued;
  if (check_ == SplitCheck::kPredictive) {
    spent_here += ctx.exec_time;
  } else if (check_ == SplitCheck::kWindow) {
    // PARD's pipelines run one variant per worker (slot 0).
    spent_here += ctx.worker->profiled_latency(0, ctx.worker->max_batch);
  }
  return spent_here > budget ? DropReason::kStageBudget : DropReason::kNone;
}

}  // namespace tessera
