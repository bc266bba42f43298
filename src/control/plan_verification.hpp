#pragma once

// Verification by simulation, in the loop (docs/plan.md#verification): a JigsawServe plan is
// simulated on its workload under a short list of data planes; when the best of them misses
// the attainment target, the tasks where requests were dropped (or, when lateness
// dominates, every task) get a lower utilisation cap (PlanInput::utilisation_cap) and the
// plan is solved again, until the target is met or the GPUs run out. When they run out,
// largest_verified_demand finds the largest demand whose verified plan meets the target.
//
// Ownership: everything is returned by value; the caller's RunBuilder says how a plan
// becomes a run spec (`tessera plan` writes and reads back the files it hands the user;
// the re-planning controller builds one in memory). Not thread-safe: call from one thread
// (each call runs its own simulations).

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/data_plane_pick.hpp"
#include "control/replanning.hpp"
#include "plan/jigsawserve/planner.hpp"
#include "policy/policy_set.hpp"
#include "spec/run_spec.hpp"
#include "workload/arrival.hpp"

namespace tessera::control {

// The short list, in order of preference on ties: JigsawServe's own data plane, and
// PARD, Clipper++ and naive FIFO on the plan's central queues with its L-hat(t) batching,
// then PARD as PARD runs it (per-worker queues, eager batching).
std::vector<DataPlaneChoice> default_data_planes();

// The `policies:` section that reproduces `config` exactly (its preset, then every family
// named explicitly), as YAML lines indented by `indent` spaces.
std::string policies_yaml(const PolicyConfig& config, int indent = 2);

struct VerifyOptions {
  double target = 0.99;    // SLO attainment the plan promises
  int max_rounds = 8;      // plans solved and simulated at most
  double min_cap = 0.2;    // utilisation caps never go below this
  double min_step = 0.05;  // a round lowers a blamed task's cap by at least this fraction
  double max_step = 0.3;   // and at most this one
  std::vector<DataPlaneChoice> data_planes = default_data_planes();
  // The planning slack at a demand (burst-aware demand, docs/plan.md#headroom): the plan at
  // R is solved for R (1 + max(options.slack, slack_for(R))). Empty: options.slack.
  std::function<double(double demand_rps)> slack_for;
};

// The run spec a plan is verified with (its policies are replaced by each data plane's).
using RunBuilder = std::function<RunSpec(const plan::JigsawPlan&, const plan::PlanInput&)>;

struct VerifyRound {
  double demand_rps = 0.0;
  std::vector<double> utilisation_cap;  // per task, as planned in this round
  plan::PlanStatus status = plan::PlanStatus::kNoSolution;
  int slices = 0;
  double attainment = 0.0;  // the best data plane's
  double goodput_rps = 0.0;
  std::string data_plane;
};

struct Verification {
  bool met = false;         // the returned plan's attainment reached the target
  double attainment = 0.0;  // of the returned plan under `data_plane`
  double goodput_rps = 0.0;
  int rounds = 0;              // plans solved and simulated
  std::string stop;            // "met", "GPUs ran out", "rounds exhausted", "caps at minimum"
  DataPlaneChoice data_plane;  // the best data plane on the returned plan
  nlohmann::json summary;      // its simulation summary (summary.json's fields)
  std::vector<VerifyRound> history;
  plan::JigsawPlan plan;  // the met plan, else the best-attaining plan found
  plan::PlanInput input;  // with the utilisation caps `plan` was solved with
  // verify_data_planes with an overload probe: the factor, the chosen data plane's
  // attainment under the probe, and every data plane's scores (pick_under_overload).
  double overload_factor = 0.0;  // 0: no probe
  double overload_share = 0.0;
  double overload_attainment = 0.0;
  std::vector<DataPlaneScore> scores;
};

// Plans `input` (at input.demand_rps) with `options`, verifies, re-plans with the
// shortfall fed back. `input.utilisation_cap` is where the caps start; when the first plan
// with that headroom (and the burst-aware slack) does not fit, it is planned again with the
// caps at the profiled throughput and the burst-aware slack kept (not counted as a round),
// then, if that does not fit either, with `options.slack` too (the next round), and
// simulation decides.
Verification verify_plan(plan::PlanInput input, const plan::PlanOptions& options,
                         const RunBuilder& make_run, const VerifyOptions& verify);

// Simulates one run spec under each data plane: the best (highest attainment, then
// goodput, then list order) as {index, summary}.
std::pair<std::size_t, nlohmann::json> best_data_plane(const RunSpec& run,
                                                       const std::vector<DataPlaneChoice>& planes);

struct VerifiedDemand {
  double demand_rps = 0.0;  // the largest demand found whose verified plan met the target
  int probes = 0;           // verifications run in the search
  Verification at;          // the verification at that demand (met == false: none found)
};

// The largest demand in (0, upper_rps) whose verified plan meets the target: geometric steps
// down from `upper_rps` until one does, then bisection; at most `probes` verifications,
// stopping within `gap` (relative). Each probe starts from `input`'s caps.
VerifiedDemand largest_verified_demand(const plan::PlanInput& input,
                                       const plan::PlanOptions& options, const RunBuilder& make_run,
                                       const VerifyOptions& verify, double upper_rps,
                                       int probes = 6, double gap = 0.05);

// What the controller's verification found for the plan of one demand (its report's
// per-bin columns): the attainment of the returned plan and why the loop stopped.
struct VerifiedPlanFacts {
  double attainment = 0.0;
  std::string stop;
  int rounds = 0;
};
// By the demand planned (PlanInput::demand_rps as the planner was called with it).
using VerifiedPlanLog = std::map<double, VerifiedPlanFacts>;

// The re-planning controller's planner (ControllerOptions::planner): each plan verified on
// `seconds` of Poisson arrivals at its demand under the controller's `policies` (the data
// plane the day runs), with `sim`'s seed; burst-aware slack when `queue_delay_s` > 0. When
// `log` is set, each verification's outcome is recorded there (the planner holds it).
std::function<plan::JigsawPlan(const plan::PlanInput&, const plan::PlanOptions&)> verified_planner(
    const PolicyConfig& policies, const SimOptions& sim, double target, int rounds,
    double queue_delay_s, double burst_excess, double seconds = 60.0,
    std::shared_ptr<VerifiedPlanLog> log = nullptr);

// The data plane a re-planned day runs with `tessera replan --data-plane verified`
// (docs/replan.md#verification): the plan at `input.demand_rps` (the day's busiest bin)
// verified as the controller verifies, under every data plane of `planes`. With `overload`
// > 1 the returned plan's data planes are then ranked by pick_under_overload with
// `overload_share`: simulated at the demand and on `seconds` of Poisson arrivals at the
// demand x `overload` (same seed); the result's data_plane, attainment, goodput and summary
// are the pick's, `met` whether it meets the target at the demand. Otherwise the data plane
// is the best at the demand.
Verification verify_data_planes(const plan::PlanInput& input, const plan::PlanOptions& options,
                                const SimOptions& sim, double target, int rounds,
                                double queue_delay_s, double burst_excess, double seconds = 60.0,
                                double overload = 0.0, double overload_share = 0.0,
                                const std::vector<DataPlaneChoice>& planes = default_data_planes());

// Copies each bin's verification (by its planned demand) into its BinRecord; bins on the
// max-demand fallback plan were not verified and stay empty.
void attach_verification(const VerifiedPlanLog& log, ReplanResult& result);

// Burst-aware demand: the least service rate c such that a fluid queue served at c, fed by
// `arrivals`, turns away at most `excess` of the requests, where a request is turned away
// when the backlog ahead of it would take longer than `delay_s` to serve (the queueing
// delay the SLO leaves). At least the mean rate.
double burst_aware_demand(ArrivalSource& arrivals, double delay_s, double excess);

}  // namespace tessera::control
