#pragma once

#include <memory>
#include <vector>

#include "policy/pard/planner_fed_dropping.hpp"

namespace tessera {

// Per-stage latency budgets: the SLO split over the tasks of a path, and an item is
// dropped at a task when the time it will have spent there (from reaching the task's
// queue to the end of its execution, t_e − t_r + d_k) exceeds that task's budget.
//  - static (Clipper++, PARD-split): budget_k = SLO · d_k / Σ d_i, with d at each task's
//    configured max batch and Σ over the slowest path through k;
//  - worst-case latency (PARD-WCL): budget_k = SLO · WCL_k / Σ WCL_i with
//    WCL_i = q_i + 2·d_i (queueing + the worst batch wait + execution), re-split at every
//    State Planner sync.
// The check and the budgets' definition are the same for every split-style policy.
class SplitBudgetDropping final : public PlannerFedDropping {
 public:
  SplitBudgetDropping(std::shared_ptr<StatePlanner> planner, bool worst_case);

  // The task's share of the SLO, as a fraction in (0, 1].
  double budget_fraction(TaskId task, const DeploymentView& view);

 private:
  DropReason decide(const Item& item, const DropContext& ctx) override;
  void compute_static(const DeploymentView& view);

  bool worst_case_;
  std::vector<double> static_fraction_;
  std::vector<double> wcl_fraction_;
  uint64_t wcl_sync_ = ~uint64_t{0};  // planner sync the WCL fractions were computed at
};

}  // namespace tessera
