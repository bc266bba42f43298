#pragma once

// The surrogate decomposition bound of PPipe's multi-DNN MILP (docs/plan.md#ppipe-planner,
// "Surrogate decomposition bound"). For several DNNs the A.2 objective is max min_m x_m / w_m
// and the DNNs share nothing but the per-class GPU budgets (each DNN's vGPUs sit on its own
// whole GPUs per (class, position)), so a plan reaching t exists only if every DNN m has a
// plan of its own serving t w_m, and those plans together fit every class. Summing the class
// budgets with prices p >= 0 (the LP relaxation's budget duals) gives a necessary condition
// that keeps each DNN's integrality: sum_m H_m(t w_m) <= p . N, where H_m(tau) is the least
// p-weighted physical GPUs of a plan of DNN m alone serving >= tau (a small per-DNN MILP).
// When the condition fails at t, t is a proven upper bound on the optimum. The bound is
// found by bisection on t; the per-DNN plans found on the way are combined into a plan when
// they fit every class (the primal side), and the caller may improve its plan after each
// target (PlanImprover), whose plans also raise the bisection's lower end. When they over-use a
// class, a repair re-solves each over-using DNN with what the others leave of every class; the
// bisection runs between the best combined plan (or unproven target) and the proven bound.
//
// Plain functions over a caller-supplied oracle (the planner answers it with CBC; tests with
// hand-made value functions). No shared state; not thread-safe only as far as the oracle is.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/ppipe/ppipe_plan.hpp"

namespace tessera::plan {

// The oracle's answer for DNN m at target tau with prices p.
struct DnnTargetAnswer {
  // Proven lower bound on the least p-weighted physical GPUs of a plan of the DNN alone
  // serving >= tau; +infinity when no such plan exists (proven). 0 is always valid.
  double cost_lower = 0.0;
  // A plan found (may be empty): its physical GPUs per class and the plan itself.
  std::vector<int> gpus;
  ppipe::DnnPlan plan;
  // The caller's own record of the plan (the planner: its MILP's values by variable name),
  // carried along with it untouched.
  std::vector<std::pair<std::string, double>> values;
};
using DnnTargetOracle =
    std::function<DnnTargetAnswer(int m, double tau, const std::vector<double>& prices)>;
// The primal side's repair question: the same as DnnTargetOracle, but DNN m may use at most
// caps[k] physical GPUs of class k (what the other DNNs' plans leave). Its plan, when found,
// fits beside theirs.
using DnnCappedOracle = std::function<DnnTargetAnswer(
    int m, double tau, const std::vector<double>& prices, const std::vector<int>& caps)>;
// The caller's own primal step, asked after every tested target (the planner: the full
// model restricted to the configurations the per-DNN plans used so far, a column pool):
// returns the objective of the best plan it holds (0: none). Its plan stays the caller's.
using PlanImprover = std::function<double()>;

struct SurrogateOptions {
  double stop_gap = 0.01;      // stop once bound <= best plan x (1 + stop_gap)
  int max_tests = 8;           // bisection steps (each asks the oracle once per DNN)
  double cpu_limit_s = 10;     // seconds for the whole bisection (checked between tests) ...
  bool cpu_time_limit = true;  // ... of CPU time (true) or wall-clock time
  // A wall-clock deadline checked between tests too (none: cpu_limit_s alone).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  bool trace = false;  // one line per tested target on stderr
  // Re-pricing rounds per target when the per-DNN plans over-use a class (0: the given
  // prices only).
  int price_rounds = 2;
  // ... tried only when the least costs fall short of the budget by at most this fraction,
  // and only while each step narrows the shortfall.
  double reprice_within = 0.005;
  // Primal side: when the per-DNN plans at a target over-use a class, up to this many
  // Gauss-Seidel passes re-solve each over-using DNN with the GPUs the others leave
  // (DnnCappedOracle); 0 or no capped oracle: no repair.
  int repair_passes = 1;
  // ... and when that fails, a repair from these GPUs per DNN per class (the caller's
  // split, e.g. the LP relaxation's rounded; each class's sum <= its count; empty: none):
  // each DNN keeps its plan when it fits beside the others' split, else is re-solved there.
  std::vector<std::vector<int>> shares;
  // After a target not proven, test next t x budget / (its least costs) x (1 + this), where
  // costs growing in proportion to t would pass the budget (0: plain bisection).
  double extrapolate = 0.0;
};

struct SurrogateResult {
  double bound = 0.0;  // proven: no plan has min_m x_m / w_m above it
  int tests = 0;       // targets tested
  int oracle_calls = 0;
  int repair_calls = 0;   // capped-oracle calls of the primal repair
  double improved = 0.0;  // the best objective the PlanImprover returned (0: none)
  // The best plan assembled from per-DNN plans that fit every class (empty: none), and its
  // objective min_m x_m / w_m.
  std::vector<ppipe::DnnPlan> plan;
  std::vector<std::vector<std::pair<std::string, double>>> plan_values;  // per DNN
  double plan_objective = 0.0;
};

// weights w_m (> 0), counts N_k, prices p_k (>= 0, one per class), incumbent: the objective
// of a known plan (0: none), upper: a known bound (the LP relaxation's). Throws
// std::invalid_argument on sizes that disagree, a weight <= 0, a negative or non-finite
// price, an incumbent above the upper bound, or shares of the wrong size, negative or
// above a class's count.
SurrogateResult surrogate_bound(const std::vector<double>& weights, const std::vector<int>& counts,
                                const std::vector<double>& initial_prices, double incumbent,
                                double upper, const SurrogateOptions& options,
                                const DnnTargetOracle& oracle, const DnnCappedOracle& repair = {},
                                const PlanImprover& improve = {});

}  // namespace tessera::plan
