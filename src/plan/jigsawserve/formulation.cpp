#include "plan/jigsawserve/formulation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace tessera::plan {

namespace {

// A linear expression: sum of terms plus a constant.
struct Expr {
  std::vector<LinTerm> terms;
  double constant = 0.0;
};

std::string fmt(double x) {
  std::ostringstream s;
  s.precision(4);
  s << x;
  return s.str();
}

std::string path_text(const App& app, const std::vector<TaskId>& path) {
  std::string out;
  for (TaskId t : path) out += (out.empty() ? "" : " -> ") + app.tasks[t].name;
  return out;
}

// Distinct values, sorted (ascending, or descending with `desc`), exact comparison.
std::vector<double> distinct(std::vector<double> v, bool desc) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (desc) std::reverse(v.begin(), v.end());
  return v;
}

class Builder {
 public:
  Builder(const PlanInput& input, const PlanOptions& options, const TaskGraph& graph,
          const TaskBudgets* budgets, PlanMode mode, const Relaxation& relax, Formulation& f)
      : in_(input),
        opt_(options),
        g_(graph),
        budgets_(budgets),
        mode_(mode),
        relax_(relax),
        f_(f),
        m_(f.model),
        n_(input.app.tasks.size()) {}

  void build(std::vector<Candidate> candidates) {
    m_.set_maximize(true);
    f_.accuracy_max = best_system_accuracy(in_.app, g_);
    f_.planned_demand = in_.demand_rps * (1.0 + opt_.slack);
    if (!prune_latency(std::move(candidates))) return;
    by_task_.assign(n_, {});
    for (int i = 0; i < static_cast<int>(f_.candidates.size()); ++i) {
      by_task_[f_.candidates[static_cast<size_t>(i)].task].push_back(i);
    }
    for (TaskId t = 0; t < n_; ++t) {
      if (by_task_[t].empty()) {
        return infeasible("task " + in_.app.tasks[t].name +
                          ": no instance type has a latency profile in this search space");
      }
    }
    if (!relax_.accuracy && !accuracy_reachable()) return;
    demand_bounds();
    count_vars();
    capacity_bounds();
    demand_rows();
    if (opt_.space.task_graph && !relax_.latency) latency_rows();
    if (!relax_.slices) slice_rows();
    if (!relax_.accuracy) accuracy_rows();
  }

 private:
  void infeasible(std::string reason) {
    f_.trivially_infeasible = true;
    f_.infeasible_reason = std::move(reason);
  }

  // Drops instance types that cannot meet the latency SLO on some path through their
  // task even with the fastest instances elsewhere (T), or their task's budget (not T).
  bool prune_latency(std::vector<Candidate> cands) {
    if (relax_.latency) {
      f_.candidates = std::move(cands);
      return true;
    }
    std::vector<double> lmin(n_, std::numeric_limits<double>::infinity());
    for (const auto& c : cands) lmin[c.task] = std::min(lmin[c.task], c.latency_ms);
    const double slo = in_.latency_slo_ms;
    if (opt_.space.task_graph) {
      for (size_t p = 0; p < g_.paths.size(); ++p) {
        double need = 0.0;
        for (TaskId t : g_.paths[p]) need += 2.0 * lmin[t];
        if (need > slo * (1 + 1e-12)) {
          infeasible("latency SLO (Eq. 3): path " + path_text(in_.app, g_.paths[p]) +
                     " needs at least " + fmt(need) +
                     " ms (2 x the fastest instance of each task), above the SLO of " + fmt(slo) +
                     " ms");
          return false;
        }
      }
      std::vector<double> slack(n_, std::numeric_limits<double>::infinity());
      for (const auto& path : g_.paths) {
        double need = 0.0;
        for (TaskId t : path) need += 2.0 * lmin[t];
        for (TaskId t : path) slack[t] = std::min(slack[t], slo - need + 2.0 * lmin[t]);
      }
      for (auto& c : cands) {
        if (2.0 * c.latency_ms <= slack[c.task] * (1 + 1e-12)) f_.candidates.push_back(c);
      }
      return true;
    }
    for (TaskId t = 0; t < n_; ++t) {
      if (2.0 * lmin[t] > budgets_->latency_ms[t] * (1 + 1e-12)) {
        infeasible("task-wise latency budget (Appendix B): task " + in_.app.tasks[t].name +
                   " needs at least " + fmt(2.0 * lmin[t]) + " ms (2 x its fastest instance), " +
                   "above its budget of " + fmt(budgets_->latency_ms[t]) + " ms");
        return false;
      }
    }
    for (auto& c : cands) {
      if (2.0 * c.latency_ms <= budgets_->latency_ms[c.task] * (1 + 1e-12)) {
        f_.candidates.push_back(c);
      }
    }
    return true;
  }

