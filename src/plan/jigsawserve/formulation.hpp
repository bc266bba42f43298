#pragma once

#include <vector>

#include "plan/jigsawserve/problem.hpp"
#include "plan/milp/milp.hpp"

namespace tessera::plan {

enum class PlanMode {
  kServeDemand,  // Eq. 14: max alpha * A_obj - beta * slices at demand R (1 + slack)
  kMaxDemand,    // Fig. 3: the largest root demand R any configuration serves
};

// Constraint groups, for naming what binds when a model is infeasible.
struct Relaxation {
  bool latency = false;   // Eq. 3 (or the task-wise latency budgets)
  bool accuracy = false;  // Eq. 13
  bool slices = false;    // Eq. 8, task-wise slice budgets, MIG packability
};

// The MILP of docs/plan.md#formulation, built on the given candidates (already filtered
// by the search space). Holds the variable indices needed to read a solution back.
struct Formulation {
  MilpModel model;
  std::vector<Candidate> candidates;  // after latency pruning
  std::vector<int> count_var;         // M per candidate
  int demand_var = -1;                // R (kMaxDemand only)
  double accuracy_max = 0.0;          // A_max
  double planned_demand = 0.0;        // R (1 + slack) in kServeDemand
  bool trivially_infeasible = false;  // a constraint group can be shown infeasible up front
  std::string infeasible_reason;      // ... and why
};

Formulation build_formulation(const PlanInput& input, const PlanOptions& options,
                              const TaskGraph& graph, std::vector<Candidate> candidates,
                              const TaskBudgets* budgets, PlanMode mode,
                              const Relaxation& relax = {});

// Per task, the candidates' task accuracy bounds used by the accuracy grid: the smallest
// task accuracy that can still meet SLO_a with every other task at its best variant.
std::vector<double> accuracy_lower_bounds(const PlanInput& input, const TaskGraph& graph,
                                          const std::vector<double>& a_min,
                                          const std::vector<double>& a_max);

}  // namespace tessera::plan
