#pragma once

// The data plane a re-planned day runs with `tessera replan --data-plane verified`, chosen so
// that it also holds when a bin brings more than its plan (docs/replan.md#verification): each
// data plane of a short list is simulated on the plan at its planned demand and under an
// overload probe (the same plan and data plane, arrivals at the demand x an overload factor),
// and the plane with the best expected attainment over the day's mix of bins that do and do
// not beat their prediction wins; the factor and the mix default to the controller's own
// prediction error on the day (observed_overload).
//
// Ownership: everything is returned by value; the run specs are the caller's. Not
// thread-safe: call from one thread (each call runs its own simulations).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/policy_set.hpp"
#include "spec/run_spec.hpp"

namespace tessera::control {

// One data plane the verification tries on a plan: every policy family explicit.
struct DataPlaneChoice {
  std::string name;  // e.g. "pard (central, jigsaw batching)"
  PolicyConfig policies;
};

// One data plane's simulation summary (summary.json's fields) for `run` with its policies.
nlohmann::json simulate_data_plane(const RunSpec& run, const PolicyConfig& policies);

// What one data plane did on the plan.
struct DataPlaneScore {
  std::string name;
  double attainment = 0.0;  // at the planned demand
  double goodput_rps = 0.0;
  double overload_attainment = 0.0;  // under the overload probe
  double expected = 0.0;             // the rule's score (pick_under_overload)
  nlohmann::json summary;            // at the planned demand
};

struct OverloadPick {
  std::size_t index = 0;               // into the planes given
  std::vector<DataPlaneScore> scores;  // one per plane, in their order
};

// The rule: the plane with the best expected attainment over a day whose bins beat their
// prediction with probability `overload_share`: (1 - share) x its attainment at the planned
// demand (`at_demand`) + share x its attainment under the probe (`overloaded`); ties go to the
// attainment at the demand, then goodput, then list order. share 0: the best at the demand.
// `planes` must not be empty; `overload_share` is clamped to [0, 1].
OverloadPick pick_under_overload(const RunSpec& at_demand, const RunSpec& overloaded,
                                 const std::vector<DataPlaneChoice>& planes, double overload_share);

// How a day beats the controller's predictions: with the prediction of each bin the mean of
// the `history_bins` before it (DemandPredictor, as the controller predicts), over the bins
// from the second on that have a positive prediction, `factor` is the `quantile` of demand /
// prediction (at least 1) and `share` the fraction of those bins whose demand beat the
// prediction x (1 + `slack`). {1, 0} when there are fewer than two bins.
struct ObservedOverload {
  double factor = 1.0;
  double share = 0.0;
};
ObservedOverload observed_overload(const std::vector<uint64_t>& counts_per_bin, int history_bins,
                                   double slack, double quantile = 0.95);

}  // namespace tessera::control