  const Candidate& cand(int i) const { return f_.candidates[static_cast<size_t>(i)]; }
  double accuracy_of(const Candidate& c) const {
    return in_.app.tasks[c.task].variants[static_cast<size_t>(c.variant)].accuracy;
  }

  // Accuracy bounds of the variants left per task; fails if even the best left are below
  // the accuracy SLO.
  bool accuracy_reachable() {
    a_min_.assign(n_, 1.0);
    a_max_.assign(n_, 0.0);
    for (const auto& c : f_.candidates) {
      a_min_[c.task] = std::min(a_min_[c.task], accuracy_of(c));
      a_max_[c.task] = std::max(a_max_[c.task], accuracy_of(c));
    }
    const double best = system_accuracy(g_, a_max_);
    const double need = in_.accuracy_slo * f_.accuracy_max;
    if (best < need * (1 - 1e-12)) {
      infeasible(
          "accuracy SLO (Eq. 13): the most accurate variants within the latency limits "
          "reach " +
          fmt(best / f_.accuracy_max) + " of the best accuracy, below the SLO of " +
          fmt(in_.accuracy_slo));
      return false;
    }
    return true;
  }

  void demand_bounds() {
    r_ub_.assign(n_, 0.0);
    double root = f_.planned_demand;
    if (mode_ == PlanMode::kMaxDemand) {
      root = std::numeric_limits<double>::infinity();
      for (TaskId r : in_.app.roots) {
        double per_slice = 0.0;
        for (int i : by_task_[r]) {
          per_slice = std::max(per_slice, cand(i).throughput_rps / cand(i).cost);
        }
        root = std::min(root, per_slice * in_.slices);
      }
      root = std::max(root * 1.0001, 1e-6);
    }
    for (TaskId t : g_.order) {
      if (g_.in[t].empty()) r_ub_[t] = root;
      for (int e : g_.out[t]) {
        const auto& ge = g_.edges[static_cast<size_t>(e)];
        double fmax = 0.0;
        for (int i : by_task_[t])
          fmax = std::max(fmax, ge.factor[static_cast<size_t>(cand(i).variant)]);
        r_ub_[ge.to] += r_ub_[t] * fmax;
      }
    }
    demand_.assign(n_, Expr{});
    if (mode_ == PlanMode::kMaxDemand) {
      f_.demand_var = m_.add_var("R", 0.0, root, VarType::kContinuous, 1.0);
    }
    for (TaskId t : g_.order) {
      if (g_.in[t].empty()) {
        demand_[t] = mode_ == PlanMode::kMaxDemand ? Expr{{{f_.demand_var, 1.0}}, 0.0}
                                                   : Expr{{}, f_.planned_demand};
      } else {
        const int v =
            m_.add_var("Rhat[" + in_.app.tasks[t].name + "]", 0.0, r_ub_[t], VarType::kContinuous);
        demand_[t] = Expr{{{v, 1.0}}, 0.0};
      }
    }
  }

