#include "plan/jigsawserve/evaluate.hpp"

#include <algorithm>
#include <sstream>

namespace tessera::plan {

namespace {

std::string num(double x) {
  std::ostringstream s;
  s.precision(6);
  s << x;
  return s.str();
}

}  // namespace

PlanEvaluation evaluate_plan(const PlanInput& input, const PlanOptions& options,
                             const TaskGraph& graph, const std::vector<PlanEntry>& entries,
                             double root_demand, const TaskBudgets* budgets) {
  const App& app = input.app;
  const size_t n = app.tasks.size();
  PlanEvaluation ev;
  ev.tasks.assign(n, TaskReport{});
  std::vector<double> weighted(n, 0.0);
  std::vector<std::vector<bool>> active(n);
  for (size_t t = 0; t < n; ++t) active[t].assign(app.tasks[t].variants.size(), false);
  for (const auto& e : entries) {
    if (e.count <= 0) continue;
    auto& tr = ev.tasks[e.type.task];
    const double cap = e.count * e.type.throughput_rps;
    tr.latency_ms = std::max(tr.latency_ms, e.type.latency_ms);
    tr.capacity_rps += cap;
    tr.slices += e.count * e.type.cost;
    weighted[e.type.task] +=
        cap * app.tasks[e.type.task].variants[static_cast<size_t>(e.type.variant)].accuracy;
    active[e.type.task][static_cast<size_t>(e.type.variant)] = true;
  }
  std::vector<double> acc(n, 0.0);
  for (size_t t = 0; t < n; ++t) {
    auto& tr = ev.tasks[t];
    tr.accuracy = tr.capacity_rps > 0.0 ? weighted[t] / tr.capacity_rps : 0.0;
    acc[t] = tr.accuracy;
    if (tr.capacity_rps <= 0.0)
      ev.violations.push_back("task " + app.tasks[t].name + " has no instances");
    ev.slices += tr.slices;
  }
  // Eqs. 4-5 with the largest factor among active variants.
  for (TaskId t : graph.order) {
    if (graph.in[t].empty()) ev.tasks[t].demand_rps = root_demand;
    for (int e : graph.out[t]) {
      const auto& ge = graph.edges[static_cast<size_t>(e)];
      double f = 0.0;
      for (size_t v = 0; v < active[t].size(); ++v) {
        if (active[t][v]) f = std::max(f, ge.factor[v]);
      }
      ev.tasks[ge.to].demand_rps += ev.tasks[t].demand_rps * f;
    }
  }
  const double tol = 1e-6;
  for (size_t t = 0; t < n; ++t) {
    const auto& tr = ev.tasks[t];
    if (tr.capacity_rps < tr.demand_rps * (1 - tol)) {
      ev.violations.push_back("capacity (Eq. 6): task " + app.tasks[t].name + " serves " +
                              num(tr.capacity_rps) + " req/s, demand " + num(tr.demand_rps));
    }
  }
  for (size_t p = 0; p < graph.paths.size(); ++p) {
    PathReport pr;
    pr.tasks = graph.paths[p];
    pr.fraction = graph.path_fraction[p];
    pr.accuracy = 1.0;
    for (TaskId t : pr.tasks) {
      pr.latency_ms += 2.0 * ev.tasks[t].latency_ms;
      pr.accuracy *= acc[t];
    }
    if (options.space.task_graph && pr.latency_ms > input.latency_slo_ms * (1 + 1e-9)) {
      ev.violations.push_back("latency (Eq. 3): a path takes " + num(pr.latency_ms) + " ms, SLO " +
                              num(input.latency_slo_ms));
    }
    ev.paths.push_back(std::move(pr));
  }
  if (budgets != nullptr) {
    for (size_t t = 0; t < n; ++t) {
      auto& tr = ev.tasks[t];
      tr.latency_budget_ms = budgets->latency_ms[t];
      tr.slice_budget = budgets->slices[t];
      if (2.0 * tr.latency_ms > tr.latency_budget_ms * (1 + 1e-9)) {
        ev.violations.push_back("task-wise latency budget: task " + app.tasks[t].name);
      }
      if (tr.slices > tr.slice_budget + 1e-9) {
        ev.violations.push_back("task-wise slice budget: task " + app.tasks[t].name);
      }
    }
  }
  if (ev.slices > input.slices) {
    ev.violations.push_back("slices (Eq. 8): " + std::to_string(ev.slices) + " > " +
                            std::to_string(input.slices));
  }
  ev.accuracy_max = best_system_accuracy(app, graph);
  ev.accuracy = system_accuracy(graph, acc) / ev.accuracy_max;
  if (ev.accuracy < input.accuracy_slo * (1 - 1e-9)) {
    ev.violations.push_back("accuracy (Eq. 13): " + num(ev.accuracy) + " < SLO " +
                            num(input.accuracy_slo));
  }
  ev.objective = options.alpha * ev.accuracy - options.beta * ev.slices;
  return ev;
}

}  // namespace tessera::plan
