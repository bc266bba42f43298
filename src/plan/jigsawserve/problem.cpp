#include "plan/jigsawserve/problem.hpp"

#include "plan/jigsawserve/queueing_headroom.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>

namespace tessera::plan {

int best_variant(const Task& task) {
  int best = 0;
  for (int v = 1; v < static_cast<int>(task.variants.size()); ++v) {
    if (task.variants[static_cast<size_t>(v)].accuracy >
        task.variants[static_cast<size_t>(best)].accuracy) {
      best = v;
    }
  }
  return best;
}

TaskGraph analyse_graph(const App& app) {
  if (app.has_joins()) {
    throw std::invalid_argument("app '" + app.name +
                                "' has a join (a task with several parents): the planner "
                                "supports trees of tasks only");
  }
  TaskGraph g;
  const size_t n = app.tasks.size();
  g.out.resize(n);
  g.in.resize(n);
  g.root_weight.assign(n, 0.0);
  for (const auto& e : app.edges) {
    const Task& parent = app.tasks[e.from];
    GraphEdge ge;
    ge.from = e.from;
    ge.to = e.to;
    for (size_t v = 0; v < parent.variants.size(); ++v) {
      const double share = e.mode == EdgeMode::kShare ? e.share_by_variant[v] : 1.0;
      ge.factor.push_back(parent.variants[v].fanout_mean * share);
    }
    const int best = best_variant(parent);
    ge.weight = e.mode == EdgeMode::kShare ? e.share_by_variant[static_cast<size_t>(best)] : 1.0;
    g.out[e.from].push_back(static_cast<int>(g.edges.size()));
    g.in[e.to].push_back(static_cast<int>(g.edges.size()));
    g.edges.push_back(std::move(ge));
  }
  for (size_t t = 0; t < n; ++t) {
    double sum = 0.0;
    for (int e : g.out[t]) sum += g.edges[static_cast<size_t>(e)].weight;
    for (int e : g.out[t]) {
      auto& w = g.edges[static_cast<size_t>(e)].weight;
      w = sum > 0.0 ? w / sum : 1.0 / static_cast<double>(g.out[t].size());
    }
  }
  for (TaskId r : app.roots) g.root_weight[r] = 1.0 / static_cast<double>(app.roots.size());
  g.order = app.topological_order();

  std::vector<TaskId> stack;
  std::function<void(TaskId, double)> walk = [&](TaskId t, double f) {
    stack.push_back(t);
    if (g.out[t].empty()) {
      g.paths.push_back(stack);
      g.path_fraction.push_back(f);
    }
    for (int e : g.out[t]) {
      const auto& ge = g.edges[static_cast<size_t>(e)];
      walk(ge.to, f * ge.weight);
    }
    stack.pop_back();
  };
  for (TaskId r : app.roots) walk(r, g.root_weight[r]);
  return g;
}

std::vector<Candidate> enumerate_candidates(const PlanInput& input, const SearchSpace& space) {
  std::vector<Candidate> out;
  const auto& cat = input.catalogue;
  const int whole = cat.whole_gpu_segment();
  for (TaskId t = 0; t < input.app.tasks.size(); ++t) {
    const Task& task = input.app.tasks[t];
    const int best = best_variant(task);
    for (int v = 0; v < static_cast<int>(task.variants.size()); ++v) {
      if (!space.accuracy_scaling && v != best) continue;
      const std::string& variant = task.variants[static_cast<size_t>(v)].name;
      for (int s = 0; s < static_cast<int>(cat.segments.size()); ++s) {
        if (!space.spatial && s != whole) continue;
        const auto& seg = cat.segments[static_cast<size_t>(s)];
        if (!input.profiles.has(variant, seg.name)) continue;
        const auto& curve = input.profiles.curve(variant, seg.name);
        for (int b : input.batch_sizes) {
          Candidate c;
          c.task = t;
          c.variant = v;
          c.segment = s;
          c.batch = b;
          c.latency_ms = input.profiles.latency_ms(variant, seg.name, b);
          c.throughput_rps = 1000.0 * b * seg.mps / c.latency_ms * input.utilisation_cap_of(t);
          if (input.mdc_wait_s > 0.0) {
            c.throughput_rps *= mdc_utilisation_cap(seg.mps, c.latency_ms / 1000.0,
                                                    input.mdc_wait_s, input.mdc_epsilon);
          }
          c.cost = seg.cost;
          c.measured = curve.origin == ProfileOrigin::kMeasured;
          out.push_back(c);
        }
      }
    }
  }
  return out;
}

namespace {

// What one MIG instance of slice cost `cost` uses in the packability rows of
// docs/plan.md (whole GPUs + cost-4 instances; cost-2 "pair" units).
int large_units(int cost) { return cost >= 4 ? 1 : 0; }
int pair_units(int cost) { return cost == 7 ? 3 : cost == 4 ? 2 : cost == 2 ? 1 : 0; }

}  // namespace

std::vector<Candidate> prune_dominated(std::vector<Candidate> cands, bool combinations) {
  // How many instances of `a` may stand in for one of `b` without using more slices or
  // more of any packability row: 0 if a costs more, else 1 (the rows are monotone in the
  // cost), or with combinations as many as fit.
  auto copies = [&](const Candidate& a, const Candidate& b) {
    if (a.cost > b.cost) return 0;
    if (!combinations || a.cost == b.cost) return 1;
    int k = b.cost / a.cost;
    if (large_units(a.cost) > 0) k = std::min(k, large_units(b.cost) / large_units(a.cost));
    if (pair_units(a.cost) > 0) k = std::min(k, pair_units(b.cost) / pair_units(a.cost));
    return std::max(k, 1);
  };
  // k copies of a: no more slices, no more latency, no less throughput than one b.
  auto dominates = [&](const Candidate& a, const Candidate& b) {
    const int k = copies(a, b);
    return k > 0 && a.latency_ms <= b.latency_ms && k * a.throughput_rps >= b.throughput_rps;
  };
  auto strictly = [&](const Candidate& a, const Candidate& b) {
    const int k = copies(a, b);
    return a.cost < b.cost || a.latency_ms < b.latency_ms ||
           k * a.throughput_rps > b.throughput_rps;
  };
  std::vector<Candidate> out;
  for (size_t i = 0; i < cands.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < cands.size() && !dominated; ++j) {
      if (i == j || cands[j].task != cands[i].task || cands[j].variant != cands[i].variant) {
        continue;
      }
      // Strictly better somewhere, or identical and earlier.
      if (dominates(cands[j], cands[i])) dominated = strictly(cands[j], cands[i]) || j < i;
    }
    if (!dominated) out.push_back(cands[i]);
  }
  return out;
}