  void count_vars() {
    const bool serve = mode_ == PlanMode::kServeDemand;
    for (int i = 0; i < static_cast<int>(f_.candidates.size()); ++i) {
      const auto& c = cand(i);
      // No optimal plan (and, for feasibility, no plan that cannot be made smaller) runs
      // more instances of one type than its task's demand needs: removing the least
      // accurate active instance while capacity still covers demand never lowers the task's
      // throughput-weighted accuracy and saves slices (docs/plan.md#bounds).
      double ub = std::ceil(r_ub_[c.task] / c.throughput_rps * (1.0 + 1e-9));
      if (!relax_.slices) ub = std::min(ub, std::floor(in_.slices / static_cast<double>(c.cost)));
      std::ostringstream name;
      name << "M[" << in_.app.tasks[c.task].name << "," << c.variant << "," << c.segment << ","
           << c.batch << "]";
      f_.count_var.push_back(
          m_.add_var(name.str(), 0.0, ub, VarType::kInteger, serve ? -opt_.beta * c.cost : 0.0));
    }
  }

  // Per task an upper bound on the capacity sum M * H of an optimal plan (the count-bound
  // argument: below Rhat_max + max H), and a lower bound on its demand.
  void capacity_bounds() {
    cap_ub_.assign(n_, 0.0);
    for (TaskId t = 0; t < n_; ++t) {
      double cap = 0.0, per_slice = 0.0, h_max = 0.0;
      for (int i : by_task_[t]) {
        cap += ub_of(i) * cand(i).throughput_rps;
        per_slice = std::max(per_slice, cand(i).throughput_rps / cand(i).cost);
        h_max = std::max(h_max, cand(i).throughput_rps);
      }
      if (!relax_.slices) cap = std::min(cap, per_slice * in_.slices);
      cap_ub_[t] = std::min(cap, r_ub_[t] + h_max);
    }
    r_lb_.assign(n_, 0.0);
    for (TaskId t : g_.order) {
      if (g_.in[t].empty()) r_lb_[t] = mode_ == PlanMode::kMaxDemand ? 0.0 : f_.planned_demand;
      for (int e : g_.out[t]) {
        const auto& ge = g_.edges[static_cast<size_t>(e)];
        double fmin = std::numeric_limits<double>::infinity();
        for (int i : by_task_[t])
          fmin = std::min(fmin, ge.factor[static_cast<size_t>(cand(i).variant)]);
        r_lb_[ge.to] += r_lb_[t] * fmin;
      }
    }
  }

  double ub_of(int i) const {
    return m_.vars()[static_cast<size_t>(f_.count_var[static_cast<size_t>(i)])].ub;
  }

