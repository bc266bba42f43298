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
#include "plan/ppipe/decomp.hpp"

namespace tessera::plan {

namespace {

// The options that solve a model's LP relaxation with its row duals (no branching
// priorities, no start, quiet), from the MILP's.
MilpOptions lp_relaxation_options(MilpOptions o) {
  o.relax = true;
  o.duals = true;
  o.log = false;
  o.priority.clear();
  o.start.clear();
  return o;
}

constexpr double kEps = 1e-6;

int class_index(const ppipe::PpipeCluster& c, const std::string& name) {
  for (size_t k = 0; k < c.classes.size(); ++k) {
    if (c.classes[k].name == name) return static_cast<int>(k);
  }
  return -1;
}

struct Solved {
  ppipe::PpipePlan plan;
  bool feasible = false;
  // Min-cost mode (one DNN): CBC's lower bound on the least cost (+inf: no plan reaches the
  // target) and the found plan's physical GPUs per class (empty: none found).
  double cost_lower = 0.0;
  std::vector<int> gpus;
  double zcap = 0.0;  // the LP-optimum cap the tightening found (+inf: none)
  // Min-cost mode: the solution's values by variable name (a start for the full model).
  std::vector<std::pair<std::string, double>> values;
  // Min-cost mode: the configurations the solution uses (x > 0), numbered as in the whole
  // cluster's model of the same DNN.
  std::vector<int> used_configs;
};

// What solve_milp is asked. Default: the A.2 objective. With target > 0 (one DNN): the
// decomposition's question, the least price-weighted physical GPUs of a plan serving >= target.
struct MilpMode {
  double target = 0.0;
  std::vector<double> prices;  // per class
  double zcap = 0.0;           // > 0: the tightening's cap from an earlier call (skips its LPs)
  double limit_s = 0.0;        // > 0: CBC's limit for the min-cost MILP (else surrogate_call_s)
  // Non-empty: each class's budget row is capped here instead of at its count (the
  // configurations stay those of the whole cluster, numbered alike).
  std::vector<int> caps;
  double gap = 0.0;  // > 0: CBC's relative gap for the min-cost MILP (else 1e-4)
};

// Throughput bound of one configuration alone on the whole cluster: physical GPUs per unit
// of throughput per class, against the class's count.
double config_bound(const ppipe::PpipeCluster& cluster, const PipeConfig& c) {
  std::vector<double> per_unit(cluster.classes.size(), 0.0);
  for (const auto& p : c.parts) per_unit[p.cls] += 1.0 / (p.mps * p.x_vgpu);
  double bound = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < per_unit.size(); ++k) {
    if (per_unit[k] > 0.0) bound = std::min(bound, cluster.classes[k].count / per_unit[k]);
  }
  return bound;
}

// CBC branching priorities (lower first) by the variables' names: each DNN's GPUs per class
// ("gpus_m<m>_<class>"), per position ("..._pos<d>"), configuration binaries ("u_"), vGPU
// counts ("g_").
std::vector<int> branch_priorities(const MilpModel& model) {
  std::vector<int> p(static_cast<std::size_t>(model.num_vars()), 1000);
  for (int j = 0; j < model.num_vars(); ++j) {
    const std::string& n = model.var_name(j);
    if (n.rfind("gpus_", 0) == 0) {
      p[static_cast<std::size_t>(j)] = n.find("_pos") == std::string::npos ? 1 : 2;
    } else if (n.rfind("u_", 0) == 0) {
      p[static_cast<std::size_t>(j)] = 3;
    } else if (n.rfind("g_", 0) == 0) {
      p[static_cast<std::size_t>(j)] = 4;
    }
  }
  return p;
}

// The MILP of Appendix A.2 over enumerated configurations (see docs/plan.md#ppipe-planner):
// per configuration c of DNN m a throughput x_c, integer vGPU counts g_cd with
// x_c <= X_cd g_cd, a binary u_c (one configuration per template) with x_c <= Xmax_c u_c
// and g_cd >= u_c; physical GPUs sum g_cd / v_cd <= y_mkd integer per (DNN, class,
// position) and sum y <= N_k; objective max sum x (one DNN) or max z, w_m z <= sum_c x_c.
Solved solve_milp(const ppipe::PpipeCluster& cluster, const std::vector<PpipeDnn>& dnns,
                  const std::vector<ConfigRules>& rules, const PpipeOptions& opt,
                  int max_partitions, ppipe::PpipeMethod method, const MilpMode& mode = {}) {
  const auto start = std::chrono::steady_clock::now();
  const bool min_cost = mode.target > 0.0;
  Solved out;
  out.plan.method = method;
  out.plan.cluster = cluster;
  out.plan.slo_margin = opt.slo_margin;
  const int K = static_cast<int>(cluster.classes.size());
  const auto templates = enumerate_templates(K, max_partitions);
  const bool repo = opt.repo_templates && max_partitions > 1;
  const auto repo_templates = enumerate_repo_templates(K, max_partitions);
  out.plan.solve.templates = static_cast<int>(repo ? repo_templates.size() : templates.size());

  std::vector<std::vector<PipeConfig>> configs(dnns.size());
  std::vector<std::vector<double>> bounds(dnns.size());
  std::string why;
  for (size_t m = 0; m < dnns.size(); ++m) {
    std::string why_m;
    auto all = enumerate_configs(cluster, dnns[m], templates, opt, rules[m], &why_m);
    if (repo) {
      // A configuration of sequence S belongs to every repo template that S begins.
      std::vector<PipeConfig> expanded;
      for (const auto& c : all) {
        const auto& seq = templates[c.tmpl];
        for (size_t r = 0; r < repo_templates.size(); ++r) {
          if (std::equal(seq.begin(), seq.end(), repo_templates[r].begin())) {
            expanded.push_back(c);
            expanded.back().tmpl = static_cast<int>(r);
          }
        }
      }
      all = std::move(expanded);
    }
    const bool any = !all.empty();
    for (auto& c : all) {
      const double b = config_bound(cluster, c);
      if (b <= kEps) continue;  // uses a class with no GPUs
      configs[m].push_back(std::move(c));
      bounds[m].push_back(b);
    }
    out.plan.solve.configurations += static_cast<int>(configs[m].size());
    if (configs[m].empty() && why.empty()) {
      why = any ? "GPU budget: every pipeline of " + dnns[m].name +
                      " that fits its latency budget needs a GPU class with count 0"
                : why_m;
    }
    ppipe::DnnPlan dp;
    dp.dnn = dnns[m].name;
    dp.weight = dnns[m].weight;
    dp.slo_ms = dnns[m].slo_ms;
    out.plan.dnns.push_back(dp);
  }
  if (!why.empty()) {
    if (min_cost) out.cost_lower = std::numeric_limits<double>::infinity();
    out.plan.solve.status = PlanStatus::kInfeasible;
    out.plan.solve.detail = why;
    out.plan.solve.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  }

  const bool single = dnns.size() == 1;
  // Bound on min_m x_m / w_m: per template of each DNN the best configuration alone.
  double zmax = std::numeric_limits<double>::infinity();
  for (size_t m = 0; m < dnns.size(); ++m) {
    std::map<int, double> per_template;
    for (size_t c = 0; c < configs[m].size(); ++c) {
      auto& v = per_template[configs[m][c].tmpl];
      v = opt.one_config_per_template ? std::max(v, bounds[m][c]) : v + bounds[m][c];
    }
    double sum = 0.0;
    for (const auto& [t, v] : per_template) sum += v;
    zmax = std::min(zmax, sum / dnns[m].weight);
  }
  // With tighten_formulation, zcap is the LP relaxation's optimum (re-solved with the caps
  // it implies): an optimal plan serves DNN m at most w_m zcap (one DNN: zcap), so no
  // configuration needs a larger throughput, and smaller big-M's follow (see
  // docs/plan.md#ppipe-planner, "Tightened formulation").
  double zcap = std::numeric_limits<double>::infinity();
  struct Vars {
    int x = -1, u = -1;
    std::vector<int> g;
  };
  std::vector<std::vector<Vars>> vars(dnns.size());
  const bool tight = opt.tighten_formulation;
  int z = -1;                                       // the objective variable (several DNNs)
  std::vector<int> budget_rows;                     // per class, -1 when the class has no terms
  std::vector<std::vector<int>> class_gpu_vars(K);  // y's per class (whole GPUs per position)
  // cost: the min-cost mode's objective and target row instead of the A.2 objective.
  auto build = [&](MilpModel& model, bool cost) {
    model.set_maximize(!cost);
    budget_rows.assign(K, -1);
    for (auto& v : class_gpu_vars) v.clear();
    z = -1;
    if (!single) z = model.add_var("z", 0.0, std::min(zmax, zcap), VarType::kContinuous, 1.0);
    // Physical-GPU terms per class overall.
    std::vector<std::vector<LinTerm>> class_terms(K);
    for (size_t m = 0; m < dnns.size(); ++m) {
      const std::string mn = "m" + std::to_string(m);
      const double dnn_cap = single ? zcap : dnns[m].weight * zcap;
      std::map<int, std::vector<int>> by_template;
      for (size_t c = 0; c < configs[m].size(); ++c)
        by_template[configs[m][c].tmpl].push_back(static_cast<int>(c));
      std::map<std::pair<int, int>, std::vector<LinTerm>> position_terms;  // (class, d)
      // The u's of the configurations at each (class, d), one group per configuration.
      std::map<std::pair<int, int>, std::map<int, std::vector<LinTerm>>> position_users;
      std::vector<LinTerm> dnn_sum;
      vars[m].assign(configs[m].size(), Vars{});
      for (size_t c = 0; c < configs[m].size(); ++c) {
        const auto& cfg = configs[m][c];
        const std::string cn = mn + "c" + std::to_string(c);
        const double xcap = std::min(bounds[m][c], dnn_cap);
        Vars& v = vars[m][c];
        v.x =
            model.add_var("x_" + cn, 0.0, xcap, VarType::kContinuous, single && !cost ? 1.0 : 0.0);
        dnn_sum.push_back({v.x, 1.0});
        const bool need_u = (tight && opt.binary_per_configuration) ||
                            (opt.one_config_per_template && by_template[cfg.tmpl].size() > 1);
        if (need_u) {
          v.u = model.add_var("u_" + cn, 0.0, 1.0, VarType::kBinary);
          model.add_row("link_" + cn, {{v.x, 1.0}, {v.u, -xcap}}, -MilpModel::kInf, 0.0);
        }
        for (size_t d = 0; d < cfg.parts.size(); ++d) {
          const auto& p = cfg.parts[d];
          const std::string dn = cn + "d" + std::to_string(d);
          const double gmax = std::max(
              1.0, std::min<double>(static_cast<double>(cluster.classes[p.cls].count) * p.mps,
                                    std::ceil(xcap / p.x_vgpu - 1e-9)));
          const int g = model.add_var("g_" + dn, 0.0, gmax, VarType::kInteger);
          v.g.push_back(g);
          model.add_row("xput_" + dn, {{v.x, 1.0}, {g, -p.x_vgpu}}, -MilpModel::kInf, 0.0);
          if (need_u) {
            model.add_row("used_" + dn, {{g, 1.0}, {v.u, -1.0}}, 0.0, MilpModel::kInf);
            // An unused configuration holds no vGPUs, a used one no more than its cap needs.
            if (tight) {
              model.add_row("unused_" + dn, {{g, 1.0}, {v.u, -gmax}}, -MilpModel::kInf, 0.0);
            }
          }
          position_terms[{p.cls, static_cast<int>(d)}].push_back({g, 1.0 / p.mps});
          if (cost && !opt.integer_gpus_per_position) {
            model.set_objective(g, mode.prices.at(static_cast<size_t>(p.cls)) / p.mps);
          }
          if (v.u >= 0) {
            position_users[{p.cls, static_cast<int>(d)}][static_cast<int>(c)].push_back(
                {v.u, -1.0});
          }
        }
      }
      if (opt.one_config_per_template) {
        for (const auto& [t, cs] : by_template) {
          if (cs.size() < 2) continue;
          std::vector<LinTerm> terms;
          for (int c : cs) terms.push_back({vars[m][c].u, 1.0});
          model.add_row("template_" + mn + "t" + std::to_string(t), terms, -MilpModel::kInf, 1.0);
        }
      }
      std::map<int, std::vector<LinTerm>> agg;
      for (auto& [key, terms] : position_terms) {
        const auto [k, d] = key;
        if (opt.integer_gpus_per_position) {
          const std::string yn = mn + "_" + cluster.classes[k].name + "_pos" + std::to_string(d);
          const int y =
              model.add_var("gpus_" + yn, 0.0, cluster.classes[k].count, VarType::kInteger,
                            cost ? mode.prices.at(static_cast<size_t>(k)) : 0.0);
          class_gpu_vars[static_cast<size_t>(k)].push_back(y);
          auto row = terms;
          row.push_back({y, -1.0});
          model.add_row("whole_gpus_" + yn, row, -MilpModel::kInf, 0.0);
          if (tight) {
            // A used configuration holds at least one whole GPU at each of its positions
            // (Chvatal-Gomory rounding of g >= u, y >= g / v). Summing the u's of a template
            // gives a stronger LP but slowed CBC's search on HC1/G1.
            for (const auto& [group, us] : position_users[key]) {
              auto one = us;
              one.push_back({y, 1.0});
              model.add_row("one_gpu_" + yn + "_" + std::to_string(group), one, 0.0,
                            MilpModel::kInf);
            }
          }
          class_terms[k].push_back({y, 1.0});
          agg[k].push_back({y, 1.0});
        } else {
          class_terms[k].insert(class_terms[k].end(), terms.begin(), terms.end());
        }
      }
      // Each DNN's whole GPUs per class as one integer: CBC branches on these totals, which
      // splits the GPUs among the DNNs far sooner than branching position by position.
      for (auto& [k, terms] : agg) {
        if (terms.size() < 2) continue;
        const std::string name = "gpus_" + mn + "_" + cluster.classes[k].name;
        const int total = model.add_var(name, 0.0, cluster.classes[k].count, VarType::kInteger);
        auto row = terms;
        row.push_back({total, -1.0});
        model.add_row("total_" + name, row, 0.0, 0.0);
      }
      if (!single) {
        auto row = dnn_sum;
        for (auto& t : row) t.coef = -1.0;
        row.push_back({z, dnns[m].weight});
        model.add_row("share_" + mn, row, -MilpModel::kInf, 0.0);
      }
      if (cost) model.add_row("target_" + mn, dnn_sum, mode.target, MilpModel::kInf);
    }
    for (int k = 0; k < K; ++k) {
      if (class_terms[k].empty()) continue;
      budget_rows[static_cast<size_t>(k)] = model.add_row(
          "budget_" + cluster.classes[k].name, class_terms[k], -MilpModel::kInf,
          mode.caps.empty()
              ? cluster.classes[k].count
              : std::min(cluster.classes[k].count, mode.caps.at(static_cast<size_t>(k))));
    }
  };
  // The configurations the last LP relaxation used (x_c > 0): the warm start's restricted
  // MILP keeps only these.
  std::vector<std::vector<char>> lp_used;
  if (tight) {
    // A few rounds: each LP's optimum caps the next one's configurations.
    MilpOptions lp = opt.milp;
    lp.relax = true;
    lp.log = false;
    lp.priority.clear();
    lp.start.clear();
    if (min_cost && mode.zcap > 0.0) zcap = mode.zcap;
    for (int round = 0; round < opt.tighten_rounds && !(min_cost && mode.zcap > 0.0); ++round) {
      MilpModel relaxed;
      build(relaxed, false);
      const MilpResult lr = solve_cbc(relaxed, lp);
      if (!lr.has_solution()) break;
      lp_used.assign(dnns.size(), {});
      for (size_t m = 0; m < dnns.size(); ++m) {
        for (const auto& v : vars[m]) lp_used[m].push_back(lr.value(v.x) > kEps ? 1 : 0);
      }
      const double next = lr.objective * (1.0 + 1e-7) + 1e-6;
      if (next >= zcap * (1.0 - 1e-4)) {
        zcap = std::min(zcap, next);
        break;
      }
      zcap = next;
    }
  }
  out.zcap = zcap;
  MilpModel model;
  build(model, min_cost);

  MilpOptions mo = opt.milp;
  if (opt.branch_priorities) mo.priority = branch_priorities(model);
  MilpResult r;
  // The decomposition's combined plan, if any (it replaces CBC's when better).
  std::vector<ppipe::DnnPlan> decomp_plan;
  std::vector<double> decomp_start;  // its values as CBC's start (empty: CBC's own)
  double pool_plan = 0.0;            // the column pool's plan when it beat both (0: none)
  if (min_cost) {
    // The per-DNN question of the surrogate bound: its lower bound must be tight, so a
    // small gap; CBC's bound is what the caller uses.
    mo.relative_gap = mode.gap > 0.0 ? mode.gap : 1e-4;
    mo.time_limit_s = mode.limit_s > 0.0 ? mode.limit_s : opt.surrogate_call_s;
    r = solve_cbc(model, mo);
    out.plan.solve.nodes = r.nodes;
    if (r.status == MilpStatus::kInfeasible) {
      out.cost_lower = std::numeric_limits<double>::infinity();
      return out;
    }
    if (!r.has_solution()) return out;  // no information: cost_lower stays 0
    out.cost_lower = std::max(0.0, r.best_bound);
    for (int j = 0; j < model.num_vars(); ++j)
      out.values.push_back({model.var_name(j), r.value(j)});
    for (size_t c = 0; c < configs[0].size(); ++c) {
      if (r.value(vars[0][c].x) > kEps) out.used_configs.push_back(static_cast<int>(c));
    }
    out.gpus.assign(K, 0);
    for (int k = 0; k < K; ++k) {
      for (int y : class_gpu_vars[static_cast<size_t>(k)])
        out.gpus[static_cast<size_t>(k)] += static_cast<int>(std::llround(r.value(y)));
    }
    if (!opt.integer_gpus_per_position) {
      // Without whole GPUs per position the plan's GPUs are the vGPU shares rounded up.
      std::vector<double> share(K, 0.0);
      for (size_t c = 0; c < configs[0].size(); ++c) {
        for (size_t d = 0; d < configs[0][c].parts.size(); ++d) {
          const auto& p = configs[0][c].parts[d];
          share[p.cls] += std::round(r.value(vars[0][c].g[d])) / p.mps;
        }
      }
      for (int k = 0; k < K; ++k)
        out.gpus[static_cast<size_t>(k)] = static_cast<int>(std::ceil(share[k] - 1e-9));
    }
  } else {
    if (opt.warm_start_share > 0.0 && !lp_used.empty()) {
      // Warm start (a heuristic; the full model's optimum is untouched): the same model with
      // every configuration the LP relaxation left unused fixed at zero, solved within a share
      // of the time limit. Its solution is feasible for the full model (same variables, only
      // bounds differ), so CBC starts from it as the incumbent.
      MilpModel restricted = model;
      for (size_t m = 0; m < dnns.size(); ++m) {
        for (size_t c = 0; c < configs[m].size(); ++c) {
          if (lp_used[m][c]) continue;
          const Vars& v = vars[m][c];
          restricted.set_bounds(v.x, 0.0, 0.0);
          if (v.u >= 0) restricted.set_bounds(v.u, 0.0, 0.0);
          for (int g : v.g) restricted.set_bounds(g, 0.0, 0.0);
        }
      }
      MilpOptions ho = mo;
      ho.time_limit_s = opt.milp.time_limit_s * opt.warm_start_share;
      ho.node_limit = opt.milp.node_limit > 0 ? opt.milp.node_limit / 4 : 0;
      const std::clock_t cpu0 = std::clock();
      const MilpResult h = solve_cbc(restricted, ho);
      // What the warm start used, in the limit's own clock (CPU or wall seconds).
      const double used = opt.milp.cpu_time_limit
                              ? static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC
                              : h.seconds;
      if (h.has_solution()) {
        mo.start = h.values;
        mo.time_limit_s = std::max(0.0, opt.milp.time_limit_s - used);
        out.plan.solve.warm_start = h.objective;
        out.plan.solve.warm_start_seconds = h.seconds;
      }
    }
    const bool decompose = !single && opt.decomposition_bound && !lp_used.empty();
    const double full_limit = mo.time_limit_s;
    // With the decomposition: CBC first for a share of what is left; only when that stops
    // above the gap rule the surrogate bound runs and CBC goes on with z capped by it.
    // With many GPU classes: the larger share, and the column pool's pricing.
    const bool many_classes = K >= opt.decomposition_many_classes;
    const bool pool_pricing = opt.decomposition_pool_pricing && many_classes;
    const double share =
        many_classes ? opt.decomposition_share_many_classes : opt.decomposition_share;
    if (decompose) mo.time_limit_s = full_limit * (1.0 - share);
    const std::clock_t cbc0 = std::clock();
    r = solve_cbc(model, mo);
    const auto above_rule = [&](const MilpResult& res) {
      if (!res.has_solution() || res.status == MilpStatus::kOptimal) return false;
      const double gap =
          std::max(0.0, res.best_bound - res.objective) / std::max(std::abs(res.best_bound), 1e-9);
      return gap > opt.milp.relative_gap;
    };
    if (decompose && r.has_solution() && (opt.decomposition_always || above_rule(r))) {
      const double cbc_used = static_cast<double>(std::clock() - cbc0) / CLOCKS_PER_SEC;
      // The surrogate decomposition bound (ppipe_decomp.hpp): prices from the LP relaxation's
      // budget duals (without the z cap, which would take their value), per-DNN min-cost
      // MILPs as the oracle. The bound it proves caps z in the full model.
      const std::clock_t cpu0 = std::clock();
      const double saved = zcap;
      zcap = std::numeric_limits<double>::infinity();
      MilpModel lp_model;
      build(lp_model, false);
      zcap = saved;
      const MilpResult lr = solve_cbc(lp_model, lp_relaxation_options(opt.milp));
      // Each GPU class's price: the |dual| of its budget row in an LP relaxation (empty when
      // the LP gave no duals).
      const auto budget_prices = [&](const MilpResult& lp) {
        std::vector<double> p;
        if (!lp.has_solution() || lp.duals.empty()) return p;
        p.assign(K, 0.0);
        for (int k = 0; k < K; ++k) {
          const int row = budget_rows[static_cast<size_t>(k)];
          if (row >= 0) p[k] = std::abs(lp.duals[static_cast<size_t>(row)]);
        }
        return p;
      };
      const std::vector<double> prices = budget_prices(lr);
      if (!prices.empty()) {
        std::vector<int> counts(K, 0);
        for (int k = 0; k < K; ++k) counts[k] = cluster.classes[k].count;
        std::vector<double> weights;
        for (const auto& d : dnns) weights.push_back(d.weight);
        std::vector<double> dnn_zcap(dnns.size(), 0.0);  // each DNN's LP cap, from its first call
        const double budget_s = std::max(0.0, full_limit - cbc_used) * 0.9;
        // The bisection's part; the rest is for a last column-pool solve (below).
        const double surrogate_s = std::max(0.0, budget_s - opt.surrogate_call_s * 0.5);
        // The column pool: per DNN, every configuration a per-DNN plan used.
        std::vector<std::set<int>> pool(dnns.size());
        // One per-DNN solve at target tau and prices p; with caps, each class's budget row is
        // capped at what the other DNNs' plans leave of it (the primal repair), and the
        // answer's LP cap is not kept (it holds for the caps only).
        const auto solve_dnn = [&](int m, double tau, const std::vector<double>& p,
                                   const std::vector<int>* caps) {
          MilpMode q;
          q.target = tau;
          q.prices = p;
          if (caps) {
            q.caps = *caps;
            // A repair needs a plan within the caps, not the least-cost one.
            q.gap = opt.surrogate_repair_gap;
          }
          q.zcap = dnn_zcap[static_cast<size_t>(m)];
          // Within the decomposition's share: a call cut short still gives a valid bound.
          const double left =
              surrogate_s - static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
          q.limit_s = std::clamp(left, 0.05, std::max(0.05, opt.surrogate_call_s));
          const Solved s =
              solve_milp(cluster, {dnns[m]}, {rules[m]}, opt, max_partitions, method, q);
          pool[static_cast<size_t>(m)].insert(s.used_configs.begin(), s.used_configs.end());
          if (!caps && std::isfinite(s.zcap) && s.zcap > 0.0) {
            dnn_zcap[static_cast<size_t>(m)] = s.zcap;
          }
          DnnTargetAnswer a;
          a.cost_lower = s.cost_lower;
          a.gpus = s.gpus;
          if (s.feasible) a.plan = s.plan.dnns[0];
          a.values = s.values;
          return a;
        };
        const DnnTargetOracle oracle = [&](int m, double tau, const std::vector<double>& p) {
          return solve_dnn(m, tau, p, nullptr);
        };
        const DnnCappedOracle repair = [&](int m, double tau, const std::vector<double>& p,
                                           const std::vector<int>& caps) {
          return solve_dnn(m, tau, p, &caps);
        };
        SurrogateOptions so;
        // The repair's split: each DNN's physical GPUs per class in the LP relaxation,
        // rounded down, the rest of each class to the largest fractions.
        {
          std::vector<std::vector<double>> frac(dnns.size(), std::vector<double>(K, 0.0));
          for (size_t m = 0; m < dnns.size(); ++m) {
            for (size_t c = 0; c < configs[m].size(); ++c) {
              for (size_t d = 0; d < configs[m][c].parts.size(); ++d) {
                const auto& p = configs[m][c].parts[d];
                frac[m][static_cast<size_t>(p.cls)] += lr.value(vars[m][c].g[d]) / p.mps;
              }
            }
          }
          so.shares.assign(dnns.size(), std::vector<int>(K, 0));
          for (int k = 0; k < K; ++k) {
            int left = cluster.classes[k].count;
            std::vector<std::pair<double, size_t>> rest;
            for (size_t m = 0; m < dnns.size(); ++m) {
              const double v = std::max(0.0, frac[m][static_cast<size_t>(k)]);
              const int f = std::min(left, static_cast<int>(std::floor(v + 1e-9)));
              so.shares[m][static_cast<size_t>(k)] = f;
              left -= f;
              rest.push_back({v - f, m});
            }
            std::sort(rest.rbegin(), rest.rend());
            for (const auto& [fr, m] : rest) {
              if (left <= 0) break;
              ++so.shares[m][static_cast<size_t>(k)];
              --left;
            }
          }
        }
        so.stop_gap = opt.milp.relative_gap;
        so.extrapolate = 0.003;
        so.cpu_limit_s = surrogate_s;
        so.trace = opt.decomposition_trace;
        // The column pool's MILP (a restricted master), the PlanImprover: the full model with
        // every configuration fixed at zero that no per-DNN plan so far nor CBC's incumbent
        // uses. Its plans are the full model's (only bounds differ); it combines the per-DNN
        // plans across targets and with CBC's, which the repairs cannot.
        MilpResult pool_best;
        std::vector<double> pool_prices;  // the pool LP's budget duals (pool pricing)
        int pricing_calls = 0;            // per-DNN MILPs the pool pricing asked
        // One restricted solve within `until` CPU seconds of the decomposition's start.
        const auto pool_solve = [&](double until) {
          const double left = until - static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
          if (left <= 0.05) return;
          const std::vector<double>& from = pool_best.has_solution() ? pool_best.values : r.values;
          MilpModel restricted = model;
          int kept = 0;
          for (size_t m = 0; m < dnns.size(); ++m) {
            for (size_t c = 0; c < configs[m].size(); ++c) {
              const Vars& v = vars[m][c];
              if (pool[m].count(static_cast<int>(c)) > 0 || from[static_cast<size_t>(v.x)] > kEps) {
                ++kept;
                continue;
              }
              restricted.set_bounds(v.x, 0.0, 0.0);
              if (v.u >= 0) restricted.set_bounds(v.u, 0.0, 0.0);
              for (int g : v.g) restricted.set_bounds(g, 0.0, 0.0);
            }
          }
          MilpOptions po = mo;
          po.time_limit_s = std::min(left, std::max(0.05, opt.surrogate_call_s));
          po.start = from;
          // Within the pool the best plan is wanted, not one within the 1 % rule of the
          // restricted model's own bound.
          po.relative_gap = 1e-4;
          const MilpResult pr = solve_cbc(restricted, po);
          if (pool_pricing) {
            // The pool's LP relaxation: its budget duals price the next per-DNN plans.
            pool_prices = budget_prices(solve_cbc(restricted, lp_relaxation_options(opt.milp)));
          }
          if (opt.decomposition_trace) {
            std::fprintf(stderr, "pool MILP: %d configurations, %.2fs, %s %.3f, bound %.3f\n", kept,
                         pr.seconds, pr.has_solution() ? "found" : "none",
                         pr.has_solution() ? pr.objective : 0.0, pr.best_bound);
          }
          if (pr.has_solution() &&
              (!pool_best.has_solution() || pr.objective > pool_best.objective)) {
            pool_best = pr;
            for (size_t m = 0; m < dnns.size(); ++m) {
              for (size_t c = 0; c < configs[m].size(); ++c) {
                if (pr.value(vars[m][c].x) > kEps) pool[m].insert(static_cast<int>(c));
              }
            }
          }
        };
        const PlanImprover improve = [&]() -> double {
          pool_solve(surrogate_s);
          if (pool_pricing && pool_best.has_solution() &&
              pool_prices.size() == static_cast<size_t>(K)) {
            // Price-and-branch: each DNN's least-cost plan at the pool LP's duals serving its
            // share of the pool's best plan x (1 + half the gap rule) (its configurations
            // join the pool), then the pool again.
            double sum = 0.0;
            for (double p : pool_prices) sum += p;
            if (sum > 0.0) {
              const double goal = pool_best.objective * (1.0 + 0.5 * opt.milp.relative_gap);
              const std::vector<double> p = pool_prices;
              for (size_t m = 0; m < dnns.size(); ++m) {
                if (static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC > surrogate_s) break;
                ++pricing_calls;
                const DnnTargetAnswer a =
                    solve_dnn(static_cast<int>(m), goal * dnns[m].weight, p, nullptr);
                if (opt.decomposition_trace) {
                  std::fprintf(stderr, "pool pricing dnn %zu at %.3f:", m, goal * dnns[m].weight);
                  for (int g : a.gpus) std::fprintf(stderr, " %d", g);
                  std::fprintf(stderr, "\n");
                }
              }
              pool_solve(surrogate_s);
            }
          }
          return pool_best.has_solution() ? pool_best.objective : 0.0;
        };
        const double inc = std::min(r.objective, lr.objective);
        const SurrogateResult sr =
            surrogate_bound(weights, counts, prices, std::max(0.0, inc), lr.objective, so, oracle,
                            repair, opt.decomposition_pool ? improve : PlanImprover{});
        out.plan.solve.decomposition_bound = sr.bound;
        out.plan.solve.decomposition_calls = sr.oracle_calls + sr.repair_calls + pricing_calls;
        if (opt.decomposition_pool) {
          // The last targets' plans into the pool too, unless the rule is already met.
          const double have = std::max({r.objective, sr.plan_objective, sr.improved});
          if (sr.bound - have > 0.9 * so.stop_gap * have) pool_solve(budget_s);
        }
        if (sr.plan.size() == dnns.size() && sr.plan_objective > 0.0) {
          decomp_plan = sr.plan;
          out.plan.solve.decomposition_plan = sr.plan_objective;
        }
        if (sr.plan_values.size() == dnns.size() && sr.plan_objective > r.objective) {
          // CBC's start: the per-DNN solutions under their names in the full model (DNN 0's
          // "m0" becomes "m<m>"), z their objective. Clamped to the full model's bounds; a
          // start that breaks a row is ignored by CBC (the combined plan is output anyway).
          std::map<std::string, int> index;
          for (int j = 0; j < model.num_vars(); ++j) index[model.var_name(j)] = j;
          std::vector<double> guess(static_cast<size_t>(model.num_vars()), 0.0);
          const auto& bounds_of = model.vars();
          for (size_t m = 0; m < dnns.size(); ++m) {
            for (const auto& [name, value] : sr.plan_values[m]) {
              std::string full = name;
              const auto at = full.find("_m0");
              if (at == std::string::npos) continue;
              full.replace(at, 3, "_m" + std::to_string(m));
              const auto it = index.find(full);
              if (it == index.end()) continue;
              const auto& b = bounds_of[static_cast<size_t>(it->second)];
              guess[static_cast<size_t>(it->second)] = std::clamp(value, b.lb, b.ub);
            }
          }
          double zs = std::numeric_limits<double>::infinity();
          for (size_t m = 0; m < dnns.size(); ++m) {
            double sum = 0.0;
            for (const auto& v : vars[m]) sum += guess[static_cast<size_t>(v.x)];
            zs = std::min(zs, sum / dnns[m].weight);
          }
          const auto& zb = bounds_of[static_cast<size_t>(z)];
          guess[static_cast<size_t>(z)] = std::clamp(zs, zb.lb, std::min(zb.ub, sr.bound));
          if (opt.decomposition_trace) {
            int bad = 0;
            for (const auto& row : model.rows()) {
              double v = 0.0;
              for (const auto& t : row.terms) v += t.coef * guess[static_cast<size_t>(t.var)];
              if (v < row.lb - 1e-6 || v > row.ub + 1e-6) {
                if (++bad <= 5)
                  std::fprintf(stderr, "start breaks %s: %.4f not in [%.4g, %.4g]\n",
                               row.name.c_str(), v, row.lb, row.ub);
              }
            }
            std::fprintf(stderr, "start z %.3f, %d rows broken\n", guess[static_cast<size_t>(z)],
                         bad);
          }
          decomp_start = std::move(guess);
        }
        if (sr.bound < lr.objective) {
          model.set_bounds(z, 0.0, std::min(sr.bound, model.vars()[static_cast<size_t>(z)].ub));
        }
        if (pool_best.has_solution() &&
            pool_best.objective > std::max(r.objective, sr.plan_objective) * (1.0 + 1e-9)) {
          // The column pool's plan: feasible for the full model (only bounds differ); the
          // bound stays the full model's.
          const double bound = r.best_bound;
          const long nodes = r.nodes;
          r.values = pool_best.values;
          r.objective = pool_best.objective;
          r.best_bound = bound;
          r.nodes = static_cast<int>(nodes + pool_best.nodes);
          pool_plan = pool_best.objective;
          decomp_start.clear();
          decomp_plan.clear();
        }
      }
      const double used = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
      out.plan.solve.decomposition_seconds = used;
      mo.time_limit_s = std::max(0.1, full_limit - cbc_used - used);
      mo.start = decomp_start.empty() ? r.values : decomp_start;
      const long nodes = r.nodes;
      const MilpResult again = solve_cbc(model, mo);
      if (again.has_solution() && again.objective >= r.objective - 1e-9) {
        r = again;
        r.nodes += static_cast<int>(nodes);
      } else if (again.has_solution()) {
        // CBC rejected the start and found worse: keep the start, take the bound.
        r.best_bound = std::min(r.best_bound, again.best_bound);
        r.nodes += again.nodes;
      }
    }
  }
  auto& st = out.plan.solve;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  st.objective = r.has_solution() ? r.objective : 0.0;
  st.bound = r.best_bound;
  st.nodes = r.nodes;
  if (!r.has_solution()) {
    st.status =
        r.status == MilpStatus::kInfeasible ? PlanStatus::kInfeasible : PlanStatus::kNoSolution;
    st.detail = r.status == MilpStatus::kInfeasible ? "the MILP is infeasible"
                                                    : "CBC stopped before finding a plan";
    return out;
  }
  st.gap = std::max(0.0, r.best_bound - r.objective) / std::max(std::abs(r.best_bound), 1e-9);
  if (r.status == MilpStatus::kOptimal) {
    st.status = PlanStatus::kOptimal;
  } else {
    st.status = PlanStatus::kFeasible;
    st.limit = to_string(r.limit);
  }
  out.feasible = true;

  for (size_t m = 0; m < dnns.size(); ++m) {
    auto& dp = out.plan.dnns[m];
    for (size_t c = 0; c < configs[m].size(); ++c) {
      const auto& v = vars[m][c];
      if (r.value(v.x) <= kEps) continue;
      const auto& cfg = configs[m][c];
      std::vector<int> g;
      double thr = std::numeric_limits<double>::infinity();
      for (size_t d = 0; d < cfg.parts.size(); ++d) {
        g.push_back(static_cast<int>(std::llround(r.value(v.g[d]))));
        thr = std::min(thr, g.back() * cfg.parts[d].x_vgpu);
      }
      if (thr <= kEps) continue;
      ppipe::Pipeline pl;
      pl.batch = cfg.batch;
      pl.latency_ms = cfg.latency_ms;
      for (size_t d = 0; d < cfg.parts.size(); ++d) {
        const auto& p = cfg.parts[d];
        // Trim a partition that has more vGPUs than the pipeline's bottleneck needs.
        const int need = static_cast<int>(std::ceil(thr / p.x_vgpu - 1e-9));
        ppipe::Partition part;
        part.first_block = p.first;
        part.end_block = p.end;
        part.gpu_class = cluster.classes[p.cls].name;
        part.mps = p.mps;
        part.vgpus = std::min(g[d], std::max(need, 1));
        part.infer_ms = p.infer_ms;
        part.transfer_in_ms = p.transfer_in_ms;
        part.in_bytes_per_sample = p.in_bytes;
        part.throughput = part.vgpus * p.x_vgpu;
        pl.partitions.push_back(part);
      }
      pl.throughput = thr;
      dp.throughput += thr;
      dp.pipelines.push_back(std::move(pl));
    }
  }
  if (pool_plan > 0.0 && st.objective <= pool_plan * (1.0 + 1e-9)) {
    st.detail = "the decomposition's column pool MILP beat CBC's incumbent and the combined plans";
  }
  if (!decomp_plan.empty() && st.decomposition_plan > st.objective) {
    // The primal side beat CBC's incumbent: its per-DNN plans together fit every class
    // (checked by the decomposition; the plan is re-checked outside like every plan).
    for (size_t m = 0; m < dnns.size(); ++m) {
      auto& dp = out.plan.dnns[m];
      dp.pipelines = decomp_plan[m].pipelines;
      dp.throughput = decomp_plan[m].throughput;
    }
    st.objective = st.decomposition_plan;
    st.gap = std::max(0.0, st.bound - st.objective) / std::max(std::abs(st.bound), 1e-9);
    if (st.gap <= opt.milp.relative_gap) st.status = PlanStatus::kOptimal;
    st.detail = "the decomposition's combined per-DNN plans beat CBC's incumbent";
  }
  return out;
}

ppipe::PpipePlan np_of(const PpipeInput& in, const ppipe::PpipePlan* np) {
  return np != nullptr ? *np : plan_np(in).plan;
}

void finish(PpipeResult& r, const PpipeInput& in) {
  r.problems = check_ppipe_plan(r.plan, in, r.rules);
}

}  // namespace

