#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "plan/jigsawserve/planner.hpp"
#include "profile/profile_table.hpp"

namespace tessera::plan {

// plan.json (docs/plan.md#output): instances per task, the GPU layout, the predicted
// throughput, path latencies, accuracy and slices, the solver statistics, and which
// profiles are measured and which derived.
nlohmann::json plan_to_json(const JigsawPlan& plan, const PlanInput& input);

// The human-readable table `tessera plan` prints.
void print_plan(std::ostream& out, const JigsawPlan& plan, const PlanInput& input);

// The deployment section for `tessera simulate` (docs/specs.md#deployment).
void write_deployment_yaml(std::ostream& out, const JigsawPlan& plan, const PlanInput& input);

// The curves the plan's workers need, on the segment names the deployment uses.
ProfileTable plan_profiles(const JigsawPlan& plan, const PlanInput& input);

// The Fig. 3 table: max serviceable demand per search space, relative to Unopt when it is
// in the list, and the slices its plan uses.
void print_max_demand(std::ostream& out, const std::vector<MaxDemand>& rows, int slices);
nlohmann::json max_demand_to_json(const std::vector<MaxDemand>& rows, const PlanInput& input);

}  // namespace tessera::plan
