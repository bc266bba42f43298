#include "plan/ppipe/milp_solve.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <map>
#include <set>

#include "plan/milp/milp.hpp"
#include "plan/ppipe/decomp.hpp"

namespace tessera::plan {
namespace {

constexpr double kEps = 1e-6;
constexpr double kInf = std::numeric_limits<double>::infinity();

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

// Throughput bound of one configuration alone on the whole cluster: physical GPUs per unit
// of throughput per class, against the class's count.
double config_bound(const ppipe::PpipeCluster& cluster, const PipeConfig& c) {
  std::vector<double> per_unit(cluster.classes.size(), 0.0);
  for (const auto& p : c.parts) per_unit[p.cls] += 1.0 / (p.mps * p.x_vgpu);
  double bound = kInf;
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

// A point in time in both clocks a time limit may count (MilpOptions::cpu_time_limit).
struct Stamp {
  std::clock_t cpu = std::clock();
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
};

// Seconds since `t0` in the limit's own clock: this process's CPU time or wall-clock time.
double used_since(const Stamp& t0, const MilpOptions& limit) {
  if (limit.cpu_time_limit) return static_cast<double>(std::clock() - t0.cpu) / CLOCKS_PER_SEC;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0.wall).count();
}

// The model's variables of one configuration.
struct Vars {
  int x = -1, u = -1;
  std::vector<int> g;
};

// What one DNN's part of the model collects while it is built: per (class, position) the
// vGPU terms and, per configuration, the binaries using it; the DNN's throughput terms.
struct DnnTerms {
  std::map<std::pair<int, int>, std::vector<LinTerm>> positions;  // (class, d)
  std::map<std::pair<int, int>, std::map<int, std::vector<LinTerm>>> users;
  std::vector<LinTerm> sum;
};

// The surrogate decomposition's state while it runs (ppipe_decomp.hpp): its LP relaxation,
// prices, CPU budget, each DNN's LP cap, the column pool and its best plan.
struct DecompState {
  MilpResult lr;  // the LP relaxation without the z cap
  std::vector<double> prices;
  Stamp t0;
  double budget_s = 0.0;     // seconds (the limit's clock) for the decomposition and the pool
  double surrogate_s = 0.0;  // the bisection's part of it
  std::vector<double> dnn_zcap;
  std::vector<std::set<int>> pool;  // per DNN: every configuration a per-DNN plan used
  MilpResult pool_best;
  std::vector<double> pool_prices;  // the pool LP's budget duals (pool pricing)
  int pricing_calls = 0;            // per-DNN MILPs the pool pricing asked
};

// One solve of the A.2 MILP, stage by stage.
class MilpSolve {
 public:
  MilpSolve(const ppipe::PpipeCluster& cluster, const std::vector<PpipeDnn>& dnns,
            const std::vector<ConfigRules>& rules, const PpipeOptions& opt, int max_partitions,
            ppipe::PpipeMethod method, const MilpMode& mode)
      : cluster_(cluster),
        dnns_(dnns),
        rules_(rules),
        opt_(opt),
        max_partitions_(max_partitions),
        method_(method),
        mode_(mode),
        min_cost_(mode.target > 0.0),
        single_(dnns.size() == 1),
        tight_(opt.tighten_formulation),
        K_(static_cast<int>(cluster.classes.size())),
        start_(std::chrono::steady_clock::now()) {}

  Solved run();

 private:
  // Stage 1: each DNN's configurations and their throughput bounds; false (the plan says
  // why) when some DNN has none.
  bool enumerate_configurations();
  // Stage 2: the bound on min_m x_m / w_m (per template of each DNN the best configuration
  // alone).
  void bound_throughput();
  // Stage 3: the model (`cost`: the min-cost objective and target rows instead of A.2's).
  void build(MilpModel& model, bool cost);
  void add_dnn(MilpModel& model, size_t m, bool cost, std::vector<std::vector<LinTerm>>& classes);
  void add_configuration(MilpModel& model, size_t m, size_t c, bool cost, bool need_u,
                         DnnTerms& terms);
  void add_positions(MilpModel& model, size_t m, bool cost, const DnnTerms& terms,
                     std::vector<std::vector<LinTerm>>& classes);
  // Stage 4: LP rounds, each LP's optimum capping the next one's configurations (zcap_);
  // the configurations the last relaxation used (lp_used_).
  void tighten();
  // Stage 5: CBC on the min-cost model (the decomposition's per-DNN question); false when
  // it ends without a plan (out_ says what is known).
  bool solve_min_cost(MilpModel& model, MilpOptions mo);
  // Stage 5: CBC on the A.2 model, after the warm start, with the decomposition when CBC
  // stops above the gap rule.
  void solve_full(MilpModel& model, MilpOptions mo);
  void warm_start(const MilpModel& model, MilpOptions& mo);
  // Stage 6: the surrogate decomposition bound and its primal side (column pool, combined
  // per-DNN plans), then CBC again within what is left of the time limit.
  void decompose(MilpModel& model, MilpOptions& mo, double full_limit, double cbc_used);
  std::vector<double> budget_prices(const MilpResult& lp) const;
  DnnTargetAnswer solve_dnn(DecompState& st, int m, double tau, const std::vector<double>& p,
                            const std::vector<int>* caps);
  std::vector<std::vector<int>> repair_shares(const MilpResult& lr) const;
  void pool_solve(DecompState& st, const MilpModel& model, const MilpOptions& mo, double until);
  double improve(DecompState& st, const MilpModel& model, const MilpOptions& mo);
  std::vector<double> start_from_plans(const MilpModel& model, const SurrogateResult& sr) const;
  void adopt_pool(const DecompState& st, const SurrogateResult& sr);
  // Stage 7: the solve's status and, with a plan, the pooled pipelines (extract) or the
  // decomposition's combined plan (adopt_decomposition_plan).
  void finish_stats();
  void extract();
  void adopt_decomposition_plan();
  bool above_rule(const MilpResult& res) const;

