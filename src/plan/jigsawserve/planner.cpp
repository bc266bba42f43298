#include "plan/jigsawserve/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "plan/jigsawserve/formulation.hpp"
#include "plan/jigsawserve/tie_break.hpp"

namespace tessera::plan {

namespace {

// The node budget of the tie-break's lean first search (solve_plan): its own, not the
// spec's node_limit, since a lean node (no cuts, no heuristics) costs a fraction of a
// default one.
constexpr long kLeanTieBreakNodes = 2000;

struct Context {
  TaskGraph graph;
  std::vector<Candidate> candidates;
  std::optional<TaskBudgets> budgets;
};

Context prepare(const PlanInput& input, const PlanOptions& options) {
  Context c;
  c.graph = analyse_graph(input.app);
  c.candidates = enumerate_candidates(input, options.space);
  // Budgets come from the full set (Appendix B's "any instance"), then pruning.
  if (!options.space.task_graph) {
    c.budgets = static_budgets(input, c.graph, c.candidates, options.budget_any_instance);
  }
  if (options.prune_dominated) {
    // Several small instances may stand in for a large one where the slice sum and the
    // packability rows are all that limit them.
    const bool combinations = !options.packing_constraints || packing_rows_apply(input.catalogue);
    c.candidates = prune_dominated(std::move(c.candidates), combinations);
  }
  return c;
}

// Checks `plan.entries` against the nonlinear model at `root_demand` and packs the MIG
// instances.
void check_and_pack(const PlanInput& input, const PlanOptions& options, const Context& ctx,
                    double root_demand, JigsawPlan& plan) {
  plan.evaluation = evaluate_plan(input, options, ctx.graph, plan.entries, root_demand,
                                  ctx.budgets ? &*ctx.budgets : nullptr);
  std::vector<int> items;
  plan.layout_entry.clear();
  for (size_t e = 0; e < plan.entries.size(); ++e) {
    const auto& seg = input.catalogue.segments[static_cast<size_t>(plan.entries[e].type.segment)];
    for (int k = 0; k < plan.entries[e].count; ++k) {
      items.push_back(seg.mig);
      plan.layout_entry.push_back(static_cast<int>(e));
    }
  }
  plan.layout = pack_mig(input.catalogue, items);
  plan.layout_problems = check_layout(input.catalogue, plan.layout);
  plan.gpus_available = input.slices / input.catalogue.gpu_compute;
  if (options.packing_constraints && plan.layout.num_gpus() > plan.gpus_available) {
    plan.evaluation.violations.push_back("packing: the MIG instances need " +
                                         std::to_string(plan.layout.num_gpus()) + " GPUs, " +
                                         std::to_string(plan.gpus_available) + " available");
  }
}

// Rounds the MILP's counts, checks the plan and packs the MIG instances.
void read_solution(const PlanInput& input, const PlanOptions& options, const Context& ctx,
                   const Formulation& f, const MilpResult& r, double root_demand,
                   JigsawPlan& plan) {
  plan.entries.clear();
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    const int count = static_cast<int>(std::lround(r.value(f.count_var[i])));
    if (count > 0) plan.entries.push_back(PlanEntry{f.candidates[i], count});
  }
  check_and_pack(input, options, ctx, root_demand, plan);
  plan.stats.candidates = static_cast<int>(f.candidates.size());
  plan.stats.variables = f.model.num_vars();
  plan.stats.integers = f.model.num_integer();
  plan.stats.rows = f.model.num_rows();
  plan.stats.seconds = r.seconds;
  plan.stats.nodes = r.nodes;
  plan.stats.milp_objective = r.objective;
  plan.stats.milp_bound = r.best_bound;
  plan.stats.limit = r.limit;
}

bool solvable(const PlanInput& input, const PlanOptions& options, const Context& ctx, PlanMode mode,
              const Relaxation& relax) {
  auto f = build_formulation(input, options, ctx.graph, ctx.candidates,
                             ctx.budgets ? &*ctx.budgets : nullptr, mode, relax);
  if (f.trivially_infeasible) return false;
  MilpOptions o = options.milp;
  o.relative_gap = 1.0;  // any feasible point will do
  return solve_cbc(f.model, o).has_solution();
}

// Names the constraint group(s) whose removal makes the model feasible.
std::string diagnose(const PlanInput& input, const PlanOptions& options, const Context& ctx,
                     PlanMode mode) {
  struct Group {
    const char* name;
    Relaxation relax;
  };
  const char* slices_name = options.space.task_graph ? "the slice budget (Eq. 8) and MIG packing"
                                                     : "the task-wise slice budgets (Appendix B)";
  const Group groups[] = {
      {slices_name, {false, false, true}},
      {"the accuracy SLO (Eq. 13)", {false, true, false}},
      {options.space.task_graph ? "the latency SLO (Eq. 3)"
                                : "the task-wise latency budgets (Appendix B)",
       {true, false, false}},
  };
  std::vector<std::string> binding;
  for (const auto& g : groups) {
    if (solvable(input, options, ctx, mode, g.relax)) binding.push_back(g.name);
  }
  std::ostringstream s;
  if (binding.empty()) {
    s << "no single constraint group is to blame: it stays infeasible with any one of the "
         "slice, accuracy and latency constraints removed";
  } else {
    s << "binding: ";
    for (size_t i = 0; i < binding.size(); ++i) s << (i ? "; or " : "") << binding[i];
    if (mode == PlanMode::kServeDemand) {
      s << " (dropping it makes the demand of " << input.demand_rps << " req/s feasible)";
    } else {
      s << " (dropping it lets the app serve some demand)";
    }
  }
  if (!binding.empty() && binding.front() == slices_name) {
    // How many slices would it need?
    PlanInput more = input;
    for (int s2 = input.slices * 2; s2 <= input.slices * 64; s2 *= 2) {
      more.slices = s2;
      auto c2 = prepare(more, options);
      if (solvable(more, options, c2, mode, {})) {
        s << "; it fits in " << s2 << " slices";
        break;
      }
    }
  }
  return s.str();
}

JigsawPlan solve_plan(const PlanInput& input, const PlanOptions& options, const Context& ctx,
                      double demand) {
  JigsawPlan plan;
  plan.space = options.space;
  plan.demand_rps = demand;
  PlanInput in = input;
  in.demand_rps = demand;
  auto f = build_formulation(in, options, ctx.graph, ctx.candidates,
                             ctx.budgets ? &*ctx.budgets : nullptr, PlanMode::kServeDemand);
  plan.planned_demand_rps = f.planned_demand;
  plan.budgets = ctx.budgets;
  if (f.trivially_infeasible) {
    plan.status = PlanStatus::kInfeasible;
    plan.message = f.infeasible_reason;
    return plan;
  }
  const auto r = solve_cbc(f.model, options.milp);
  if (!r.has_solution()) {
    plan.status =
        r.status == MilpStatus::kInfeasible ? PlanStatus::kInfeasible : PlanStatus::kNoSolution;
    plan.stats.seconds = r.seconds;
    plan.stats.nodes = r.nodes;
    plan.stats.limit = r.limit;
    plan.message =
        plan.status == PlanStatus::kInfeasible
            ? diagnose(in, options, ctx, PlanMode::kServeDemand)
            : std::string("the ") + to_string(r.limit) + " stopped CBC before it found a plan";
    return plan;
  }
  plan.status = r.status == MilpStatus::kOptimal ? PlanStatus::kOptimal : PlanStatus::kFeasible;
  if (!options.tie_break) {
    read_solution(in, options, ctx, f, r, f.planned_demand, plan);
    return plan;
  }
  // Equal-optimal plans: the canonical one among those within the MILP's gap (tie_break.hpp).
  MilpOptions mo = options.milp;
  mo.relative_gap = 0.0;
  mo.absolute_gap = 0.5;  // the secondary objective is integral
  const double tolerance = std::max(options.milp.absolute_gap, 1e-9);
  // Warm start: the Eq. 14 plan is feasible in the tie-break model (its objective is the
  // one the row holds), so CBC starts with it as the incumbent and only has to find and
  // prove the canonical one. The optimum, and so the plan, is the same; the search shorter.
  mo.start = r.values;
  // First a lean search: with the Eq. 14 plan as its incumbent it only has to reach and
  // prove the canonical plan, and CBC's root cuts and primal heuristics cost most of a
  // default solve there (the traffic example: 3.6 s CPU with them, 1.0 s on 152 nodes
  // without). Where the lean search does not settle within its node budget (a node limit, so
  // the same on any machine), the default search runs as before. Either proves the optimum,
  // so the plan is the same.
  const auto tie_model = tie_break_model(f.model, f.count_var, r.objective, tolerance);
  MilpOptions lean = mo;
  lean.node_limit = kLeanTieBreakNodes;
  lean.cbc_args.insert(lean.cbc_args.end(), {"-cuts", "off", "-heuristicsOnOff", "off"});
  auto t = solve_cbc(tie_model, lean);
  if (t.status != MilpStatus::kOptimal) {
    const double lean_seconds = t.seconds;
    t = solve_cbc(tie_model, mo);
    t.seconds += lean_seconds;
  }
  const bool use = t.has_solution();
  read_solution(in, options, ctx, f, use ? t : r, f.planned_demand, plan);
  // The stats describe the Eq. 14 solve; the tie-break has its own line.
  plan.stats.seconds = r.seconds + t.seconds;
  plan.stats.nodes = r.nodes;
  plan.stats.milp_objective = r.objective;
  plan.stats.milp_bound = r.best_bound;
  plan.stats.limit = r.limit;
  plan.stats.tie_break_nodes = t.nodes;
  plan.stats.tie_break = t.status == MilpStatus::kOptimal
                             ? "settled"
                             : std::string("not settled (") + to_string(t.limit) + ")";
  if (t.status == MilpStatus::kInfeasible) plan.stats.tie_break = "not settled (infeasible)";
  return plan;
}

}  // namespace