std::vector<double> propagate_demand(const TaskGraph& graph, const std::vector<int>& variant_of,
                                     double root_demand) {
  std::vector<double> r(graph.out.size(), 0.0);
  for (TaskId t : graph.order) {
    if (graph.in[t].empty()) r[t] = root_demand;
    for (int e : graph.out[t]) {
      const auto& ge = graph.edges[static_cast<size_t>(e)];
      r[ge.to] += r[t] * ge.factor[static_cast<size_t>(variant_of[t])];
    }
  }
  return r;
}

TaskBudgets static_budgets(const PlanInput& input, const TaskGraph& graph,
                           const std::vector<Candidate>& candidates, bool any_instance) {
  const size_t n = input.app.tasks.size();
  std::vector<int> best(n);
  for (size_t t = 0; t < n; ++t) best[t] = best_variant(input.app.tasks[t]);
  // Latency: split each path's SLO in proportion to the largest latency of the most
  // accurate variant's instances; a task on several paths takes the smallest share.
  std::vector<double> lmax(n, 0.0);
  for (const auto& c : candidates) {
    if (c.variant == best[c.task]) lmax[c.task] = std::max(lmax[c.task], c.latency_ms);
  }
  TaskBudgets b;
  b.latency_ms.assign(n, std::numeric_limits<double>::infinity());
  for (const auto& p : graph.paths) {
    double sum = 0.0;
    for (TaskId t : p) sum += lmax[t];
    for (TaskId t : p) {
      const double share = sum > 0.0 ? lmax[t] / sum : 1.0 / static_cast<double>(p.size());
      b.latency_ms[t] = std::min(b.latency_ms[t], input.latency_slo_ms * share);
    }
  }
  // Slices: expected demand from the most accurate variants' factors, divided by the
  // highest throughput any instance of that variant can achieve, times that instance's
  // slices (Appendix B); the budget is split in proportion. With !any_instance, only
  // instances within the task's latency budget count (a task with none gets 0 slices).
  const auto demand = propagate_demand(graph, best, 1.0);
  std::vector<double> expected(n, 0.0);
  for (size_t t = 0; t < n; ++t) {
    const Candidate* top = nullptr;
    for (const auto& c : candidates) {
      if (c.task != t || c.variant != best[t]) continue;
      if (!any_instance && 2.0 * c.latency_ms > b.latency_ms[t]) continue;
      if (top == nullptr || c.throughput_rps > top->throughput_rps) top = &c;
    }
    expected[t] = top != nullptr ? demand[t] / top->throughput_rps * top->cost : 0.0;
  }
  double total = 0.0;
  for (double e : expected) total += e;
  b.slices.assign(n, 0.0);
  for (size_t t = 0; t < n; ++t) {
    b.slices[t] = total > 0.0 ? input.slices * expected[t] / total
                              : static_cast<double>(input.slices) / static_cast<double>(n);
  }
  return b;
}

}  // namespace tessera::plan

namespace tessera::plan {

double system_accuracy(const TaskGraph& graph, const std::vector<double>& task_accuracy) {
  std::vector<double> s(graph.out.size(), 0.0);
  for (auto it = graph.order.rbegin(); it != graph.order.rend(); ++it) {
    const TaskId t = *it;
    double g = graph.out[t].empty() ? 1.0 : 0.0;
    for (int e : graph.out[t]) {
      const auto& ge = graph.edges[static_cast<size_t>(e)];
      g += ge.weight * s[ge.to];
    }
    s[t] = task_accuracy[t] * g;
  }
  double a = 0.0;
  for (size_t t = 0; t < s.size(); ++t) a += graph.root_weight[t] * s[t];
  return a;
}

double best_system_accuracy(const App& app, const TaskGraph& graph) {
  std::vector<double> a;
  for (const auto& task : app.tasks) {
    a.push_back(task.variants[static_cast<size_t>(best_variant(task))].accuracy);
  }
  return system_accuracy(graph, a);
}

}  // namespace tessera::plan
