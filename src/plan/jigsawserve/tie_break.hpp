#pragma once

// Reproducible plans (docs/plan.md#reproducible-plans). Eq. 14 often has several optimal
// plans of equal accuracy and slices (two 2g.20gb instances or one 4g.40gb); which one CBC
// returns depends on its search path, so it has varied between machines and builds. The
// tie-break is a second, lexicographic solve: the primary objective is held within
// `tolerance` of the first solve's value, and a secondary objective over the instance
// counts is minimised to optimality, so the plan depends on the model, not on how CBC got
// there. Pure functions on a model; no state, thread-safe (solving is not: see solve_cbc).

#include <cstdint>
#include <vector>

#include "plan/milp/milp.hpp"

namespace tessera::plan {

// The secondary weight of the candidate at `rank` (its position in the formulation's
// candidate list, which the spec fixes): a fixed pseudo-random integer in [4096, 8192).
// Weights near each other favour fewer instances; their spread makes two different plans
// tie only if their weight sums collide.
std::int64_t tie_break_weight(int rank);

// The tie-break model: `primary` (a maximisation) plus the row
//   sum(primary objective) >= primary_objective - tolerance,
// with the objective replaced by: minimise sum over i of tie_break_weight(i) * count_var[i].
MilpModel tie_break_model(const MilpModel& primary, const std::vector<int>& count_var,
                          double primary_objective, double tolerance);

}  // namespace tessera::plan
