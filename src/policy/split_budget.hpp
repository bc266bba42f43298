#pragma once

#include <memory>
#include <vector>

#include "policy/pard/planner_fed_dropping.hpp"

namespace tessera {

// Per-stage latency budgets: the SLO split over the tasks of a path, and an item is
// dropped at a task when the time it spends there (measured from reaching the task's
// queue, t_r) exceeds that task's budget. The budgets:
//  - static (Clipper++, Nexus, PARD-split): budget_k = SLO · d_k / Σ d_i, with d at each
//    task's configured max batch and Σ over the slowest path through k;
//  - worst-case latency (PARD-WCL): budget_k = SLO · WCL_k / Σ WCL_i with
//    WCL_i = q_i + 2·d_i (queueing + the worst batch wait + execution), re-split at every
//    State Planner sync.
// The checks (SplitCheck), all at t_b with t_e the batch's expected start:
//  - kPredictive (clipper++-predictive, PARD-split, PARD-WCL): t_e − t_r + d_k > budget,
//    d_k at the batch's size;
//  - kReactive (clipper++, PARD §5.1: Clipper "drops requests only if they already exceed
//    the latency objective before inference"): t_e − t_r > budget;
//  - kWindow (nexus, PARD §5.1's window scan): t_e − t_r + d_k(b_k) > budget, with d at
//    the worker's batch size b_k, the window's length. Scanning a FIFO queue front to
//    back and dropping each item that fails is the paper's scan: the front item is the
//    one that has waited longest, so the first window whose front fits fits whole.
class SplitBudgetDropping final : public PlannerFedDropping {
 public:
  enum class SplitCheck { kPredictive, kReactive, kWindow };
  SplitBudgetDropping(std::shared_ptr<StatePlanner> planner, bool worst_case,
                      SplitCheck check = SplitCheck::kPredictive);

  // The task's share of the SLO, as a fraction in (0, 1].
  double budget_fraction(TaskId task, const DeploymentView& view);

 private:
  DropReason decide(const Item& item, const DropContext& ctx) override;
  void compute_static(const DeploymentView& view);

  bool worst_case_;
  SplitCheck check_;
  std::vector<double> static_fraction_;
  std::vector<double> wcl_fraction_;
  uint64_t wcl_sync_ = ~uint64_t{0};  // planner sync the WCL fractions were computed at
};

}  // namespace tessera
