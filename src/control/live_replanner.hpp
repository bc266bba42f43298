#pragma once

// LiveReplanner: JigsawServe's controller for a live server (`tessera serve --replan`;
// docs/serve.md#live-re-planning). The caller measures demand (the requests the server
// admitted in each window of `controller.bin_s`) and closes each window with that count;
// the controller makes the same decision the simulated loop makes (ReplanDecider: mean
// of the last history_bins windows, the planner's slack, the plan cache and its
// max-demand fallback) and, when the plan changes, hands back the deployment to apply as
// one reconfiguration (Server::reconfigure). Windows are ticked by the caller, so tests
// drive it without a clock.
//
// Owns its plan input, options and plans. Not thread-safe: one caller (the serve
// command's controller thread, or a test).

#include <cstdint>
#include <optional>
#include <string>

#include "control/replan_decider.hpp"
#include "engine/deployment.hpp"

namespace tessera::control {

struct LiveDecision {
  int window = 0;  // windows closed so far (the first is 1)
  uint64_t arrivals = 0;
  double seconds = 0.0;
  double measured_rps = 0.0;
  BinRecord record;  // prediction, planned demand, plan facts, solve time
  // The new plan's deployment when the plan changed; unset when the current one stays.
  std::optional<Deployment> apply;
  std::string plan;  // the chosen (or kept) plan in short (plan_summary)
};

// "planned 24.0 req/s: 10 slices, 12 workers, accuracy 0.931 (max-demand plan)".
std::string plan_summary(const BinRecord& rec);

class LiveReplanner {
 public:
  LiveReplanner(plan::PlanInput input, plan::PlanOptions options, ControllerOptions controller);
  LiveReplanner(const LiveReplanner&) = delete;
  LiveReplanner& operator=(const LiveReplanner&) = delete;

  // A demand window of `seconds` ended with `arrivals` requests admitted in it.
  LiveDecision close_window(uint64_t arrivals, double seconds);

  const plan::PlanInput& input() const { return input_; }
  const ControllerOptions& controller() const { return controller_; }
  const plan::PlanOptions& options() const { return options_; }

 private:
  plan::PlanInput input_;
  plan::PlanOptions options_;
  ControllerOptions controller_;
  ReplanDecider decider_;  // refers to input_ (declared before it)
  int windows_ = 0;
};

}  // namespace tessera::control