JigsawPlan make_plan(const PlanInput& input, const PlanOptions& options) {
  const auto ctx = prepare(input, options);
  return solve_plan(input, options, ctx, input.demand_rps);
}

bool is_subspace(const SearchSpace& a, const SearchSpace& b) {
  return (!a.accuracy_scaling || b.accuracy_scaling) && (!a.spatial || b.spatial) &&
         (!a.task_graph || b.task_graph);
}

namespace {

// The largest root demand the configuration of `plan` serves: its capacities over the
// demand each task sees per unit of root demand (linear in R for a fixed configuration).
double demand_served(const JigsawPlan& plan) {
  double served = std::numeric_limits<double>::infinity();
  for (const auto& t : plan.evaluation.tasks) {
    if (t.demand_rps > 0.0) {
      served = std::min(served, t.capacity_rps / t.demand_rps * plan.planned_demand_rps);
    }
  }
  return std::isfinite(served) ? served : plan.planned_demand_rps;
}

// Is root demand R serviceable (no slack)? The plan model at R, minimising slices: CBC stops
// at its first plan or proves that there is none.
struct Probe {
  MilpStatus status = MilpStatus::kNoSolution;
  MilpLimit limit = MilpLimit::kNone;
  long nodes = 0;
  JigsawPlan plan;  // when feasible
};

Probe probe_demand(const PlanInput& input, const PlanOptions& options, const Context& ctx,
                   double demand) {
  Probe out;
  PlanInput in = input;
  in.demand_rps = demand;
  auto f = build_formulation(in, options, ctx.graph, ctx.candidates,
                             ctx.budgets ? &*ctx.budgets : nullptr, PlanMode::kServeDemand);
  if (f.trivially_infeasible) {
    out.status = MilpStatus::kInfeasible;
    return out;
  }
  // Fewest slices, stopping at the first plan: near the max demand the slices bind, and the
  // objective gives CBC's branching a direction to prove infeasibility.
  for (int j = 0; j < f.model.num_vars(); ++j) f.model.set_objective(j, 0.0);
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    f.model.set_objective(f.count_var[i], -static_cast<double>(f.candidates[i].cost));
  }
  MilpOptions mo = options.milp;
  mo.absolute_gap = 1e9;
  const auto r = solve_cbc(f.model, mo);
  out.status = r.status;
  out.limit = r.limit;
  out.nodes = r.nodes;
  if (r.has_solution()) {
    out.plan.space = options.space;
    out.plan.demand_rps = demand;
    out.plan.planned_demand_rps = f.planned_demand;
    out.plan.budgets = ctx.budgets;
    out.plan.status = PlanStatus::kFeasible;
    read_solution(in, options, ctx, f, r, f.planned_demand, out.plan);
  }
  return out;
}

}  // namespace