  const ppipe::PpipeCluster& cluster_;
  const std::vector<PpipeDnn>& dnns_;
  const std::vector<ConfigRules>& rules_;
  const PpipeOptions& opt_;
  const int max_partitions_;
  const ppipe::PpipeMethod method_;
  const MilpMode& mode_;
  const bool min_cost_;
  const bool single_;
  const bool tight_;
  const int K_;
  const std::chrono::steady_clock::time_point start_;

  Solved out_;
  std::vector<std::vector<PipeConfig>> configs_;
  std::vector<std::vector<double>> bounds_;
  double zmax_ = kInf;
  // With tighten_formulation, zcap is the LP relaxation's optimum (re-solved with the caps
  // it implies): an optimal plan serves DNN m at most w_m zcap (one DNN: zcap), so no
  // configuration needs a larger throughput, and smaller big-M's follow (see
  // docs/plan.md#ppipe-planner, "Tightened formulation").
  double zcap_ = kInf;
  std::vector<std::vector<Vars>> vars_;
  int z_ = -1;                                    // the objective variable (several DNNs)
  std::vector<int> budget_rows_;                  // per class, -1 when the class has no terms
  std::vector<std::vector<int>> class_gpu_vars_;  // y's per class (whole GPUs per position)
  // The configurations the last LP relaxation used (x_c > 0): the warm start's restricted
  // MILP keeps only these.
  std::vector<std::vector<char>> lp_used_;
  MilpResult r_;
  // The decomposition's combined plan, if any (it replaces CBC's when better).
  std::vector<ppipe::DnnPlan> decomp_plan_;
  std::vector<double> decomp_start_;  // its values as CBC's start (empty: CBC's own)
  double pool_plan_ = 0.0;            // the column pool's plan when it beat both (0: none)
};

Solved MilpSolve::run() {
  out_.plan.method = method_;
  out_.plan.cluster = cluster_;
  out_.plan.slo_margin = opt_.slo_margin;
  if (!enumerate_configurations()) return std::move(out_);
  bound_throughput();
  if (tight_) tighten();
  out_.zcap = zcap_;
  MilpModel model;
  build(model, min_cost_);
  MilpOptions mo = opt_.milp;
  if (opt_.branch_priorities) mo.priority = branch_priorities(model);
  if (min_cost_) {
    if (!solve_min_cost(model, mo)) return std::move(out_);
  } else {
    solve_full(model, mo);
  }
  finish_stats();
  if (!r_.has_solution()) return std::move(out_);
  out_.feasible = true;
  extract();
  if (pool_plan_ > 0.0 && out_.plan.solve.objective <= pool_plan_ * (1.0 + 1e-9)) {
    out_.plan.solve.detail =
        "the decomposition's column pool MILP beat CBC's incumbent and the combined plans";
  }
  if (!decomp_plan_.empty() && out_.plan.solve.decomposition_plan > out_.plan.solve.objective) {
    adopt_decomposition_plan();
  }
  return std::move(out_);
}

bool MilpSolve::enumerate_configurations() {
  const auto templates = enumerate_templates(K_, max_partitions_);
  const bool repo = opt_.repo_templates && max_partitions_ > 1;
  const auto repo_templates = enumerate_repo_templates(K_, max_partitions_);
  out_.plan.solve.templates = static_cast<int>(repo ? repo_templates.size() : templates.size());
  configs_.assign(dnns_.size(), {});
  bounds_.assign(dnns_.size(), {});
  std::string why;
  for (size_t m = 0; m < dnns_.size(); ++m) {
    std::string why_m;
    auto all = enumerate_configs(cluster_, dnns_[m], templates, opt_, rules_[m], &why_m);
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
      const double b = config_bound(cluster_, c);
      if (b <= kEps) continue;  // uses a class with no GPUs
      configs_[m].push_back(std::move(c));
      bounds_[m].push_back(b);
    }
    out_.plan.solve.configurations += static_cast<int>(configs_[m].size());
    if (configs_[m].empty() && why.empty()) {
      why = any ? "GPU budget: every pipeline of " + dnns_[m].name +
                      " that fits its latency budget needs a GPU class with count 0"
                : why_m;
    }
    ppipe::DnnPlan dp;
    dp.dnn = dnns_[m].name;
    dp.weight = dnns_[m].weight;
    dp.slo_ms = dnns_[m].slo_ms;
    out_.plan.dnns.push_back(dp);
  }
  if (why.empty()) return true;
  if (min_cost_) out_.cost_lower = kInf;
  out_.plan.solve.status = PlanStatus::kInfeasible;
  out_.plan.solve.detail = why;
  out_.plan.solve.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return false;
}

void MilpSolve::bound_throughput() {
  for (size_t m = 0; m < dnns_.size(); ++m) {
    std::map<int, double> per_template;
    for (size_t c = 0; c < configs_[m].size(); ++c) {
      auto& v = per_template[configs_[m][c].tmpl];
      v = opt_.one_config_per_template ? std::max(v, bounds_[m][c]) : v + bounds_[m][c];
    }
    double sum = 0.0;
    for (const auto& [t, v] : per_template) sum += v;
    zmax_ = std::min(zmax_, sum / dnns_[m].weight);
  }
}

void MilpSolve::build(MilpModel& model, bool cost) {
  model.set_maximize(!cost);
  budget_rows_.assign(K_, -1);
  class_gpu_vars_.assign(K_, {});
  vars_.assign(dnns_.size(), {});
  z_ = -1;
  if (!single_) z_ = model.add_var("z", 0.0, std::min(zmax_, zcap_), VarType::kContinuous, 1.0);
  // Physical-GPU terms per class overall.
  std::vector<std::vector<LinTerm>> class_terms(K_);
  for (size_t m = 0; m < dnns_.size(); ++m) add_dnn(model, m, cost, class_terms);
  for (int k = 0; k < K_; ++k) {
    if (class_terms[k].empty()) continue;
    budget_rows_[static_cast<size_t>(k)] = model.add_row(
        "budget_" + cluster_.classes[k].name, class_terms[k], -MilpModel::kInf,
        mode_.caps.empty()
            ? cluster_.classes[k].count
            : std::min(cluster_.classes[k].count, mode_.caps.at(static_cast<size_t>(k))));
  }
}

void MilpSolve::add_dnn(MilpModel& model, size_t m, bool cost,
                        std::vector<std::vector<LinTerm>>& classes) {
  const std::string mn = "m" + std::to_string(m);
  std::map<int, std::vector<int>> by_template;
  for (size_t c = 0; c < configs_[m].size(); ++c)
    by_template[configs_[m][c].tmpl].push_back(static_cast<int>(c));
  DnnTerms terms;
  vars_[m].assign(configs_[m].size(), Vars{});
  for (size_t c = 0; c < configs_[m].size(); ++c) {
    const bool need_u =
        (tight_ && opt_.binary_per_configuration) ||
        (opt_.one_config_per_template && by_template[configs_[m][c].tmpl].size() > 1);
    add_configuration(model, m, c, cost, need_u, terms);
  }
  if (opt_.one_config_per_template) {
    for (const auto& [t, cs] : by_template) {
      if (cs.size() < 2) continue;
      std::vector<LinTerm> row;
      for (int c : cs) row.push_back({vars_[m][c].u, 1.0});
      model.add_row("template_" + mn + "t" + std::to_string(t), row, -MilpModel::kInf, 1.0);
    }
  }
  add_positions(model, m, cost, terms, classes);
  if (!single_) {
    auto row = terms.sum;
    for (auto& t : row) t.coef = -1.0;
    row.push_back({z_, dnns_[m].weight});
    model.add_row("share_" + mn, row, -MilpModel::kInf, 0.0);
  }
  if (cost) model.add_row("target_" + mn, terms.sum, mode_.target, MilpModel::kInf);
}

void MilpSolve::add_configuration(MilpModel& model, size_t m, size_t c, bool cost, bool need_u,
                                  DnnTerms& terms) {
  const auto& cfg = configs_[m][c];
  const std::string cn = "m" + std::to_string(m) + "c" + std::to_string(c);
  const double dnn_cap = single_ ? zcap_ : dnns_[m].weight * zcap_;
  const double xcap = std::min(bounds_[m][c], dnn_cap);
  Vars& v = vars_[m][c];
  v.x = model.add_var("x_" + cn, 0.0, xcap, VarType::kContinuous, single_ && !cost ? 1.0 : 0.0);
  terms.sum.push_back({v.x, 1.0});
  if (need_u) {
    v.u = model.add_var("u_" + cn, 0.0, 1.0, VarType::kBinary);
    model.add_row("link_" + cn, {{v.x, 1.0}, {v.u, -xcap}}, -MilpModel::kInf, 0.0);
  }
  for (size_t d = 0; d < cfg.parts.size(); ++d) {
    const auto& p = cfg.parts[d];
    const std::string dn = cn + "d" + std::to_string(d);
    const double gmax =
        std::max(1.0, std::min<double>(static_cast<double>(cluster_.classes[p.cls].count) * p.mps,
                                       std::ceil(xcap / p.x_vgpu - 1e-9)));
    const int g = model.add_var("g_" + dn, 0.0, gmax, VarType::kInteger);
    v.g.push_back(g);
    model.add_row("xput_" + dn, {{v.x, 1.0}, {g, -p.x_vgpu}}, -MilpModel::kInf, 0.0);
    if (need_u) {
      model.add_row("used_" + dn, {{g, 1.0}, {v.u, -1.0}}, 0.0, MilpModel::kInf);
      // An unused configuration holds no vGPUs, a used one no more than its cap needs.
      if (tight_) {
        model.add_row("unused_" + dn, {{g, 1.0}, {v.u, -gmax}}, -MilpModel::kInf, 0.0);
      }
    }
    terms.positions[{p.cls, static_cast<int>(d)}].push_back({g, 1.0 / p.mps});
    if (cost && !opt_.integer_gpus_per_position) {
      model.set_objective(g, mode_.prices.at(static_cast<size_t>(p.cls)) / p.mps);
    }
    if (v.u >= 0) {
      terms.users[{p.cls, static_cast<int>(d)}][static_cast<int>(c)].push_back({v.u, -1.0});
    }
  }
}

void MilpSolve::add_positions(MilpModel& model, size_t m, bool cost, const DnnTerms& terms,
                              std::vector<std::vector<LinTerm>>& classes) {
  const std::string mn = "m" + std::to_string(m);
  std::map<int, std::vector<LinTerm>> agg;
  for (const auto& [key, position] : terms.positions) {
    const auto [k, d] = key;
    if (!opt_.integer_gpus_per_position) {
      classes[k].insert(classes[k].end(), position.begin(), position.end());
      continue;
    }
    const std::string yn = mn + "_" + cluster_.classes[k].name + "_pos" + std::to_string(d);
    const int y = model.add_var("gpus_" + yn, 0.0, cluster_.classes[k].count, VarType::kInteger,
                                cost ? mode_.prices.at(static_cast<size_t>(k)) : 0.0);
    class_gpu_vars_[static_cast<size_t>(k)].push_back(y);
    auto row = position;
    row.push_back({y, -1.0});
    model.add_row("whole_gpus_" + yn, row, -MilpModel::kInf, 0.0);
    const auto users = terms.users.find(key);
    if (tight_ && users != terms.users.end()) {
      // A used configuration holds at least one whole GPU at each of its positions
      // (Chvatal-Gomory rounding of g >= u, y >= g / v). Summing the u's of a template
      // gives a stronger LP but slowed CBC's search on HC1/G1.
      for (const auto& [group, us] : users->second) {
        auto one = us;
        one.push_back({y, 1.0});
        model.add_row("one_gpu_" + yn + "_" + std::to_string(group), one, 0.0, MilpModel::kInf);
      }
    }
    classes[k].push_back({y, 1.0});
    agg[k].push_back({y, 1.0});
  }
  // Each DNN's whole GPUs per class as one integer: CBC branches on these totals, which
  // splits the GPUs among the DNNs far sooner than branching position by position.
  for (auto& [k, row_terms] : agg) {
    if (row_terms.size() < 2) continue;
    const std::string name = "gpus_" + mn + "_" + cluster_.classes[k].name;
    const int total = model.add_var(name, 0.0, cluster_.classes[k].count, VarType::kInteger);
    auto row = row_terms;
    row.push_back({total, -1.0});
    model.add_row("total_" + name, row, 0.0, 0.0);
  }
}

void MilpSolve::tighten() {
  MilpOptions lp = opt_.milp;
  lp.relax = true;
  lp.log = false;
  lp.priority.clear();
  lp.start.clear();
  if (min_cost_ && mode_.zcap > 0.0) zcap_ = mode_.zcap;
  for (int round = 0; round < opt_.tighten_rounds && !(min_cost_ && mode_.zcap > 0.0); ++round) {
    MilpModel relaxed;
    build(relaxed, false);
    const MilpResult lr = solve_cbc(relaxed, lp);
    if (!lr.has_solution()) break;
    lp_used_.assign(dnns_.size(), {});
    for (size_t m = 0; m < dnns_.size(); ++m) {
      for (const auto& v : vars_[m]) lp_used_[m].push_back(lr.value(v.x) > kEps ? 1 : 0);
    }
    const double next = lr.objective * (1.0 + 1e-7) + 1e-6;
    if (next >= zcap_ * (1.0 - 1e-4)) {
      zcap_ = std::min(zcap_, next);
      break;
    }
    zcap_ = next;
  }
}

bool MilpSolve::solve_min_cost(MilpModel& model, MilpOptions mo) {
  // The per-DNN question of the surrogate bound: its lower bound must be tight, so a
  // small gap; CBC's bound is what the caller uses.
  mo.relative_gap = mode_.gap > 0.0 ? mode_.gap : 1e-4;
  mo.time_limit_s = mode_.limit_s > 0.0 ? mode_.limit_s : opt_.surrogate_call_s;
  r_ = solve_cbc(model, mo);
  out_.plan.solve.nodes = r_.nodes;
  if (r_.status == MilpStatus::kInfeasible) {
    out_.cost_lower = kInf;
    return false;
  }
  if (!r_.has_solution()) return false;  // no information: cost_lower stays 0
  out_.cost_lower = std::max(0.0, r_.best_bound);
  for (int j = 0; j < model.num_vars(); ++j)
    out_.values.push_back({model.var_name(j), r_.value(j)});
  for (size_t c = 0; c < configs_[0].size(); ++c) {
    if (r_.value(vars_[0][c].x) > kEps) out_.used_configs.push_back(static_cast<int>(c));
  }
  out_.gpus.assign(K_, 0);
  for (int k = 0; k < K_; ++k) {
    for (int y : class_gpu_vars_[static_cast<size_t>(k)])
      out_.gpus[static_cast<size_t>(k)] += static_cast<int>(std::llround(r_.value(y)));
  }
  if (!opt_.integer_gpus_per_position) {
    // Without whole GPUs per position the plan's GPUs are the vGPU shares rounded up.
    std::vector<double> share(K_, 0.0);
    for (size_t c = 0; c < configs_[0].size(); ++c) {
      for (size_t d = 0; d < configs_[0][c].parts.size(); ++d) {
        const auto& p = configs_[0][c].parts[d];
        share[p.cls] += std::round(r_.value(vars_[0][c].g[d])) / p.mps;
      }
    }
    for (int k = 0; k < K_; ++k)
      out_.gpus[static_cast<size_t>(k)] = static_cast<int>(std::ceil(share[k] - 1e-9));
  }
  return true;
}

void MilpSolve::warm_start(const MilpModel& model, MilpOptions& mo) {
  // Warm start (a heuristic; the full model's optimum is untouched): the same model with
  // every configuration the LP relaxation left unused fixed at zero, solved within a share
  // of the time limit. Its solution is feasible for the full model (same variables, only
  // bounds differ), so CBC starts from it as the incumbent.
  MilpModel restricted = model;
  for (size_t m = 0; m < dnns_.size(); ++m) {
    for (size_t c = 0; c < configs_[m].size(); ++c) {
      if (lp_used_[m][c]) continue;
      const Vars& v = vars_[m][c];
      restricted.set_bounds(v.x, 0.0, 0.0);
      if (v.u >= 0) restricted.set_bounds(v.u, 0.0, 0.0);
      for (int g : v.g) restricted.set_bounds(g, 0.0, 0.0);
    }
  }
  MilpOptions ho = mo;
  ho.time_limit_s = opt_.milp.time_limit_s * opt_.warm_start_share;
  ho.node_limit = opt_.milp.node_limit > 0 ? opt_.milp.node_limit / 4 : 0;
  const Stamp t0;
  const MilpResult h = solve_cbc(restricted, ho);
  const double used = used_since(t0, opt_.milp);
  if (h.has_solution()) {
    mo.start = h.values;
    mo.time_limit_s = std::max(0.0, opt_.milp.time_limit_s - used);
    out_.plan.solve.warm_start = h.objective;
    out_.plan.solve.warm_start_seconds = h.seconds;
  }
}

bool MilpSolve::above_rule(const MilpResult& res) const {
  if (!res.has_solution() || res.status == MilpStatus::kOptimal) return false;
  const double gap =
      std::max(0.0, res.best_bound - res.objective) / std::max(std::abs(res.best_bound), 1e-9);
  return gap > opt_.milp.relative_gap;
}

void MilpSolve::solve_full(MilpModel& model, MilpOptions mo) {
  if (opt_.warm_start_share > 0.0 && !lp_used_.empty()) warm_start(model, mo);
  const bool decomposing = !single_ && opt_.decomposition_bound && !lp_used_.empty();
  const double full_limit = mo.time_limit_s;
  // With the decomposition: CBC first for a share of what is left; only when that stops
  // above the gap rule the surrogate bound runs and CBC goes on with z capped by it.
  // With many GPU classes: the larger share, and the column pool's pricing.
  const bool many_classes = K_ >= opt_.decomposition_many_classes;
  const double share =
      many_classes ? opt_.decomposition_share_many_classes : opt_.decomposition_share;
  if (decomposing) mo.time_limit_s = full_limit * (1.0 - share);
  const Stamp cbc0;
  r_ = solve_cbc(model, mo);
  // Past the wall-clock deadline the decomposition (which builds per-DNN models before its
  // first check of the time) is skipped: CBC's incumbent is the plan.
  const bool time_left =
      !opt_.milp.deadline || std::chrono::steady_clock::now() < *opt_.milp.deadline;
  if (decomposing && time_left && r_.has_solution() &&
      (opt_.decomposition_always || above_rule(r_))) {
    decompose(model, mo, full_limit, used_since(cbc0, opt_.milp));
  }
}

std::vector<double> MilpSolve::budget_prices(const MilpResult& lp) const {
  // Each GPU class's price: the |dual| of its budget row in an LP relaxation (empty when
  // the LP gave no duals).
  std::vector<double> p;
  if (!lp.has_solution() || lp.duals.empty()) return p;
  p.assign(K_, 0.0);
  for (int k = 0; k < K_; ++k) {
    const int row = budget_rows_[static_cast<size_t>(k)];
    if (row >= 0) p[k] = std::abs(lp.duals[static_cast<size_t>(row)]);
  }
  return p;
}

// One per-DNN solve at target tau and prices p; with caps, each class's budget row is
// capped at what the other DNNs' plans leave of it (the primal repair), and the answer's
// LP cap is not kept (it holds for the caps only).
DnnTargetAnswer MilpSolve::solve_dnn(DecompState& st, int m, double tau,
                                     const std::vector<double>& p, const std::vector<int>* caps) {
  MilpMode q;
  q.target = tau;
  q.prices = p;
  if (caps) {
    q.caps = *caps;
    // A repair needs a plan within the caps, not the least-cost one.
    q.gap = opt_.surrogate_repair_gap;
  }
  q.zcap = st.dnn_zcap[static_cast<size_t>(m)];
  // Within the decomposition's share: a call cut short still gives a valid bound.
  const double left = st.surrogate_s - used_since(st.t0, opt_.milp);
  q.limit_s = std::clamp(left, 0.05, std::max(0.05, opt_.surrogate_call_s));
  const Solved s = solve_milp(cluster_, {dnns_[m]}, {rules_[m]}, opt_, max_partitions_, method_, q);
  st.pool[static_cast<size_t>(m)].insert(s.used_configs.begin(), s.used_configs.end());
  if (!caps && std::isfinite(s.zcap) && s.zcap > 0.0) {
    st.dnn_zcap[static_cast<size_t>(m)] = s.zcap;
  }
  DnnTargetAnswer a;
  a.cost_lower = s.cost_lower;
  a.gpus = s.gpus;
  if (s.feasible) a.plan = s.plan.dnns[0];
  a.values = s.values;
  return a;
}

// The repair's split: each DNN's physical GPUs per class in the LP relaxation, rounded
// down, the rest of each class to the largest fractions.
std::vector<std::vector<int>> MilpSolve::repair_shares(const MilpResult& lr) const {
  std::vector<std::vector<double>> frac(dnns_.size(), std::vector<double>(K_, 0.0));
  for (size_t m = 0; m < dnns_.size(); ++m) {
    for (size_t c = 0; c < configs_[m].size(); ++c) {
      for (size_t d = 0; d < configs_[m][c].parts.size(); ++d) {
        const auto& p = configs_[m][c].parts[d];
        frac[m][static_cast<size_t>(p.cls)] += lr.value(vars_[m][c].g[d]) / p.mps;
      }
    }
  }
  std::vector<std::vector<int>> shares(dnns_.size(), std::vector<int>(K_, 0));
  for (int k = 0; k < K_; ++k) {
    int left = cluster_.classes[k].count;
    std::vector<std::pair<double, size_t>> rest;
    for (size_t m = 0; m < dnns_.size(); ++m) {
      const double v = std::max(0.0, frac[m][static_cast<size_t>(k)]);
      const int f = std::min(left, static_cast<int>(std::floor(v + 1e-9)));
      shares[m][static_cast<size_t>(k)] = f;
      left -= f;
      rest.push_back({v - f, m});
    }
    std::sort(rest.rbegin(), rest.rend());
    for (const auto& [fr, m] : rest) {
      if (left <= 0) break;
      ++shares[m][static_cast<size_t>(k)];
      --left;
    }
  }
  return shares;
}

// The column pool's MILP (a restricted master): the full model with every configuration
// fixed at zero that no per-DNN plan so far nor CBC's incumbent uses, solved within
// `until` CPU seconds of the decomposition's start. Its plans are the full model's (only
// bounds differ); it combines the per-DNN plans across targets and with CBC's, which the
// repairs cannot.
void MilpSolve::pool_solve(DecompState& st, const MilpModel& model, const MilpOptions& mo,
                           double until) {
  const double left = until - used_since(st.t0, opt_.milp);
  if (left <= 0.05) return;
  const std::vector<double>& from = st.pool_best.has_solution() ? st.pool_best.values : r_.values;
  MilpModel restricted = model;
  int kept = 0;
  for (size_t m = 0; m < dnns_.size(); ++m) {
    for (size_t c = 0; c < configs_[m].size(); ++c) {
      const Vars& v = vars_[m][c];
      if (st.pool[m].count(static_cast<int>(c)) > 0 || from[static_cast<size_t>(v.x)] > kEps) {
        ++kept;
        continue;
      }
      restricted.set_bounds(v.x, 0.0, 0.0);
      if (v.u >= 0) restricted.set_bounds(v.u, 0.0, 0.0);
      for (int g : v.g) restricted.set_bounds(g, 0.0, 0.0);
    }
  }
  MilpOptions po = mo;
  po.time_limit_s = std::min(left, std::max(0.05, opt_.surrogate_call_s));
  po.start = from;
  // Within the pool the best plan is wanted, not one within the 1 % rule of the
  // restricted model's own bound.
  po.relative_gap = 1e-4;
  const MilpResult pr = solve_cbc(restricted, po);
  if (opt_.decomposition_pool_pricing && K_ >= opt_.decomposition_many_classes) {
    // The pool's LP relaxation: its budget duals price the next per-DNN plans.
    st.pool_prices = budget_prices(solve_cbc(restricted, lp_relaxation_options(opt_.milp)));
  }
  if (opt_.decomposition_trace) {
    std::fprintf(stderr, "pool MILP: %d configurations, %.2fs, %s %.3f, bound %.3f\n", kept,
                 pr.seconds, pr.has_solution() ? "found" : "none",
                 pr.has_solution() ? pr.objective : 0.0, pr.best_bound);
  }
  if (pr.has_solution() &&
      (!st.pool_best.has_solution() || pr.objective > st.pool_best.objective)) {
    st.pool_best = pr;
    for (size_t m = 0; m < dnns_.size(); ++m) {
      for (size_t c = 0; c < configs_[m].size(); ++c) {
        if (pr.value(vars_[m][c].x) > kEps) st.pool[m].insert(static_cast<int>(c));
      }
    }
  }
}

// The decomposition's PlanImprover: the column pool; with pool pricing, price-and-branch:
// each DNN's least-cost plan at the pool LP's duals serving its share of the pool's best
// plan x (1 + half the gap rule) (its configurations join the pool), then the pool again.
double MilpSolve::improve(DecompState& st, const MilpModel& model, const MilpOptions& mo) {
  pool_solve(st, model, mo, st.surrogate_s);
  const bool pool_pricing =
      opt_.decomposition_pool_pricing && K_ >= opt_.decomposition_many_classes;
  if (pool_pricing && st.pool_best.has_solution() &&
      st.pool_prices.size() == static_cast<size_t>(K_)) {
    double sum = 0.0;
    for (double p : st.pool_prices) sum += p;
    if (sum > 0.0) {
      const double goal = st.pool_best.objective * (1.0 + 0.5 * opt_.milp.relative_gap);
      const std::vector<double> p = st.pool_prices;
      for (size_t m = 0; m < dnns_.size(); ++m) {
        if (used_since(st.t0, opt_.milp) > st.surrogate_s) break;
        ++st.pricing_calls;
        const DnnTargetAnswer a =
            solve_dnn(st, static_cast<int>(m), goal * dnns_[m].weight, p, nullptr);
        if (opt_.decomposition_trace) {
          std::fprintf(stderr, "pool pricing dnn %zu at %.3f:", m, goal * dnns_[m].weight);
          for (int g : a.gpus) std::fprintf(stderr, " %d", g);
          std::fprintf(stderr, "\n");
        }
      }
      pool_solve(st, model, mo, st.surrogate_s);
    }
  }
  return st.pool_best.has_solution() ? st.pool_best.objective : 0.0;
}

// CBC's start from the decomposition's per-DNN solutions: their values under their names
// in the full model (DNN 0's "m0" becomes "m<m>"), z their objective, clamped to the full
// model's bounds; a start that breaks a row is ignored by CBC (the combined plan is output
// anyway).
std::vector<double> MilpSolve::start_from_plans(const MilpModel& model,
                                                const SurrogateResult& sr) const {
  std::map<std::string, int> index;
  for (int j = 0; j < model.num_vars(); ++j) index[model.var_name(j)] = j;
  std::vector<double> guess(static_cast<size_t>(model.num_vars()), 0.0);
  const auto& bounds_of = model.vars();
  for (size_t m = 0; m < dnns_.size(); ++m) {
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
  double zs = kInf;
  for (size_t m = 0; m < dnns_.size(); ++m) {
    double sum = 0.0;
    for (const auto& v : vars_[m]) sum += guess[static_cast<size_t>(v.x)];
    zs = std::min(zs, sum / dnns_[m].weight);
  }
  const auto& zb = bounds_of[static_cast<size_t>(z_)];
  guess[static_cast<size_t>(z_)] = std::clamp(zs, zb.lb, std::min(zb.ub, sr.bound));
  if (opt_.decomposition_trace) {
    int bad = 0;
    for (const auto& row : model.rows()) {
      double v = 0.0;
      for (const auto& t : row.terms) v += t.coef * guess[static_cast<size_t>(t.var)];
      if (v < row.lb - 1e-6 || v > row.ub + 1e-6) {
        if (++bad <= 5)
          std::fprintf(stderr, "start breaks %s: %.4f not in [%.4g, %.4g]\n", row.name.c_str(), v,
                       row.lb, row.ub);
      }
    }
    std::fprintf(stderr, "start z %.3f, %d rows broken\n", guess[static_cast<size_t>(z_)], bad);
  }
  return guess;
}

// The column pool's plan, when it beat CBC's and the combined one: feasible for the full
// model (only bounds differ); the bound stays the full model's.
void MilpSolve::adopt_pool(const DecompState& st, const SurrogateResult& sr) {
  if (!st.pool_best.has_solution() ||
      st.pool_best.objective <= std::max(r_.objective, sr.plan_objective) * (1.0 + 1e-9)) {
    return;
  }
  const double bound = r_.best_bound;
  const long nodes = r_.nodes;
  r_.values = st.pool_best.values;
  r_.objective = st.pool_best.objective;
  r_.best_bound = bound;
  r_.nodes = static_cast<int>(nodes + st.pool_best.nodes);
  pool_plan_ = st.pool_best.objective;
  decomp_start_.clear();
  decomp_plan_.clear();
}

void MilpSolve::decompose(MilpModel& model, MilpOptions& mo, double full_limit, double cbc_used) {
  // The surrogate decomposition bound (ppipe_decomp.hpp): prices from the LP relaxation's
  // budget duals (without the z cap, which would take their value), per-DNN min-cost
  // MILPs as the oracle. The bound it proves caps z in the full model.
  DecompState st;
  st.t0 = Stamp{};
  const double saved = zcap_;
  zcap_ = kInf;
  MilpModel lp_model;
  build(lp_model, false);
  zcap_ = saved;
  st.lr = solve_cbc(lp_model, lp_relaxation_options(opt_.milp));
  st.prices = budget_prices(st.lr);
  if (!st.prices.empty()) {
    std::vector<int> counts(K_, 0);
    for (int k = 0; k < K_; ++k) counts[k] = cluster_.classes[k].count;
    std::vector<double> weights;
    for (const auto& d : dnns_) weights.push_back(d.weight);
    st.dnn_zcap.assign(dnns_.size(), 0.0);  // each DNN's LP cap, from its first call
    st.budget_s = std::max(0.0, full_limit - cbc_used) * 0.9;
    // The bisection's part; the rest is for a last column-pool solve (below).
    st.surrogate_s = std::max(0.0, st.budget_s - opt_.surrogate_call_s * 0.5);
    st.pool.assign(dnns_.size(), {});
    const DnnTargetOracle oracle = [&](int m, double tau, const std::vector<double>& p) {
      return solve_dnn(st, m, tau, p, nullptr);
    };
    const DnnCappedOracle repair = [&](int m, double tau, const std::vector<double>& p,
                                       const std::vector<int>& caps) {
      return solve_dnn(st, m, tau, p, &caps);
    };
    const PlanImprover improver = [&]() { return improve(st, model, mo); };
    SurrogateOptions so;
    so.shares = repair_shares(st.lr);
    so.stop_gap = opt_.milp.relative_gap;
    so.extrapolate = 0.003;
    so.cpu_limit_s = st.surrogate_s;
    so.cpu_time_limit = opt_.milp.cpu_time_limit;
    so.deadline = opt_.milp.deadline;
    so.trace = opt_.decomposition_trace;
    const double inc = std::min(r_.objective, st.lr.objective);
    const SurrogateResult sr =
        surrogate_bound(weights, counts, st.prices, std::max(0.0, inc), st.lr.objective, so, oracle,
                        repair, opt_.decomposition_pool ? improver : PlanImprover{});
    out_.plan.solve.decomposition_bound = sr.bound;
    out_.plan.solve.decomposition_calls = sr.oracle_calls + sr.repair_calls + st.pricing_calls;
    if (opt_.decomposition_pool) {
      // The last targets' plans into the pool too, unless the rule is already met.
      const double have = std::max({r_.objective, sr.plan_objective, sr.improved});
      if (sr.bound - have > 0.9 * so.stop_gap * have) pool_solve(st, model, mo, st.budget_s);
    }
    if (sr.plan.size() == dnns_.size() && sr.plan_objective > 0.0) {
      decomp_plan_ = sr.plan;
      out_.plan.solve.decomposition_plan = sr.plan_objective;
    }
    if (sr.plan_values.size() == dnns_.size() && sr.plan_objective > r_.objective) {
      decomp_start_ = start_from_plans(model, sr);
    }
    if (sr.bound < st.lr.objective) {
      model.set_bounds(z_, 0.0, std::min(sr.bound, model.vars()[static_cast<size_t>(z_)].ub));
    }
    adopt_pool(st, sr);
  }
  const double used = used_since(st.t0, opt_.milp);
  out_.plan.solve.decomposition_seconds = used;
  mo.time_limit_s = std::max(0.1, full_limit - cbc_used - used);
  mo.start = decomp_start_.empty() ? r_.values : decomp_start_;
  const long nodes = r_.nodes;
  const MilpResult again = solve_cbc(model, mo);
  if (again.has_solution() && again.objective >= r_.objective - 1e-9) {
    r_ = again;
    r_.nodes += static_cast<int>(nodes);
  } else if (again.has_solution()) {
    // CBC rejected the start and found worse: keep the start, take the bound.
    r_.best_bound = std::min(r_.best_bound, again.best_bound);
    r_.nodes += again.nodes;
  }
}

void MilpSolve::finish_stats() {
  auto& st = out_.plan.solve;
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  st.objective = r_.has_solution() ? r_.objective : 0.0;
  st.bound = r_.best_bound;
  st.nodes = r_.nodes;
  if (!r_.has_solution()) {
    st.status =
        r_.status == MilpStatus::kInfeasible ? PlanStatus::kInfeasible : PlanStatus::kNoSolution;
    st.detail = r_.status == MilpStatus::kInfeasible ? "the MILP is infeasible"
                                                     : "CBC stopped before finding a plan";
    if (r_.limit != MilpLimit::kNone) st.limit = to_string(r_.limit);
    return;
  }
  st.gap = std::max(0.0, r_.best_bound - r_.objective) / std::max(std::abs(r_.best_bound), 1e-9);
  if (r_.status == MilpStatus::kOptimal) {
    st.status = PlanStatus::kOptimal;
  } else {
    st.status = PlanStatus::kFeasible;
    st.limit = to_string(r_.limit);
  }
}

void MilpSolve::extract() {
  for (size_t m = 0; m < dnns_.size(); ++m) {
    auto& dp = out_.plan.dnns[m];
    for (size_t c = 0; c < configs_[m].size(); ++c) {
      const auto& v = vars_[m][c];
      if (r_.value(v.x) <= kEps) continue;
      const auto& cfg = configs_[m][c];
      std::vector<int> g;
      double thr = kInf;
      for (size_t d = 0; d < cfg.parts.size(); ++d) {
        g.push_back(static_cast<int>(std::llround(r_.value(v.g[d]))));
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
        part.gpu_class = cluster_.classes[p.cls].name;
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
}

// The primal side beat CBC's incumbent: its per-DNN plans together fit every class
// (checked by the decomposition; the plan is re-checked outside like every plan).
void MilpSolve::adopt_decomposition_plan() {
  auto& st = out_.plan.solve;
  for (size_t m = 0; m < dnns_.size(); ++m) {
    auto& dp = out_.plan.dnns[m];
    dp.pipelines = decomp_plan_[m].pipelines;
    dp.throughput = decomp_plan_[m].throughput;
  }
  st.objective = st.decomposition_plan;
  st.gap = std::max(0.0, st.bound - st.objective) / std::max(std::abs(st.bound), 1e-9);
  if (st.gap <= opt_.milp.relative_gap) st.status = PlanStatus::kOptimal;
  st.detail = "the decomposition's combined per-DNN plans beat CBC's incumbent";
}

}  // namespace

PpipeOptions with_deadline(const PpipeOptions& opt) {
  PpipeOptions timed = opt;
  if (!timed.milp.deadline && !timed.milp.cpu_time_limit) {
    timed.milp.deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(opt.milp.time_limit_s));
  }
  return timed;
}

Solved solve_milp(const ppipe::PpipeCluster& cluster, const std::vector<PpipeDnn>& dnns,
                  const std::vector<ConfigRules>& rules, const PpipeOptions& opt,
                  int max_partitions, ppipe::PpipeMethod method, const MilpMode& mode) {
  const PpipeOptions timed = with_deadline(opt);
  return MilpSolve(cluster, dnns, rules, timed, max_partitions, method, mode).run();
}

}  // namespace tessera::plan