  // Eqs. 4-6: capacity covers demand; demand propagates with the largest factor among the
  // parent's active variants (exact: binary "factor level" z and w = Rhat * z by big-M).
  void demand_rows() {
    factor_levels_.assign(g_.edges.size(), {});
    factor_vars_.assign(g_.edges.size(), {});
    for (TaskId t = 0; t < n_; ++t) {
      std::vector<LinTerm> row;
      for (int i : by_task_[t])
        row.push_back({f_.count_var[static_cast<size_t>(i)], cand(i).throughput_rps});
      for (const auto& term : demand_[t].terms) row.push_back({term.var, -term.coef});
      m_.add_row("capacity[" + in_.app.tasks[t].name + "]", row, demand_[t].constant,
                 MilpModel::kInf);
      std::vector<LinTerm> some;  // every task runs at least one instance
      for (int i : by_task_[t]) some.push_back({f_.count_var[static_cast<size_t>(i)], 1.0});
      m_.add_row("instances[" + in_.app.tasks[t].name + "]", some, 1.0, MilpModel::kInf);
    }
    for (size_t e = 0; e < g_.edges.size(); ++e) {
      const auto& ge = g_.edges[e];
      const TaskId p = ge.from;
      std::vector<double> fs;
      for (int i : by_task_[p]) fs.push_back(ge.factor[static_cast<size_t>(cand(i).variant)]);
      const auto levels = distinct(fs, false);  // ascending F_0 < F_1 < ...
      const std::string name = in_.app.tasks[p].name + "->" + in_.app.tasks[ge.to].name;
      std::vector<LinTerm> row;  // Rhat[child] - contribution >= 0
      for (const auto& term : demand_[ge.to].terms) row.push_back(term);
      double rhs = -demand_[ge.to].constant;
      // Fhat = F_0 + sum_k (F_k - F_{k-1}) y_k, y_k = 1 when an active variant has F >= F_k
      // (cumulative binaries); Fhat * Rhat[parent] = F_0 Rhat + sum_k dF_k (y_k Rhat), and
      // y_k Rhat is w_k >= Rhat - Rub (1 - y_k), exact in the >= direction that matters.
      for (const auto& term : demand_[p].terms) row.push_back({term.var, -levels[0] * term.coef});
      rhs += levels[0] * demand_[p].constant;
      std::vector<int> y;
      for (size_t k = 1; k < levels.size(); ++k) {
        y.push_back(
            m_.add_var("y[" + name + "," + std::to_string(k) + "]", 0, 1, VarType::kBinary));
        if (k > 1) {
          m_.add_row("factor_order[" + name + "]", {{y[k - 1], 1.0}, {y[k - 2], -1.0}},
                     -MilpModel::kInf, 0.0);
        }
        const double df = levels[k] - levels[k - 1];
        if (demand_[p].terms.empty()) {
          row.push_back({y.back(), -df * demand_[p].constant});
          continue;
        }
        const double big = r_ub_[p];
        const int w =
            m_.add_var("w[" + name + "," + std::to_string(k) + "]", 0.0, big, VarType::kContinuous);
        std::vector<LinTerm> lin{{w, 1.0}, {y.back(), -big}};
        for (const auto& term : demand_[p].terms) lin.push_back({term.var, -term.coef});
        m_.add_row("demand_product[" + name + "]", lin, demand_[p].constant - big, MilpModel::kInf);
        row.push_back({w, -df});
      }
      factor_levels_[e] = levels;
      factor_vars_[e] = y;
      for (int i : by_task_[p]) {
        const double fi = ge.factor[static_cast<size_t>(cand(i).variant)];
        const auto k = static_cast<size_t>(std::lower_bound(levels.begin(), levels.end(), fi) -
                                           levels.begin());
        if (k == 0) continue;
        m_.add_row("factor_active[" + name + "]",
                   {{f_.count_var[static_cast<size_t>(i)], 1.0}, {y[k - 1], -ub_of(i)}},
                   -MilpModel::kInf, 0.0);
      }
      m_.add_row("demand[" + name + "]", row, rhs, MilpModel::kInf);
    }
  }

  // Eqs. 2-3: Lhat(t) = the largest latency among active instance types, as a choice of
  // one latency level per task (exact); per path sum 2 * Lhat <= SLO_l.
  void latency_rows() {
    latency_levels_.assign(n_, {});
    latency_vars_.assign(n_, {});
    std::vector<Expr> lhat(n_);
    for (TaskId t = 0; t < n_; ++t) {
      std::vector<double> ls;
      for (int i : by_task_[t]) ls.push_back(cand(i).latency_ms);
      const auto levels = distinct(ls, false);
      if (levels.size() == 1) {
        lhat[t].constant = levels[0];
        continue;
      }
      // Lhat = l_0 + sum_k (l_k - l_{k-1}) r_k with cumulative binaries r_k ("Lhat >= l_k");
      // an instance type of latency l_j may be used only if r_j = 1.
      lhat[t].constant = levels[0];
      std::vector<int> r;
      for (size_t k = 1; k < levels.size(); ++k) {
        r.push_back(m_.add_var("lat[" + in_.app.tasks[t].name + "," + std::to_string(k) + "]", 0, 1,
                               VarType::kBinary));
        if (k > 1) {
          m_.add_row("latency_order[" + in_.app.tasks[t].name + "]",
                     {{r[k - 1], 1.0}, {r[k - 2], -1.0}}, -MilpModel::kInf, 0.0);
        }
        lhat[t].terms.push_back({r.back(), levels[k] - levels[k - 1]});
      }
      latency_levels_[t] = levels;
      latency_vars_[t] = r;
      for (int i : by_task_[t]) {
        const double li = cand(i).latency_ms;
        const auto k = static_cast<size_t>(std::lower_bound(levels.begin(), levels.end(), li) -
                                           levels.begin());
        if (k == 0) continue;
        m_.add_row("latency_active[" + in_.app.tasks[t].name + "]",
                   {{f_.count_var[static_cast<size_t>(i)], 1.0}, {r[k - 1], -ub_of(i)}},
                   -MilpModel::kInf, 0.0);
      }
    }
    for (size_t p = 0; p < g_.paths.size(); ++p) {
      std::vector<LinTerm> row;
      double constant = 0.0;
      for (TaskId t : g_.paths[p]) {
        for (const auto& term : lhat[t].terms) row.push_back({term.var, 2.0 * term.coef});
        constant += 2.0 * lhat[t].constant;
      }
      if (row.empty()) continue;  // already checked when pruning
      m_.add_row("latency_slo[" + path_text(in_.app, g_.paths[p]) + "]", row, -MilpModel::kInf,
                 in_.latency_slo_ms - constant);
    }
  }