MaxDemand max_serviceable_demand(const PlanInput& input, const PlanOptions& options,
                                 double at_least_rps) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  MaxDemand out;
  out.space = options.space;
  PlanOptions o = options;  // demand is R itself, without slack
  o.slack = 0.0;
  const auto ctx = prepare(input, o);
  auto f = build_formulation(input, o, ctx.graph, ctx.candidates,
                             ctx.budgets ? &*ctx.budgets : nullptr, PlanMode::kMaxDemand);
  if (f.trivially_infeasible) {
    out.status = PlanStatus::kInfeasible;
    out.message = f.infeasible_reason;
    return out;
  }
  if (at_least_rps > 0.0) {
    f.model.add_row("known_serviceable", {{f.demand_var, 1.0}}, at_least_rps * (1.0 - 1e-6),
                    MilpModel::kInf);
  }
  // 1. The MILP that maximises R, for a bounded number of nodes: a serviceable R and CBC's
  // bound on R. (Its node limit is not a cut-short result: the bisection goes on from it.)
  MilpOptions mo = options.milp;
  mo.relative_gap = options.max_demand_gap;
  mo.absolute_gap = 1e-9;
  mo.node_limit = options.max_demand_nodes;
  // With CBC's preprocessing: without it, CBC 2.10.8's feasibility pump hit an assertion
  // (OsiClpSolverInterface::crunch) on this model for traffic in space S at 28 slices.
  mo.preprocess = true;
  const auto r = solve_cbc(f.model, mo);
  ++out.solves;
  out.nodes += r.nodes;
  // A wall-clock stop makes the rest depend on the machine: report it.
  if (r.limit == MilpLimit::kTime) out.limit = to_string(r.limit);
  if (r.status == MilpStatus::kInfeasible) {
    out.status = PlanStatus::kInfeasible;
    out.message = diagnose(input, options, ctx, PlanMode::kMaxDemand);
    out.seconds = elapsed();
    return out;
  }
  double lo = 0.0;  // serviceable
  double hi = f.model.vars()[static_cast<size_t>(f.demand_var)].ub;
  JigsawPlan config;  // a configuration serving lo
  if (r.has_solution()) {
    hi = std::min(hi, r.best_bound);
    PlanInput in = input;
    in.demand_rps = r.value(f.demand_var);
    config.space = options.space;
    config.demand_rps = config.planned_demand_rps = in.demand_rps;
    config.budgets = ctx.budgets;
    config.status = PlanStatus::kFeasible;
    read_solution(in, o, ctx, f, r, in.demand_rps, config);
    lo = std::min(demand_served(config), hi);
  }
  // 2. Feasibility MILPs at fixed R (which makes the demand rows linear and tight): each
  // finds a plan (whose configuration may serve more than that R) or proves R
  // unserviceable. First just above the best R known, in growing steps while plans are
  // found (the MILP's R is often the max already: one proof settles it), then bisection.
  bool exact = true;
  double step = options.max_demand_gap;
  bool bracketed = false;  // an unserviceable R above lo has been proven
  int probes = 0;
  while (hi - lo > options.max_demand_gap * lo) {
    if (probes >= options.max_demand_solves) {
      exact = false;
      if (out.limit.empty()) out.limit = "solve budget";
      break;
    }
    ++probes;
    const double mid = lo <= 0.0   ? 0.5 * hi
                       : bracketed ? 0.5 * (lo + hi)
                                   : std::min(lo * (1.0 + step), 0.5 * (lo + hi));
    auto p = probe_demand(input, o, ctx, mid);
    ++out.solves;
    out.nodes += p.nodes;
    if (p.status == MilpStatus::kInfeasible) {
      hi = mid;
      bracketed = true;
    } else if (p.plan.has_plan()) {
      config = std::move(p.plan);
      lo = std::min(std::max(mid, demand_served(config)), hi);
      step *= 4.0;
    } else {
      exact = false;  // a limit stopped the probe without an answer
      out.limit = to_string(p.limit);
      break;
    }
  }
  out.seconds = elapsed();
  out.upper_bound_rps = hi;
  if (lo <= 0.0) {
    out.status = PlanStatus::kNoSolution;
    out.message = "the " + (out.limit.empty() ? std::string("solver limit") : out.limit) +
                  " stopped CBC before it found a plan";
    return out;
  }
  if (exact) out.limit.clear();  // proven within the gap, whatever stopped a MILP early
  if (!exact && out.limit.empty()) out.limit = "solver limit";
  out.status = exact ? PlanStatus::kOptimal : PlanStatus::kFeasible;
  out.max_demand_rps = lo;
  // The Eq. 14 plan at that demand (a hair below R* against rounding).
  out.plan = solve_plan(input, o, ctx, lo * (1.0 - 1e-7));
  if (!out.plan.has_plan()) {
    // The Eq. 14 solve ran out of time: report the configuration that serves R* (it just
    // was not optimised for accuracy and slices).
    config.message = "the configuration found serving the max demand (" + out.plan.message + ")";
    config.demand_rps = config.planned_demand_rps = lo;
    check_and_pack(input, o, ctx, lo, config);
    out.plan = std::move(config);
  }
  return out;
}

Deployment to_deployment(const JigsawPlan& plan, const PlanInput& input) {
  Deployment d;
  for (const auto& e : plan.entries) {
    const auto& seg = input.catalogue.segments[static_cast<size_t>(e.type.segment)];
    WorkerGroup g;
    g.task = e.type.task;
    g.variants = {e.type.variant};
    g.segment = seg.name;
    g.max_batch = e.type.batch;
    g.count = e.count * seg.mps;
    // JigsawServe's batching timeout: the task's slowest instance, Lhat(t) (Eq. 2).
    if (g.task < plan.evaluation.tasks.size()) {
      g.batch_timeout = from_ms(plan.evaluation.tasks[g.task].latency_ms);
    }
    d.groups.push_back(std::move(g));
  }
  return d;
}

PlanResult<JigsawPlan> JigsawServePlanner::plan(const JigsawRequest& request) const {
  PlanResult<JigsawPlan> out;
  out.report = make_plan(request.input, request.options);
  out.status = out.report.status;
  out.message = out.report.message;
  if (out.report.has_plan()) {
    out.deployments.push_back(
        {request.input.app.name, request.input.app, to_deployment(out.report, request.input)});
  }
  return out;
}

}  // namespace tessera::plan
