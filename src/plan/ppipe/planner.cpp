#include "plan/ppipe/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "dataplane/ppipe/setup.hpp"
#include "plan/ppipe/milp_solve.hpp"

namespace tessera::plan {

namespace {

// `in` with one wall-clock deadline for everything a method's plan solves (see
// with_deadline()).
PpipeInput timed(const PpipeInput& in) {
  PpipeInput out = in;
  out.options = with_deadline(in.options);
  return out;
}

ppipe::PpipePlan np_of(const PpipeInput& in, const ppipe::PpipePlan* np) {
  return np != nullptr ? *np : plan_np(in).plan;
}

void finish(PpipeResult& r, const PpipeInput& in) {
  r.problems = check_ppipe_plan(r.plan, in, r.rules);
}

}  // namespace

std::vector<double> np_estimate_throughputs(const PpipeInput& in) {
  std::vector<double> x(in.dnns.size(), 0.0);
  if (!in.options.batch_build_estimate) return x;
  std::vector<ConfigRules> rules;
  for (const auto& d : in.dnns) {
    ConfigRules r;
    r.budget_ms = d.slo_ms * (1.0 - in.options.slo_margin);
    r.allow_mps = false;
    rules.push_back(r);
  }
  const Solved s = solve_milp(in.cluster, in.dnns, rules, in.options, 1, ppipe::PpipeMethod::kNp);
  for (size_t m = 0; m < in.dnns.size() && m < s.plan.dnns.size(); ++m) {
    x[m] = s.plan.dnns[m].throughput;
  }
  return x;
}

std::vector<ConfigRules> ppipe_rules(const PpipeInput& in, const std::vector<double>& x_np) {
  std::vector<ConfigRules> rules;
  for (size_t m = 0; m < in.dnns.size(); ++m) {
    ConfigRules r;
    r.budget_ms = in.dnns[m].slo_ms * (1.0 - in.options.slo_margin);
    r.batch_build = in.options.batch_build_estimate;
    r.allow_mps = true;
    if (m < x_np.size()) r.np_throughput = x_np[m];
    rules.push_back(r);
  }
  return rules;
}

PpipeResult plan_np(const PpipeInput& input) {
  const PpipeInput in = timed(input);
  PpipeResult res;
  res.rules = ppipe_rules(in, np_estimate_throughputs(in));
  for (auto& r : res.rules) r.allow_mps = false;
  res.plan =
      solve_milp(in.cluster, in.dnns, res.rules, in.options, 1, ppipe::PpipeMethod::kNp).plan;
  finish(res, in);
  return res;
}

PpipeResult plan_ppipe(const PpipeInput& input, const ppipe::PpipePlan* np) {
  if (input.options.max_partitions < 1 || input.options.max_partitions > 3) {
    throw std::invalid_argument("max_partitions must be 1, 2 or 3");
  }
  (void)np;  // the estimate needs NP without it (np_estimate_throughputs), not NP's plan
  const PpipeInput in = timed(input);
  PpipeResult res;
  res.rules = ppipe_rules(in, np_estimate_throughputs(in));
  res.plan = solve_milp(in.cluster, in.dnns, res.rules, in.options, in.options.max_partitions,
                        ppipe::PpipeMethod::kPpipe)
                 .plan;
  finish(res, in);
  return res;
}

PpipeResult plan_dart_r(const PpipeInput& input, const ppipe::PpipePlan* np) {
  const PpipeInput in = timed(input);
  if (in.cluster.classes.size() != 2) {
    throw std::invalid_argument("DART-r pairs one GPU of each of two classes; the cluster has " +
                                std::to_string(in.cluster.classes.size()) + " classes");
  }
  ppipe::PpipePlan storage = np_of(in, np);
  const ppipe::PpipePlan& npl = storage;
  PpipeResult res;
  res.rules = ppipe_rules(in, np_estimate_throughputs(in));
  for (auto& r : res.rules) r.allow_mps = false;
  // Split the GPUs as NP does; spread what NP left unallocated evenly.
  const size_t M = in.dnns.size();
  std::vector<std::array<int, 2>> alloc(M, {0, 0});
  for (size_t m = 0; m < M && m < npl.dnns.size(); ++m) {
    for (const auto& p : npl.dnns[m].pipelines) {
      for (const auto& part : p.partitions) {
        alloc[m][in.cluster.class_index(part.gpu_class)] += part.vgpus;  // mps = 1
      }
    }
  }
  for (int k = 0; k < 2; ++k) {
    int used = 0;
    for (const auto& a : alloc) used += a[k];
    int left = std::max(0, in.cluster.classes[k].count - used);
    for (size_t m = 0; m < M; ++m) {
      alloc[m][k] += left / static_cast<int>(M) + (m < static_cast<size_t>(left) % M ? 1 : 0);
    }
  }

  res.plan.method = ppipe::PpipeMethod::kDartR;
  res.plan.cluster = in.cluster;
  res.plan.slo_margin = in.options.slo_margin;
  res.plan.solve.status = PlanStatus::kOptimal;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> notes;
  for (size_t m = 0; m < M; ++m) {
    ppipe::DnnPlan dp;
    dp.dnn = in.dnns[m].name;
    dp.weight = in.dnns[m].weight;
    dp.slo_ms = in.dnns[m].slo_ms;
    const int pairs = std::min(alloc[m][0], alloc[m][1]);
    const int big = alloc[m][0] >= alloc[m][1] ? 0 : 1;
    const int leftover = alloc[m][big] - pairs;
    auto add_scaled = [&](const Solved& s, int times) {
      if (!s.feasible || times <= 0) return;
      res.plan.solve.templates += s.plan.solve.templates;
      res.plan.solve.configurations += s.plan.solve.configurations;
      res.plan.solve.gap = std::max(res.plan.solve.gap, s.plan.solve.gap);
      if (s.plan.solve.status != PlanStatus::kOptimal) {
        res.plan.solve.status = s.plan.solve.status;
        res.plan.solve.limit = s.plan.solve.limit;
      }
      for (auto p : s.plan.dnns[0].pipelines) {
        for (auto& part : p.partitions) {
          part.vgpus *= times;
          part.throughput *= times;
        }
        p.throughput *= times;
        dp.throughput += p.throughput;
        dp.pipelines.push_back(std::move(p));
      }
    };
    const std::vector<PpipeDnn> one = {in.dnns[m]};
    const std::vector<ConfigRules> rule = {res.rules[m]};
    ppipe::PpipeCluster c = in.cluster;
    if (pairs > 0) {
      c.classes[0].count = 1;
      c.classes[1].count = 1;
      const Solved s = solve_milp(c, one, rule, in.options, 2, ppipe::PpipeMethod::kDartR);
      if (!s.feasible) notes.push_back(dp.dnn + " pair: " + s.plan.solve.detail);
      add_scaled(s, pairs);
    }
    if (leftover > 0) {
      c.classes[big].count = 1;
      c.classes[1 - big].count = 0;
      const Solved s = solve_milp(c, one, rule, in.options, 1, ppipe::PpipeMethod::kDartR);
      if (!s.feasible) {
        notes.push_back(dp.dnn + ": its " + std::to_string(leftover) + " leftover " +
                        in.cluster.classes[big].name + " GPUs stay idle (" + s.plan.solve.detail +
                        ")");
      }
      add_scaled(s, leftover);
    }
    res.plan.dnns.push_back(std::move(dp));
  }
  double z = std::numeric_limits<double>::infinity();
  for (const auto& d : res.plan.dnns) z = std::min(z, d.throughput / d.weight);
  res.plan.solve.objective = M == 1 ? res.plan.dnns[0].throughput : z;
  res.plan.solve.bound = res.plan.solve.objective;
  res.plan.solve.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& n : notes)
    res.plan.solve.detail += (res.plan.solve.detail.empty() ? "" : "; ") + n;
  finish(res, in);
  return res;
}

PlanResult<PpipeResult> PpipePlanner::plan(const PpipeRequest& request) const {
  PlanResult<PpipeResult> out;
  switch (request.method) {
    case ppipe::PpipeMethod::kNp:
      out.report = plan_np(request.input);
      break;
    case ppipe::PpipeMethod::kDartR:
      out.report = plan_dart_r(request.input, request.np);
      break;
    case ppipe::PpipeMethod::kPpipe:
      out.report = plan_ppipe(request.input, request.np);
      break;
  }
  const ppipe::PpipePlan& plan = out.report.plan;
  out.status = plan.solve.status;
  out.message = has_plan(out.status) ? std::string() : plan.solve.detail;
  if (!has_plan(out.status)) return out;
  for (std::size_t m = 0; m < plan.dnns.size() && m < request.input.dnns.size(); ++m) {
    if (plan.dnns[m].pipelines.empty()) continue;
    reservation::PpipeSetup setup =
        reservation::build_setup(plan, m, request.input.dnns[m].profiles);
    out.deployments.push_back(
        {plan.dnns[m].dnn, std::move(setup.app), std::move(setup.deployment)});
  }
  return out;
}

}  // namespace tessera::plan