  // Eqs. 7-8, the task-wise slice budgets (not T), and MIG packability (docs/plan.md).
  void slice_rows() {
    std::vector<LinTerm> all;
    for (int i = 0; i < static_cast<int>(f_.candidates.size()); ++i) {
      all.push_back({f_.count_var[static_cast<size_t>(i)], static_cast<double>(cand(i).cost)});
    }
    m_.add_row("slices", all, -MilpModel::kInf, in_.slices);
    // The slices in use, in total and per task, as integer variables: nothing new for the
    // model (they are sums of integers), but CBC branches on them, which settles "can it be
    // done with one slice less" far faster than branching on single instance counts.
    auto used = all;
    used.push_back({m_.add_var("slices_used", 0.0, in_.slices, VarType::kInteger), -1.0});
    m_.add_row("slices_used", used, 0.0, 0.0);
    for (TaskId t = 0; t < n_; ++t) {
      std::vector<LinTerm> row;
      for (int i : by_task_[t]) {
        row.push_back({f_.count_var[static_cast<size_t>(i)], static_cast<double>(cand(i).cost)});
      }
      const std::string tn = in_.app.tasks[t].name;
      row.push_back(
          {m_.add_var("slices_used[" + tn + "]", 0.0, in_.slices, VarType::kInteger), -1.0});
      m_.add_row("slices_used[" + tn + "]", row, 0.0, 0.0);
    }
    if (!opt_.space.task_graph) {
      for (TaskId t = 0; t < n_; ++t) {
        std::vector<LinTerm> row;
        for (int i : by_task_[t]) {
          row.push_back({f_.count_var[static_cast<size_t>(i)], static_cast<double>(cand(i).cost)});
        }
        m_.add_row("task_slices[" + in_.app.tasks[t].name + "]", row, -MilpModel::kInf,
                   budgets_->slices[t]);
      }
    }
    if (!opt_.packing_constraints || !packing_rows_apply(in_.catalogue)) return;
    const auto& cat = in_.catalogue;
    const double gpus = std::floor(in_.slices / 7.0);
    std::vector<LinTerm> big, pairs;
    for (int i = 0; i < static_cast<int>(f_.candidates.size()); ++i) {
      const int v = f_.count_var[static_cast<size_t>(i)];
      const auto& seg = cat.segments[static_cast<size_t>(cand(i).segment)];
      const int cost = cat.mig[static_cast<size_t>(seg.mig)].cost;
      if (cost == 7) {
        big.push_back({v, 1.0});
        pairs.push_back({v, 3.0});
      } else if (cost == 4) {
        big.push_back({v, 1.0});
        pairs.push_back({v, 2.0});
      } else if (cost == 2) {
        pairs.push_back({v, 1.0});
      }
    }
    m_.add_row("gpus", all, -MilpModel::kInf, 7.0 * gpus);
    if (!big.empty()) m_.add_row("gpus_large_mig", big, -MilpModel::kInf, gpus);
    if (!pairs.empty()) m_.add_row("gpus_pair_mig", pairs, -MilpModel::kInf, 3.0 * gpus);
  }

  // Valid inequalities (docs/plan.md#tightening): they cut off no plan that satisfies the
  // count and capacity bounds, only fractional points of the LP relaxation.

