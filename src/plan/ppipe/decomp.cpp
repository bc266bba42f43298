#include "plan/ppipe/decomp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <stdexcept>
#include <string>

namespace tessera::plan {

namespace {

double cpu_now() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

}  // namespace

SurrogateResult surrogate_bound(const std::vector<double>& weights, const std::vector<int>& counts,
                                const std::vector<double>& initial_prices, double incumbent,
                                double upper, const SurrogateOptions& options,
                                const DnnTargetOracle& oracle, const DnnCappedOracle& repair,
                                const PlanImprover& improve) {
  std::vector<double> prices = initial_prices;
  if (weights.empty()) throw std::invalid_argument("surrogate bound: no DNNs");
  if (prices.size() != counts.size()) {
    throw std::invalid_argument("surrogate bound: " + std::to_string(prices.size()) +
                                " prices for " + std::to_string(counts.size()) + " GPU classes");
  }
  for (double w : weights) {
    if (!(w > 0.0) || !std::isfinite(w)) {
      throw std::invalid_argument("surrogate bound: a DNN weight is not positive");
    }
  }
  for (double p : prices) {
    if (!(p >= 0.0) || !std::isfinite(p)) {
      throw std::invalid_argument("surrogate bound: a price is negative or not finite");
    }
  }
  for (int n : counts) {
    if (n < 0) throw std::invalid_argument("surrogate bound: a negative GPU count");
  }
  if (!std::isfinite(upper) || !std::isfinite(incumbent) || incumbent < 0.0 ||
      incumbent > upper * (1.0 + 1e-9) + 1e-9) {
    throw std::invalid_argument("surrogate bound: incumbent " + std::to_string(incumbent) +
                                " not in [0, upper bound " + std::to_string(upper) + "]");
  }
  if (!options.shares.empty()) {
    if (options.shares.size() != weights.size()) {
      throw std::invalid_argument("surrogate bound: shares for " +
                                  std::to_string(options.shares.size()) + " DNNs, not " +
                                  std::to_string(weights.size()));
    }
    std::vector<long> total(counts.size(), 0);
    for (const auto& row : options.shares) {
      if (row.size() != counts.size()) {
        throw std::invalid_argument("surrogate bound: a DNN's shares do not name every class");
      }
      for (size_t k = 0; k < counts.size(); ++k) {
        if (row[k] < 0) throw std::invalid_argument("surrogate bound: a negative share");
        total[k] += row[k];
      }
    }
    for (size_t k = 0; k < counts.size(); ++k) {
      if (total[k] > counts[k]) {
        throw std::invalid_argument("surrogate bound: the shares of class " + std::to_string(k) +
                                    " exceed its count");
      }
    }
  }
  auto budget_of = [&] {
    double b = 0.0;
    for (size_t k = 0; k < counts.size(); ++k) b += prices[k] * counts[k];
    return b;
  };

  SurrogateResult out;
  out.bound = upper;
  double lo = incumbent;  // not proven infeasible
  const double start = cpu_now();
  // Tests t once with the current prices: 1 when the DNNs' least costs exceed the budget
  // (t proven infeasible), 0 when not, and in `used` the found plans' GPUs per class (empty
  // when some DNN found none).
  std::vector<long> used;
  double last_sum = 0.0;  // the last test's sum of least costs
  auto test = [&](double t) {
    ++out.tests;
    used.clear();
    const double budget = budget_of();
    double sum = 0.0;
    std::vector<DnnTargetAnswer> answers;
    for (size_t m = 0; m < weights.size(); ++m) {
      ++out.oracle_calls;
      DnnTargetAnswer a = oracle(static_cast<int>(m), t * weights[m], prices);
      const double c = std::isnan(a.cost_lower) ? 0.0 : std::max(0.0, a.cost_lower);
      sum += c;
      if (options.trace) {
        std::fprintf(stderr, "surrogate %.2fs t=%.3f dnn %zu: cost >= %.4f (sum %.4f of %.4f)",
                     cpu_now() - start, t, m, c, sum, budget);
        for (int g : a.gpus) std::fprintf(stderr, " %d", g);
        std::fprintf(stderr, "\n");
      }
      if (sum > budget * (1.0 + 1e-9) + 1e-9) return true;
      answers.push_back(std::move(a));
    }
    last_sum = sum;
    // Not proven: do the plans found fit every class? Then they are a plan reaching t.
    const auto tally = [&] {
      used.assign(counts.size(), 0);
      for (const auto& a : answers) {
        if (a.gpus.size() != counts.size()) {
          used.clear();
          return false;
        }
        for (size_t k = 0; k < counts.size(); ++k) used[k] += a.gpus[k];
      }
      bool fit = true;
      for (size_t k = 0; k < counts.size(); ++k) fit = fit && used[k] <= counts[k];
      return fit;
    };
    bool complete = tally();
    // The primal repair: each DNN whose plan does not fit beside the others' is re-solved
    // with what they leave of every class.
    for (int pass = 0; !complete && !used.empty() && repair && pass < options.repair_passes;
         ++pass) {
      for (size_t m = 0; m < answers.size() && !complete && !used.empty(); ++m) {
        std::vector<int> caps(counts.size(), 0);
        bool over = false;
        for (size_t k = 0; k < counts.size(); ++k) {
          const long others = used[k] - answers[m].gpus[k];
          caps[k] = static_cast<int>(std::max(0L, counts[k] - others));
          over = over || answers[m].gpus[k] > caps[k];
        }
        if (!over) continue;
        ++out.repair_calls;
        DnnTargetAnswer a = repair(static_cast<int>(m), t * weights[m], prices, caps);
        bool ok = a.gpus.size() == counts.size() && a.plan.throughput > 0.0;
        for (size_t k = 0; ok && k < counts.size(); ++k) ok = a.gpus[k] <= caps[k];
        if (options.trace) {
          std::fprintf(stderr, "surrogate %.2fs t=%.3f repair dnn %zu:%s", cpu_now() - start, t, m,
                       ok ? "" : " none");
          for (int g : a.gpus) std::fprintf(stderr, " %d", g);
          std::fprintf(stderr, "\n");
        }
        if (ok) {
          answers[m] = std::move(a);
          complete = tally();
        }
        if (cpu_now() - start > options.cpu_limit_s) break;
      }
    }
    // The repair from the caller's split: every DNN holds its share (or, once checked, its
    // plan's GPUs); a DNN whose plan does not fit beside the others' holdings is re-solved
    // there. The holdings never exceed a class's count, so success is a plan that fits.
    if (!complete && !used.empty() && repair && !options.shares.empty()) {
      std::vector<std::vector<int>> hold = options.shares;
      bool ok = true;
      for (size_t m = 0; m < answers.size() && ok; ++m) {
        std::vector<int> caps(counts.size(), 0);
        bool fits = true;
        for (size_t k = 0; k < counts.size(); ++k) {
          long others = 0;
          for (size_t j = 0; j < hold.size(); ++j) others += j == m ? 0 : hold[j][k];
          caps[k] = static_cast<int>(std::max(0L, counts[k] - others));
          fits = fits && answers[m].gpus[k] <= caps[k];
        }
        if (!fits) {
          ++out.repair_calls;
          DnnTargetAnswer a = repair(static_cast<int>(m), t * weights[m], prices, caps);
          ok = a.gpus.size() == counts.size() && a.plan.throughput > 0.0;
          for (size_t k = 0; ok && k < counts.size(); ++k) ok = a.gpus[k] <= caps[k];
          if (options.trace) {
            std::fprintf(stderr, "surrogate %.2fs t=%.3f share repair dnn %zu:%s",
                         cpu_now() - start, t, m, ok ? "" : " none");
            for (int g : a.gpus) std::fprintf(stderr, " %d", g);
            std::fprintf(stderr, "\n");
          }
          if (ok) answers[m] = std::move(a);
        }
        if (ok) hold[m] = answers[m].gpus;
        if (cpu_now() - start > options.cpu_limit_s) break;
      }
      complete = tally();
    }
    double z = std::numeric_limits<double>::infinity();
    for (size_t m = 0; m < answers.size(); ++m) {
      z = std::min(z, answers[m].plan.throughput / weights[m]);
    }
    if (complete && z > out.plan_objective) {
      out.plan_objective = z;
      out.plan.clear();
      out.plan_values.clear();
      for (auto& a : answers) {
        out.plan.push_back(std::move(a.plan));
        out.plan_values.push_back(std::move(a.values));
      }
    }
    return false;
  };
  // Proves t infeasible, re-pricing up to price_rounds times when the per-DNN plans over-use
  // some class: a subgradient step on the prices (the found plans' GPUs minus the counts,
  // Polyak's step length for twice the missing cost), projected onto p >= 0. Any prices >= 0
  // give a valid test, so this only changes how strong it is.
  auto infeasible = [&](double t) {
    double deficit = std::numeric_limits<double>::infinity();  // budget - sum, relative
    // A failed re-pricing keeps the prices that came closest (a step can widen the
    // shortfall many times over, and every later target would be tested with them).
    std::vector<double> kept_prices = prices;
    double kept_sum = 0.0;
    double kept_deficit = std::numeric_limits<double>::infinity();
    const auto give_up = [&] {
      if (std::isfinite(kept_deficit)) {
        prices = kept_prices;
        last_sum = kept_sum;
      }
      return false;
    };
    for (int round = 0;; ++round) {
      if (test(t)) return true;
      const double now = (budget_of() - last_sum) / std::max(budget_of(), 1e-300);
      if (now < kept_deficit) {
        kept_deficit = now;
        kept_prices = prices;
        kept_sum = last_sum;
      }
      if (round >= options.price_rounds || used.empty()) return give_up();
      // Re-price only near the threshold, and only while it helps: far from it (or when the
      // last step widened the shortfall) the time is better spent on another target.
      if (now > options.reprice_within || now >= deficit) return give_up();
      deficit = now;
      bool over = false;
      double norm = 0.0;
      for (size_t k = 0; k < counts.size(); ++k) {
        over = over || used[k] > counts[k];
        const double d = static_cast<double>(used[k] - counts[k]);
        norm += d * d;
      }
      if (!over || norm <= 0.0) return give_up();  // the plans fit: t is reached
      const double step = 2.0 * std::max(budget_of() - last_sum, 1e-9 * budget_of()) / norm;
      for (size_t k = 0; k < counts.size(); ++k) {
        prices[k] = std::max(0.0, prices[k] + step * static_cast<double>(used[k] - counts[k]));
      }
      if (options.trace) {
        std::fprintf(stderr, "surrogate re-priced:");
        for (double p : prices) std::fprintf(stderr, " %.4f", p);
        std::fprintf(stderr, "\n");
      }
      if (cpu_now() - start > options.cpu_limit_s) return give_up();
    }
  };
  // First the target that would meet the stopping rule with a margin (incumbent x (1 + 0.8
  // stop_gap)); after a target not proven, extrapolation; after a proof, the target the
  // best plan needs; else bisection for the best bound the time allows.
  const auto best = [&] { return std::max({incumbent, out.plan_objective, out.improved}); };
  const auto met = [&] {
    const double have = best();
    return have > 0.0 && out.bound - have <= options.stop_gap * have * (1.0 - 1e-9);
  };
  double t = std::min(upper, std::max(incumbent, 1e-9) * (1.0 + 0.8 * options.stop_gap));
  for (int i = 0; i < options.max_tests && !met(); ++i) {
    if (!(t > lo) || !(t < out.bound)) break;
    // After a target not proven, the next one is where the least costs, growing in
    // proportion to the target, would pass the budget (with a margin): the bound's likely
    // proof. After a proof, and when that is out of range, bisection.
    double next = 0.0;
    if (infeasible(t)) {
      out.bound = t;
    } else {
      lo = std::max(t, out.plan_objective);
      if (options.extrapolate > 0.0 && last_sum > 0.0) {
        next = t * budget_of() / last_sum * (1.0 + options.extrapolate);
      }
    }
    if (improve && !met() && cpu_now() - start <= options.cpu_limit_s) {
      const double z = improve();
      if (std::isfinite(z) && z > out.improved) out.improved = std::min(z, out.bound);
      if (options.trace) std::fprintf(stderr, "surrogate improved plan %.3f\n", out.improved);
      lo = std::max(lo, out.improved);
    }
    if (met() || cpu_now() - start > options.cpu_limit_s) break;
    // After a proof: the target whose proof would meet the stopping rule with the best plan
    // (the highest such, the easiest to prove).
    if (next == 0.0 && best() > 0.0) next = best() * (1.0 + options.stop_gap) * (1.0 - 1e-6);
    t = next > lo && next < out.bound ? next : 0.5 * (lo + out.bound);
    if ((out.bound - lo) <= 1e-4 * out.bound) break;
  }
  return out;
}

}  // namespace tessera::plan
