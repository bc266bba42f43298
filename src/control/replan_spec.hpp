#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include "control/replanning.hpp"
#include "core/spec_node.hpp"
#include "plan/jigsawserve/plan_spec.hpp"
#include "policy/policy_set.hpp"
#include "sim/simulator.hpp"

namespace tessera::control {

// A re-planning spec (docs/replan.md): a plan spec, a day of traffic, the controller's
// settings, the search spaces to compare and the data-plane policies.
struct ReplanSpec {
  std::filesystem::path file;
  plan::PlanSpec plan;
  std::optional<SpecNode> workload;  // always set after parsing
  std::vector<plan::SearchSpace> spaces;
  ControllerOptions controller;
  PolicyConfig policies;
  SimOptions sim;
};

ReplanSpec parse_replan_spec(const SpecNode& node);
ReplanSpec load_replan_spec(const std::filesystem::path& file);

}  // namespace tessera::control
