#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plan/jigsawserve/planner.hpp"
#include "policy/policy_set.hpp"
#include "sim/simulator.hpp"
#include "workload/arrival.hpp"

namespace tessera::control {

// JigsawServe's controller loop in simulation (§3.5): every bin it predicts the next bin's
// demand from the last `history_bins`, plans for it (with the planner's slack) and moves
// the running deployment to the new plan, which takes `reconfiguration_delay`.
struct ControllerOptions {
  Time bin = 300.0;
  int history_bins = 5;
  Time reconfiguration_delay = 10.0;
  // false: new workers start after the delay while the workers they replace keep serving
  // until then (non-disruptive, with spare GPUs). true: replaced workers stop at the bin
  // boundary (their GPUs are being repartitioned) and items for a task left without
  // workers wait for the new ones.
  bool disruptive = false;
  double demand_step = 0.02;  // PlanCache's grid step
  // How the controller makes a plan for a demand: plan::make_plan when empty; the replan
  // command's `controller: {verify: true}` verifies each plan by simulation
  // (control::verify_plan) with the plan spec's headroom and target.
  std::function<plan::JigsawPlan(const plan::PlanInput&, const plan::PlanOptions&)> planner;
  bool verify = false;  // the spec asked for verification (the command sets `planner`)
};

// One bin of a re-planned run.
struct BinRecord {
  int bin = 0;
  double demand_rps = 0.0;     // arrivals in the bin / bin length
  double predicted_rps = 0.0;  // the controller's prediction for this bin
  double planned_rps = 0.0;    // the demand the plan serves (grid point, before slack)
  bool fallback = false;       // the prediction was not serviceable: the max-demand plan
  bool has_plan = true;
  int slices = 0;                 // the plan's GPU slices
  double planned_accuracy = 0.0;  // the plan's A_obj (Eq. 12)
  int workers = 0;                // workers in the plan
  int started = 0;                // workers started by this bin's reconfiguration
  int stopped = 0;                // workers stopped by it
  double solve_seconds = 0.0;     // MILP time spent in this bin (0 when cached)
  // Requests that finished in the bin.
  uint64_t finished = 0, ok = 0, late = 0, dropped = 0, failed = 0;
  double accuracy = 0.0;  // mean accuracy of the completed ones
  // Per sub-request (§4.5; RequestRecord::subrequests): a drop at a task with
  // multiplicative factor F counts F.
  double subrequests = 0.0, subrequests_violated = 0.0;
  bool solve_limited = false;  // a solver limit cut this bin's MILP short (not proven optimal)
  // Where the bin's violations happened: drops made at each task (app task order), of the
  // requests that ended in the bin.
  std::vector<uint64_t> dropped_at;
  // What the verification (ControllerOptions::planner with verification) measured on the
  // bin's plan at its planned demand: its attainment, and why it stopped ("met", "GPUs ran
  // out", ...). Empty `verify_stop`: the plan was not verified (no verification, or the
  // max-demand fallback plan).
  double verified_attainment = 0.0;
  std::string verify_stop;
  // Per frame: requests that were not ok over finished requests.
  double violation_rate() const {
    return finished ? static_cast<double>(finished - ok) / static_cast<double>(finished) : 0.0;
  }
  double subrequest_violation_rate() const {
    return subrequests > 0.0 ? subrequests_violated / subrequests : 0.0;
  }
};

struct ReplanResult {
  std::string space;
  Time bin = 300.0;
  std::vector<BinRecord> bins;
  int solves = 0;
  double accuracy_max = 0.0;  // A_max of the app (Eq. 12)
  int slices_available = 0;
  uint64_t submitted = 0, ok = 0, late = 0, dropped = 0, failed = 0;
  double subrequests = 0.0, subrequests_violated = 0.0;
  double wall_seconds = 0.0;
  // No plan of the space serves any demand: the day was not run; `message` says why.
  bool infeasible = false;
  std::string message;
  int limited_solves = 0;  // MILP solves a solver limit cut short (PlanCache::limited_solves)
  std::vector<std::string> tasks;  // the app's task names (BinRecord::dropped_at's order)
};

// Runs the day (a space with no plan at any demand comes back `infeasible`, without
// simulating): the arrivals from `arrivals` (a finite stream), the deployment re-planned
// every bin in `options.space`. `expected_counts` are the stream's arrivals per bin, read
// beforehand (count_per_bin on a second copy of the stream): the first bin, with no
// history yet, is planned for its own demand (a deployment sized before traffic starts),
// and ticks stop after the last bin. Every later bin is planned from observed arrivals
// only.
ReplanResult run_replanning(const plan::PlanInput& input, const plan::PlanOptions& options,
                            const PolicyConfig& policies, const SimOptions& sim,
                            const ControllerOptions& controller, ArrivalSource& arrivals,
                            const std::vector<uint64_t>& expected_counts);

// Arrivals per bin of a stream (read once; for the first bin's size and for reports).
std::vector<uint64_t> count_per_bin(ArrivalSource& arrivals, Time bin);

}  // namespace tessera::control
