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
  // What the plan promises (docs/plan.md#verification): this SLO attainment on the plan's
  // workload, checked by simulation. The workload: `workload_file` (a run spec's workload
  // section; its rate scaled to the demand) or, when empty, Poisson arrivals at the demand.
  double attainment_target = 0.99;
  std::filesystem::path workload_file;
  // Burst-aware demand (docs/plan.md#headroom): the planned demand is the least service
  // rate that turns away at most `burst_excess` of the workload's requests when each may
  // queue for at most `queue_delay_ms` (control::burst_aware_demand); 0: the mean demand
  // with `slack`, no burst model.
  double queue_delay_ms = 0.0;
  double burst_excess = 0.005;
  // `headroom.model`: false: `utilisation_cap` alone (the default); true: also the M/D/c
  // cap per instance kind (PlanInput::mdc_wait_s), with queue_delay_ms as its wait budget
  // and 1 - attainment_target as the tail it allows.
  bool mdc = false;
  // Sets input.mdc_wait_s / mdc_epsilon from the fields above (after overriding them).
  void apply_headroom_model();
  int verify_rounds = 8;  // plans tried before the verification gives up
};

PlanSpec parse_plan_spec(const SpecNode& node);
PlanSpec load_plan_spec(const std::filesystem::path& file);

}  // namespace tessera::plan
