#pragma once

#include <filesystem>
#include <string>

#include "core/spec_node.hpp"
#include "plan/jigsawserve/problem.hpp"
#include "plan/jigsawserve/scaling.hpp"

namespace tessera::plan {

// A plan spec (docs/plan.md#plan-spec): the app, its profiles, the GPU catalogue, the
// scaling model for missing segment profiles, the SLOs, the demand and the solver options.
struct PlanSpec {
  std::filesystem::path file;
  std::filesystem::path app_file;  // empty when the app is written inline
  std::string whole_gpu_segment;   // the profiles' segment that is one whole GPU
  ScalingModel scaling;
  std::string mps_fit_text;  // how delta was obtained, for reports
  PlanInput input;
  PlanOptions options;
};

PlanSpec parse_plan_spec(const SpecNode& node);
PlanSpec load_plan_spec(const std::filesystem::path& file);

}  // namespace tessera::plan