  // q = 1 (task accuracy >= lam) needs the instances of accuracy >= lam to carry enough of
  // the demand. With C = P + L >= Rhat the capacity split into the part P of accuracy >= lam
  // and the rest L, whose accuracy is at most a_lo (the best variant below lam), Eq. 10 at
  // level lam gives sum_{A >= lam} H (A - a_lo) M >= (lam - a_lo) Rhat.
  void accuracy_share(TaskId t, double lam, int q) {
    const std::string tn = in_.app.tasks[t].name;
    double a_lo = a_min_[t];
    for (int i : by_task_[t]) {
      const double a = accuracy_of(cand(i));
      if (a < lam) a_lo = std::max(a_lo, a);
    }
    const double d = lam - a_lo;
    std::vector<LinTerm> hi;
    for (int i : by_task_[t]) {
      const double a = accuracy_of(cand(i));
      if (a >= lam) {
        hi.push_back({f_.count_var[static_cast<size_t>(i)], cand(i).throughput_rps * (a - a_lo)});
      }
    }
    if (demand_[t].terms.empty()) {  // constant demand: ... >= d Rhat q
      auto row = hi;
      row.push_back({q, -d * demand_[t].constant});
      m_.add_row("accuracy_share[" + tn + "]", row, 0.0, MilpModel::kInf);
      return;
    }
    auto row = hi;  // ... >= d (Rhat - Rhat_max (1 - q))
    for (const auto& term : demand_[t].terms) row.push_back({term.var, -d * term.coef});
    row.push_back({q, -d * r_ub_[t]});
    m_.add_row("accuracy_share[" + tn + "]", row, -d * r_ub_[t], MilpModel::kInf);
    if (r_lb_[t] > 0.0) {  // ... >= d Rhat_min q
      hi.push_back({q, -d * r_lb_[t]});
      m_.add_row("accuracy_share[" + tn + "]", hi, 0.0, MilpModel::kInf);
    }
  }

  // McCormick rows for a_t * C <= sum H A M (a_t the task's accuracy level, C its capacity):
  // (a_t - a_min)(C - Rhat_min) >= 0 and (a_max - a_t)(C_max - C) >= 0.
  void accuracy_mix(TaskId t, const std::vector<double>& levels, const std::vector<int>& q) {
    const std::string tn = in_.app.tasks[t].name;
    std::vector<LinTerm> low, high;
    for (int i : by_task_[t]) {
      const int v = f_.count_var[static_cast<size_t>(i)];
      low.push_back({v, cand(i).throughput_rps * (accuracy_of(cand(i)) - a_min_[t])});
      high.push_back({v, cand(i).throughput_rps * (a_max_[t] - accuracy_of(cand(i)))});
    }
    double prev = a_min_[t];
    for (size_t k = 0; k < levels.size(); ++k) {
      const double delta = levels[k] - prev;
      prev = levels[k];
      low.push_back({q[k], -r_lb_[t] * delta});
      high.push_back({q[k], cap_ub_[t] * delta});
    }
    if (r_lb_[t] > 0.0) m_.add_row("accuracy_mix[" + tn + "]", low, 0.0, MilpModel::kInf);
    m_.add_row("accuracy_mix[" + tn + "]", high, -MilpModel::kInf,
               cap_ub_[t] * (a_max_[t] - a_min_[t]));
  }

