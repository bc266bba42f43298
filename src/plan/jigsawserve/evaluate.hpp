#pragma once

#include <limits>
#include <string>
#include <vector>

#include "plan/jigsawserve/problem.hpp"

namespace tessera::plan {

// `count` instances (MIG instances, each running the segment's MPS processes) of one type.
struct PlanEntry {
  Candidate type;
  int count = 0;
};

struct TaskReport {
  double latency_ms = 0.0;    // Lhat(t): slowest active instance (Eq. 2)
  double demand_rps = 0.0;    // Rhat(t) (Eqs. 4-5, largest factor among active variants)
  double capacity_rps = 0.0;  // sum M * H (Eq. 6)
  double accuracy = 0.0;      // Ahat(t), throughput-weighted (Eq. 10)
  int slices = 0;             // Shat(t) (Eq. 7)
  double latency_budget_ms = std::numeric_limits<double>::infinity();  // not T only
  double slice_budget = std::numeric_limits<double>::infinity();       // not T only
};

struct PathReport {
  std::vector<TaskId> tasks;
  double fraction = 0.0;    // f_p
  double latency_ms = 0.0;  // sum 2 Lhat (Eq. 3)
  double accuracy = 0.0;    // A_p, product (Eq. 11)
};

// A plan checked against the original, nonlinear constraints (Eqs. 2-13).
struct PlanEvaluation {
  std::vector<TaskReport> tasks;
  std::vector<PathReport> paths;
  double accuracy = 0.0;      // A_obj, normalised to A_max (Eq. 12)
  double accuracy_max = 0.0;  // A_max
  int slices = 0;
  double objective = 0.0;               // alpha * A_obj - beta * slices (Eq. 14)
  std::vector<std::string> violations;  // empty when every constraint holds

  bool ok() const { return violations.empty(); }
};

// `root_demand` is the planned R (with slack). `budgets` are the Appendix B budgets for
// task-graph-uninformed spaces (nullptr otherwise).
PlanEvaluation evaluate_plan(const PlanInput& input, const PlanOptions& options,
                             const TaskGraph& graph, const std::vector<PlanEntry>& entries,
                             double root_demand, const TaskBudgets* budgets);

}  // namespace tessera::plan
