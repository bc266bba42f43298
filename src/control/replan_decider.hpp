#pragma once

// ReplanDecider: JigsawServe's controller decision (§3.5), one demand window at a time:
// observe the window's measured demand, predict the next window's as the mean of the last
// `history_bins` (DemandPredictor), and take the plan for it from the PlanCache (grid
// rounding up, the max-demand fallback). Shared by the simulated loop (run_replanning) and
// the live server's controller (LiveReplanner), so both make the same plans for the same
// demand series.
//
// Owns its plan cache; the plans it returns live as long as it does. `input` must outlive
// it. Not thread-safe: one caller.

#include <string>

#include "control/demand_predictor.hpp"
#include "control/plan_cache.hpp"
#include "control/replanning.hpp"

namespace tessera::control {

class ReplanDecider {
 public:
  ReplanDecider(const plan::PlanInput& input, const plan::PlanOptions& options,
                const ControllerOptions& controller);

  // A first plan sized for `rps` before any window is observed (the simulated day's bin
  // 0); it becomes current. nullptr when no plan of the space serves any demand (`why`
  // says so).
  const plan::JigsawPlan* initial(double rps, BinRecord& rec, std::string& why);
  // A window ended with measured demand `last_rps`: predicts the next, picks its plan and
  // fills `rec` (prediction, plan facts, solve time). Returns the new plan when it differs
  // from the current one (it becomes current), nullptr when the current one stays (also
  // when nothing is serviceable: rec.has_plan is then false).
  const plan::JigsawPlan* tick(double last_rps, BinRecord& rec);

  const plan::JigsawPlan* current() const { return current_; }
  void fill_plan_facts(const plan::JigsawPlan& p, BinRecord& rec) const;
  int solves() const { return cache_.solves(); }
  int limited_solves() const { return cache_.limited_solves(); }
  const plan::MaxDemand& max_demand() { return cache_.max_demand(); }

 private:
  const plan::JigsawPlan* choose(double rps, BinRecord& rec);

  const plan::PlanInput& input_;
  PlanCache cache_;
  DemandPredictor predictor_;
  const plan::JigsawPlan* current_ = nullptr;
};

}  // namespace tessera::control
