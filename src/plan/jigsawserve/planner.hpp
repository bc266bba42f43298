#pragma once

// JigsawServe's planner (§3.2, Eq. 14; docs/plan.md): for a root demand, the instances per
// (task, variant, MIG/MPS segment, batch) that maximise accuracy minus resource cost under
// the latency and accuracy SLOs, packed onto GPUs and checked against the nonlinear model;
// and the largest demand a search space serves (Fig. 3). JigsawServePlanner puts make_plan
// behind the planner seam (plan/planner.hpp). Pure functions; safe from several threads.

#include <optional>
#include <string>
#include <vector>

#include "engine/deployment.hpp"
#include "plan/jigsawserve/evaluate.hpp"
#include "plan/jigsawserve/packing.hpp"
#include "plan/jigsawserve/problem.hpp"
#include "plan/planner.hpp"

namespace tessera::plan {

struct SolveStats {
  int variables = 0;
  int integers = 0;
  int rows = 0;
  int candidates = 0;  // instance types after latency pruning
  double seconds = 0.0;
  int nodes = 0;
  double milp_objective = 0.0;         // the linearised objective CBC optimised
  double milp_bound = 0.0;             // CBC's bound on it (equal when optimal)
  MilpLimit limit = MilpLimit::kNone;  // the limit that cut the solve short, if any
  // The tie-break solve (PlanOptions::tie_break): "off", "settled" (the canonical plan),
  // or "not settled (node limit|time limit)" (a limit stopped it: the first plan, or the
  // best canonical one found, is kept).
  std::string tie_break = "off";
  int tie_break_nodes = 0;
};

// The JigsawServe controller's output: instances per (task, variant, segment, batch),
// their GPU layout, and the plan checked against the nonlinear model.
struct JigsawPlan {
  SearchSpace space;
  PlanStatus status = PlanStatus::kNoSolution;
  std::string message;            // why infeasible / no solution
  double demand_rps = 0.0;        // R asked for
  double planned_demand_rps = 0;  // R (1 + slack)
  std::vector<PlanEntry> entries;
  PlanEvaluation evaluation;
  GpuLayout layout;                          // one item per MIG instance, in entry order
  std::vector<int> layout_entry;             // item -> entry index
  int gpus_available = 0;                    // slices / gpu_compute
  std::vector<std::string> layout_problems;  // placement rule violations (never expected)
  SolveStats stats;
  std::optional<TaskBudgets> budgets;  // Appendix B budgets (not T)

  bool has_plan() const {
    return status == PlanStatus::kOptimal || status == PlanStatus::kFeasible;
  }
};

// Solves Eq. 14 for `input.demand_rps` in `options.space`. Never throws for an
// infeasible input: the JigsawPlan says so and names the binding constraint group.
JigsawPlan make_plan(const PlanInput& input, const PlanOptions& options);

struct MaxDemand {
  SearchSpace space;
  PlanStatus status = PlanStatus::kNoSolution;  // optimal: within max_demand_gap of the max
  std::string message;
  double max_demand_rps = 0.0;   // largest R with a feasible plan found (no slack applied)
  double upper_bound_rps = 0.0;  // proven: no plan serves more
  double seconds = 0.0;          // the search's time (without the final Eq. 14 plan)
  int solves = 0;                // MILPs solved in the search
  long nodes = 0;                // CBC nodes over the search's MILPs
  // What cut the search short (status feasible): "node limit", "time limit" or "solve
  // budget" (PlanOptions::max_demand_solves); empty when it finished.
  std::string limit;
  JigsawPlan plan;  // the Eq. 14 plan at that demand
};

// The largest root demand the space can serve (the paper's Fig. 3), within
// `options.max_demand_gap` (relative): a MILP maximising R with the same constraints
// (up to `options.max_demand_nodes` nodes, for a serviceable R and a bound), then at most
// `options.max_demand_solves` feasibility MILPs in a bisection on R with feasibility MILPs
// at fixed R until the serviceable R and the proven bound meet; then the plan at that R.
// Slack is not applied. `at_least_rps` > 0 is a demand known to be serviceable (e.g. the
// max of a smaller search space: A+S+T contains A+S): it is added as R >= at_least
// (x (1 - 1e-6)) to help CBC.
MaxDemand max_serviceable_demand(const PlanInput& input, const PlanOptions& options,
                                 double at_least_rps = 0.0);

// True when every plan of `a` is also a plan of `b` (each feature of a is in b).
bool is_subspace(const SearchSpace& a, const SearchSpace& b);

// The plan as a deployment for `tessera simulate`: one worker group per entry, with
// count = instances x MPS processes, on the segment's name (e.g. "1g.10gb/mps2"), with
// each task's Lhat(t) as its workers' batching timeout.
Deployment to_deployment(const JigsawPlan& plan, const PlanInput& input);

// What JigsawServe plans for: the problem and the solver's options.
struct JigsawRequest {
  PlanInput input;
  PlanOptions options;
};

// make_plan behind the seam: the report is the Eq. 14 plan; the deployment, the app's
// (to_deployment) when there is a plan.
class JigsawServePlanner final : public Planner<JigsawRequest, JigsawPlan> {
 public:
  PlannerKind kind() const override { return PlannerKind::kJigsawServe; }
  PlanResult<JigsawPlan> plan(const JigsawRequest& request) const override;
};

}  // namespace tessera::plan