std::vector<ConfigRules> ppipe_rules(const PpipeInput& in, const ppipe::PpipePlan* np) {
  std::vector<ConfigRules> rules;
  for (size_t m = 0; m < in.dnns.size(); ++m) {
    ConfigRules r;
    r.budget_ms = in.dnns[m].slo_ms * (1.0 - in.options.slo_margin);
    r.batch_build = in.options.batch_build_estimate;
    r.allow_mps = true;
    if (np != nullptr && m < np->dnns.size()) r.np_throughput = np->dnns[m].throughput;
    rules.push_back(r);
  }
  return rules;
}

PpipeResult plan_np(const PpipeInput& in) {
  PpipeResult res;
  for (const auto& d : in.dnns) {
    ConfigRules r;
    r.budget_ms = d.slo_ms * (1.0 - in.options.slo_margin);
    r.allow_mps = false;
    res.rules.push_back(r);
  }
  res.plan =
      solve_milp(in.cluster, in.dnns, res.rules, in.options, 1, ppipe::PpipeMethod::kNp).plan;
  finish(res, in);
  return res;
}

PpipeResult plan_ppipe(const PpipeInput& in, const ppipe::PpipePlan* np) {
  if (in.options.max_partitions < 1 || in.options.max_partitions > 3) {
    throw std::invalid_argument("max_partitions must be 1, 2 or 3");
  }
  ppipe::PpipePlan storage;
  const ppipe::PpipePlan* npp = nullptr;
  if (in.options.batch_build_estimate) {
    storage = np_of(in, np);
    npp = &storage;
  }
  PpipeResult res;
  res.rules = ppipe_rules(in, npp);
  res.plan = solve_milp(in.cluster, in.dnns, res.rules, in.options, in.options.max_partitions,
                        ppipe::PpipeMethod::kPpipe)
                 .plan;
  finish(res, in);
  return res;
}

PpipeResult plan_dart_r(const PpipeInput& in, const ppipe::PpipePlan* np) {
  if (in.cluster.classes.size() != 2) {
    throw std::invalid_argument("DART-r pairs one GPU of each of two classes; the cluster has " +
                                std::to_string(in.cluster.classes.size()) + " classes");
  }
  ppipe::PpipePlan storage = np_of(in, np);
  const ppipe::PpipePlan& npl = storage;
  PpipeResult res;
  res.rules = ppipe_rules(in, in.options.batch_build_estimate ? &npl : nullptr);
  for (auto& r : res.rules) r.allow_mps = false;
  // Split the GPUs as NP does; spread what NP left unallocated evenly.
  const size_t M = in.dnns.size();
  std::vector<std::array<int, 2>> alloc(M, {0, 0});
  for (size_t m = 0; m < M && m < npl.dnns.size(); ++m) {
    for (const auto& p : npl.dnns[m].pipelines) {
      for (const auto& part : p.partitions) {
        alloc[m][class_index(in.cluster, part.gpu_class)] += part.vgpus;  // mps = 1
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