  // q = 1 needs an active variant of accuracy >= lam, hence (Eqs. 2 and 4) a latency level
  // and a factor level at least the smallest among those variants' instance types.
  void implications(TaskId t, double lam, int q) {
    const std::string tn = in_.app.tasks[t].name;
    for (int e : g_.out[t]) {
      const auto& ge = g_.edges[static_cast<size_t>(e)];
      const auto& levels = factor_levels_[static_cast<size_t>(e)];
      if (levels.size() < 2) continue;
      double fmin = std::numeric_limits<double>::infinity();
      for (int i : by_task_[t]) {
        if (accuracy_of(cand(i)) >= lam)
          fmin = std::min(fmin, ge.factor[static_cast<size_t>(cand(i).variant)]);
      }
      const auto k = static_cast<size_t>(std::lower_bound(levels.begin(), levels.end(), fmin) -
                                         levels.begin());
      if (k == 0 || k >= levels.size()) continue;
      m_.add_row("accuracy_factor[" + tn + "]",
                 {{q, 1.0}, {factor_vars_[static_cast<size_t>(e)][k - 1], -1.0}}, -MilpModel::kInf,
                 0.0);
    }
    if (t < latency_levels_.size() && latency_levels_[t].size() >= 2) {
      const auto& levels = latency_levels_[t];
      double lmin = std::numeric_limits<double>::infinity();
      for (int i : by_task_[t]) {
        if (accuracy_of(cand(i)) >= lam) lmin = std::min(lmin, cand(i).latency_ms);
      }
      const auto k = static_cast<size_t>(std::lower_bound(levels.begin(), levels.end(), lmin) -
                                         levels.begin());
      if (k > 0 && k < levels.size())
        m_.add_row("accuracy_latency[" + tn + "]", {{q, 1.0}, {latency_vars_[t][k - 1], -1.0}},
                   -MilpModel::kInf, 0.0);
    }
  }

  // Eqs. 10-13 (docs/plan.md#accuracy): per task a cumulative accuracy level
  // a_t = lambda_0 + sum_k (lambda_k - lambda_{k-1}) q_k, with q_k = 1 only if the
  // throughput-weighted accuracy reaches lambda_k (exact linear row for a fixed level);
  // the path-product sum is S(t) <= a_t * sum w S(c), linearised exactly in the <= direction
  // because each a_t is a combination of binaries.
  void accuracy_rows() {
    const auto lb = accuracy_lower_bounds(in_, g_, a_min_, a_max_);
    std::vector<int> s_var(n_, -1);
    std::vector<double> s_ub(n_, 0.0);
    for (auto it = g_.order.rbegin(); it != g_.order.rend(); ++it) {
      const TaskId t = *it;
      const std::string tn = in_.app.tasks[t].name;
      Expr gexpr;
      double g_ub = 0.0;
      if (g_.out[t].empty()) {
        gexpr.constant = 1.0;
        g_ub = 1.0;
      }
      for (int e : g_.out[t]) {
        const auto& ge = g_.edges[static_cast<size_t>(e)];
        gexpr.terms.push_back({s_var[ge.to], ge.weight});
        g_ub += ge.weight * s_ub[ge.to];
      }
      s_ub[t] = a_max_[t] * g_ub;
      s_var[t] = m_.add_var("S[" + tn + "]", 0.0, s_ub[t], VarType::kContinuous);
      std::vector<LinTerm> row{{s_var[t], 1.0}};
      if (a_max_[t] <= a_min_[t]) {  // one accuracy: a_t is a constant
        for (const auto& term : gexpr.terms) row.push_back({term.var, -a_max_[t] * term.coef});
        m_.add_row("accuracy_path[" + tn + "]", row, -MilpModel::kInf, a_max_[t] * gexpr.constant);
        continue;
      }
      // Levels: lambda_0 = a_min; then a geometric grid from max(lb, a_min) to a_max with
      // the tolerance as ratio, plus every variant's own accuracy in that range.
      std::vector<double> lv;
      const double start = std::max(lb[t], a_min_[t]);
      for (double x = start; x < a_max_[t]; x *= 1.0 + opt_.accuracy_tolerance) lv.push_back(x);
      lv.push_back(a_max_[t]);
      for (int i : by_task_[t]) {
        const double a = accuracy_of(cand(i));
        if (a >= start) lv.push_back(a);
      }
      auto levels = distinct(lv, false);
      levels.erase(
          std::remove_if(levels.begin(), levels.end(), [&](double x) { return x <= a_min_[t]; }),
          levels.end());
      const double cap_ub = cap_ub_[t];  // the count-bound argument (capacity_bounds)
      std::vector<int> q;
      double prev = a_min_[t];
      for (size_t k = 0; k < levels.size(); ++k) {
        const double lam = levels[k];
        q.push_back(
            m_.add_var("acc[" + tn + "," + std::to_string(k) + "]", 0, 1, VarType::kBinary));
        if (k > 0) {
          m_.add_row("acc_order[" + tn + "]", {{q[k], 1.0}, {q[k - 1], -1.0}}, -MilpModel::kInf,
                     0.0);
        }
        const double big = (lam - a_min_[t]) * cap_ub;
        std::vector<LinTerm> lvl;
        for (int i : by_task_[t]) {
          lvl.push_back({f_.count_var[static_cast<size_t>(i)],
                         cand(i).throughput_rps * (accuracy_of(cand(i)) - lam)});
        }
        lvl.push_back({q[k], -big});
        m_.add_row("task_accuracy[" + tn + "]", lvl, -big, MilpModel::kInf);
        accuracy_share(t, lam, q[k]);
        implications(t, lam, q[k]);
        const double delta = lam - prev;
        prev = lam;
        if (gexpr.terms.empty()) {
          row.push_back({q[k], -delta * gexpr.constant});
        } else {
          const int h = m_.add_var("h[" + tn + "," + std::to_string(k) + "]", 0.0, g_ub,
                                   VarType::kContinuous);
          std::vector<LinTerm> hg{{h, 1.0}};
          for (const auto& term : gexpr.terms) hg.push_back({term.var, -term.coef});
          m_.add_row("acc_product[" + tn + "]", hg, -MilpModel::kInf, 0.0);
          m_.add_row("acc_product[" + tn + "]", {{h, 1.0}, {q[k], -g_ub}}, -MilpModel::kInf, 0.0);
          row.push_back({h, -delta});
        }
      }
      accuracy_mix(t, levels, q);
      for (const auto& term : gexpr.terms) row.push_back({term.var, -a_min_[t] * term.coef});
      m_.add_row("accuracy_path[" + tn + "]", row, -MilpModel::kInf, a_min_[t] * gexpr.constant);
    }
    std::vector<LinTerm> sys;
    for (TaskId t = 0; t < n_; ++t) {
      if (g_.root_weight[t] > 0.0) sys.push_back({s_var[t], g_.root_weight[t]});
    }
    m_.add_row("accuracy_slo", sys, in_.accuracy_slo * f_.accuracy_max, MilpModel::kInf);
    if (mode_ == PlanMode::kServeDemand) {
      for (const auto& term : sys) {
        m_.set_objective(term.var, opt_.alpha * term.coef / f_.accuracy_max);
      }
    }
  }

