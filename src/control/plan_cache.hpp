#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "plan/jigsawserve/planner.hpp"

namespace tessera::control {

// The controller's plans by demand. A day of 5-minute bins asks for hundreds of plans at
// nearby demands, so demands are rounded UP to a geometric grid of relative step `step`
// (planning for a little more than predicted is safe) and each grid point is solved once.
// A demand no plan can serve gets the plan for the largest serviceable demand, as in the
// paper (§5: "it uses the configuration that can serve the highest demand").
class PlanCache {
 public:
  // `planner`: how a grid point's plan is made (empty: plan::make_plan).
  using Planner = std::function<plan::JigsawPlan(const plan::PlanInput&, const plan::PlanOptions&)>;
  PlanCache(const plan::PlanInput& input, const plan::PlanOptions& options, double step,
            Planner planner = {});

  struct Lookup {
    const plan::JigsawPlan* plan = nullptr;
    double grid_demand_rps = 0.0;  // the demand the plan was made for (before slack)
    bool fallback = false;         // the demand was not serviceable: the max-demand plan
    bool solved = false;           // this lookup ran the MILP (not cached)
    double solve_seconds = 0.0;
    // A solver limit cut the plan's MILP (or the max-demand search) short: the plan may not
    // be the optimum (PlanOptions::milp.node_limit / time_limit_s).
    bool limited = false;
  };
  Lookup plan_for(double demand_rps);

  int solves() const { return solves_; }
  int limited_solves() const { return limited_solves_; }
  // The largest serviceable demand (solved on first need).
  const plan::MaxDemand& max_demand();

 private:
  double grid_point(double demand_rps) const;

  plan::PlanInput input_;
  plan::PlanOptions options_;
  double step_;
  Planner planner_;
  std::map<long, plan::JigsawPlan> plans_;  // by grid index
  std::optional<plan::MaxDemand> max_;
  int solves_ = 0;
  int limited_solves_ = 0;
};

}  // namespace tessera::control
