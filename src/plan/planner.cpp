#include "plan/planner.hpp"

#include <cmath>
#include <sstream>

#include "plan/formulation.hpp"

namespace tessera::plan {

const char* to_string(PlanStatus status) {
  switch (status) {
    case PlanStatus::kOptimal:
      return "optimal";
    case PlanStatus::kFeasible:
      return "feasible (time limit)";
    case PlanStatus::kInfeasible:
      return "infeasible";
    case PlanStatus::kNoSolution:
      return "no solution (time limit)";
  }
  return "?";
}

namespace {

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
  if (!options.space.task_graph) c.budgets = static_budgets(input, c.graph, c.candidates);
  if (options.prune_dominated) c.candidates = prune_dominated(std::move(c.candidates));
  return c;
}

// Rounds the MILP's counts and packs the MIG instances.
void read_solution(const PlanInput& input, const PlanOptions& options, const Context& ctx,
                   const Formulation& f, const MilpResult& r, double root_demand, Plan& plan) {
  plan.entries.clear();
  for (size_t i = 0; i < f.candidates.size(); ++i) {
    const int count = static_cast<int>(std::lround(r.value(f.count_var[i])));
    if (count > 0) plan.entries.push_back(PlanEntry{f.candidates[i], count});
  }
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
  plan.stats.candidates = static_cast<int>(f.candidates.size());
  plan.stats.variables = f.model.num_vars();
  plan.stats.integers = f.model.num_integer();
  plan.stats.rows = f.model.num_rows();
  plan.stats.seconds = r.seconds;
  plan.stats.nodes = r.nodes;
  plan.stats.milp_objective = r.objective;
  plan.stats.milp_bound = r.best_bound;
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

Plan solve_plan(const PlanInput& input, const PlanOptions& options, const Context& ctx,
                double demand) {
  Plan plan;
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
    plan.message = plan.status == PlanStatus::kInfeasible
                       ? diagnose(in, options, ctx, PlanMode::kServeDemand)
                       : "the time limit stopped CBC before it found a plan";
    return plan;
  }
  plan.status = r.status == MilpStatus::kOptimal ? PlanStatus::kOptimal : PlanStatus::kFeasible;
  read_solution(in, options, ctx, f, r, f.planned_demand, plan);
  return plan;
}

}  // namespace

Plan make_plan(const PlanInput& input, const PlanOptions& options) {
  const auto ctx = prepare(input, options);
  return solve_plan(input, options, ctx, input.demand_rps);
}

bool is_subspace(const SearchSpace& a, const SearchSpace& b) {
  return (!a.accuracy_scaling || b.accuracy_scaling) && (!a.spatial || b.spatial) &&
         (!a.task_graph || b.task_graph);
}

MaxDemand max_serviceable_demand(const PlanInput& input, const PlanOptions& options,
                                 double at_least_rps) {
  MaxDemand out;
  out.space = options.space;
  const auto ctx = prepare(input, options);
  auto f = build_formulation(input, options, ctx.graph, ctx.candidates,
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
  MilpOptions mo = options.milp;
  mo.relative_gap = options.max_demand_gap;
  mo.absolute_gap = 1e-9;
  const auto r = solve_cbc(f.model, mo);
  if (!r.has_solution()) {
    out.status =
        r.status == MilpStatus::kInfeasible ? PlanStatus::kInfeasible : PlanStatus::kNoSolution;
    out.message = out.status == PlanStatus::kInfeasible
                      ? diagnose(input, options, ctx, PlanMode::kMaxDemand)
                      : "the time limit stopped CBC before it found a plan";
    return out;
  }
  out.status = r.status == MilpStatus::kOptimal ? PlanStatus::kOptimal : PlanStatus::kFeasible;
  out.max_demand_rps = r.value(f.demand_var);
  out.seconds = r.seconds;
  // The Eq. 14 plan at that demand (no slack, a hair below R* against rounding).
  PlanOptions o = options;
  o.slack = 0.0;
  out.plan = solve_plan(input, o, ctx, out.max_demand_rps * (1.0 - 1e-7));
  if (!out.plan.has_plan()) {
    // The Eq. 14 solve ran out of time: report the max-demand MILP's own configuration,
    // which serves R* (it just was not optimised for accuracy and slices).
    Plan fallback;
    fallback.space = options.space;
    fallback.demand_rps = out.max_demand_rps;
    fallback.planned_demand_rps = out.max_demand_rps;
    fallback.budgets = ctx.budgets;
    fallback.status =
        r.status == MilpStatus::kOptimal ? PlanStatus::kOptimal : PlanStatus::kFeasible;
    fallback.message = "the configuration of the max-demand MILP (" + out.plan.message + ")";
    PlanInput in = input;
    in.demand_rps = out.max_demand_rps;
    read_solution(in, o, ctx, f, r, out.max_demand_rps, fallback);
    out.plan = std::move(fallback);
  }
  return out;
}

Deployment to_deployment(const Plan& plan, const PlanInput& input) {
  Deployment d;
  for (const auto& e : plan.entries) {
    const auto& seg = input.catalogue.segments[static_cast<size_t>(e.type.segment)];
    WorkerGroup g;
    g.task = e.type.task;
    g.variants = {e.type.variant};
    g.segment = seg.name;
    g.max_batch = e.type.batch;
    g.count = e.count * seg.mps;
    d.groups.push_back(std::move(g));
  }
  return d;
}

}  // namespace tessera::plan