  const PlanInput& in_;
  const PlanOptions& opt_;
  const TaskGraph& g_;
  const TaskBudgets* budgets_;
  PlanMode mode_;
  Relaxation relax_;
  Formulation& f_;
  MilpModel& m_;
  size_t n_;
  std::vector<std::vector<int>> by_task_;
  std::vector<double> a_min_, a_max_, r_ub_, r_lb_, cap_ub_;
  std::vector<std::vector<double>> factor_levels_, latency_levels_;
  std::vector<std::vector<int>> factor_vars_, latency_vars_;
  std::vector<Expr> demand_;
};

}  // namespace

std::vector<double> accuracy_lower_bounds(const PlanInput& input, const TaskGraph& graph,
                                          const std::vector<double>& a_min,
                                          const std::vector<double>& a_max) {
  const double need = input.accuracy_slo * best_system_accuracy(input.app, graph);
  std::vector<double> lb(a_max.size(), 0.0);
  for (size_t t = 0; t < a_max.size(); ++t) {
    auto a = a_max;
    a[t] = 0.0;
    const double c0 = system_accuracy(graph, a);
    a[t] = 1.0;
    const double c1 = system_accuracy(graph, a) - c0;
    lb[t] = c1 > 0.0 ? std::clamp((need - c0) / c1, a_min[t], a_max[t]) : a_min[t];
  }
  return lb;
}

Formulation build_formulation(const PlanInput& input, const PlanOptions& options,
                              const TaskGraph& graph, std::vector<Candidate> candidates,
                              const TaskBudgets* budgets, PlanMode mode, const Relaxation& relax) {
  Formulation f;
  Builder(input, options, graph, budgets, mode, relax, f).build(std::move(candidates));
  return f;
}

}  // namespace tessera::plan
