#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "engine/app.hpp"
#include "plan/jigsawserve/search_space.hpp"
#include "plan/jigsawserve/segments.hpp"
#include "plan/milp/milp.hpp"
#include "profile/profile_table.hpp"

namespace tessera::plan {

// Everything the JigsawServe controller's MILP reads (paper Table 2).
struct PlanInput {
  App app;                // tasks, variants (accuracy A(t,v), fanout), edges
  ProfileTable profiles;  // curves on the catalogue's segment names (derive_segment_profiles)
  SegmentCatalogue catalogue;
  std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64};
  double latency_slo_ms = 0.0;  // SLO_l
  double accuracy_slo = 0.9;    // SLO_a, a fraction of the best achievable accuracy
  double demand_rps = 0.0;      // R, requests/s at the root tasks
  int slices = 28;              // S_avail
  // Headroom (docs/plan.md#headroom): the MILP plans each instance at this fraction of its
  // profiled throughput, per task (tasks past the end: the last entry; empty: 1), so that
  // batch formation and queueing at the planned utilisation stay within the SLO.
  std::vector<double> utilisation_cap;
  double utilisation_cap_of(TaskId task) const {
    if (utilisation_cap.empty()) return 1.0;
    return utilisation_cap[std::min<std::size_t>(task, utilisation_cap.size() - 1)];
  }
  // The M/D/c headroom model (plan/jigsawserve/queueing_headroom.hpp, `headroom.model:
  // mdc`): when mdc_wait_s > 0 each instance kind also runs at most at the utilisation where
  // its M/D/c queue (c: the kind's MPS processes, D: its batch latency) keeps a request
  // waiting longer than mdc_wait_s with probability at most mdc_epsilon.
  double mdc_wait_s = 0.0;
  double mdc_epsilon = 0.01;
};

struct PlanOptions {
  SearchSpace space;
  double alpha = 1.0;                 // weight of the normalised accuracy in the objective
  double beta = 0.035;                // weight of one slice
  double slack = 0.05;                // demand is planned at R * (1 + slack)
  double accuracy_tolerance = 0.005;  // relative grid step of the task-accuracy levels
  bool packing_constraints = true;    // add the MIG-packability rows (docs/plan.md)
  bool prune_dominated = true;        // drop dominated instance types (docs/plan.md#pruning)
  // Appendix B slice budgets (task-graph-uninformed spaces): the expected resources of a
  // task use the highest throughput of *any* instance of its most accurate variant (the
  // paper). false: only instances within the task's latency budget (tessera's earlier
  // rule; a task with none gets 0 slices). Spec key `budget_slices`.
  bool budget_any_instance = true;
  MilpOptions milp = default_milp_options();
  // Equal-optimal plans (same objective within the MILP's gap) are broken by a second,
  // lexicographic solve (docs/plan.md#reproducible-plans): among the plans within
  // milp.absolute_gap of the Eq. 14 optimum, the fewest instances, then the least sum of
  // the instances' canonical ranks (candidate order). false: the first plan CBC returns.
  bool tie_break = true;
  // Max-demand solves stop within this relative gap on R.
  double max_demand_gap = 1e-3;
  // The max-demand search's deterministic limits (docs/plan.md#max-serviceable-demand):
  // nodes of the MILP that maximises R, and feasibility MILPs after it. Each MILP also
  // has milp.node_limit and, as a backstop, milp.time_limit_s.
  long max_demand_nodes = 2000;
  int max_demand_solves = 40;

  // CBC stops when the objective is within 1e-4 of the bound: below one slice's worth
  // (beta = 0.035) and within the accuracy grid's own tolerance. CBC's integer
  // preprocessing is off: on these models it costs time and made the 840-slice solves
  // stall (docs/benchmarks.md#planner).
  // The node limit makes a cut-short solve stop at the same point on any machine; the
  // time limit stays as a backstop (a plan it cuts short says so: SolveStats::limit).
  static MilpOptions default_milp_options() {
    MilpOptions o;
    o.node_limit = 500;
    o.relative_gap = 0.0;
    o.absolute_gap = 1e-4;
    o.preprocess = false;
    return o;
  }
};

// The task graph as the MILP sees it. F(t,v,t') = fanout(v) * share(v) on a share edge
// and fanout(v) on a parallel edge. Path fractions f_p are products of edge weights: root
// weights are 1/#roots; a task's out-edges get the share of its most accurate variant
// (share edges) or 1 (parallel edges), normalised to sum to 1.
struct GraphEdge {
  TaskId from = 0;
  TaskId to = 0;
  std::vector<double> factor;  // F(from, v, to) per variant of `from`
  double weight = 0.0;         // path-fraction weight
};
struct TaskGraph {
  std::vector<GraphEdge> edges;
  std::vector<std::vector<int>> out;  // per task: indices into edges
  std::vector<std::vector<int>> in;
  std::vector<double> root_weight;  // 0 for non-roots
  std::vector<TaskId> order;        // topological
  std::vector<std::vector<TaskId>> paths;
  std::vector<double> path_fraction;
};
// Throws std::invalid_argument for an app with joins (not supported by the planner).
TaskGraph analyse_graph(const App& app);

// The most accurate variant of a task (the first on ties).
int best_variant(const Task& task);

// One (task, variant, segment, max batch) instance type.
struct Candidate {
  TaskId task = 0;
  int variant = 0;
  int segment = 0;  // index into catalogue.segments
  int batch = 1;
  double latency_ms = 0.0;      // L: p95 latency of one batch on one MPS process
  double throughput_rps = 0.0;  // H: the whole segment (mps processes) back to back, times
                                // the task's utilisation cap (PlanInput::utilisation_cap)
  int cost = 1;                 // s_n
  bool measured = true;
};

// Every instance type the space allows, for which a profile exists.
std::vector<Candidate> enumerate_candidates(const PlanInput& input, const SearchSpace& space);

// Drops every instance type that another of the same (task, variant) dominates: no more
// slices, no more latency, no less throughput (ties keep the first). With `combinations`,
// also those that k instances of a cheaper type dominate: k * cost and the k instances'
// share of the MIG-packability rows no more than the one's, no more latency, k times the
// throughput no less (only for catalogues whose packability those rows capture, or
// without them). Exact for every constraint but Eq. 10's capacity weighting
// (docs/plan.md#pruning).
std::vector<Candidate> prune_dominated(std::vector<Candidate> candidates,
                                       bool combinations = false);

// Appendix B static task-wise budgets for task-graph-uninformed spaces.
struct TaskBudgets {
  std::vector<double> latency_ms;  // per task: 2 * L(t) must stay within it
  std::vector<double> slices;      // per task: slice budget
};
// `any_instance`: PlanOptions::budget_any_instance.
TaskBudgets static_budgets(const PlanInput& input, const TaskGraph& graph,
                           const std::vector<Candidate>& candidates, bool any_instance = true);

// Demand per task when every task runs `variant_of[t]` (used for budgets and bounds).
std::vector<double> propagate_demand(const TaskGraph& graph, const std::vector<int>& variant_of,
                                     double root_demand);

}  // namespace tessera::plan

namespace tessera::plan {

// sum_p f_p * prod_{t in p} a_t, computed on the tree as
// S(t) = a_t * sum_{t->c} w * S(c) (S(leaf) = a_leaf) and sum_roots w_r S(r).
double system_accuracy(const TaskGraph& graph, const std::vector<double>& task_accuracy);

// A_max: system_accuracy with every task at its most accurate variant (Eq. 12).
double best_system_accuracy(const App& app, const TaskGraph& graph);

}  // namespace tessera::plan
