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
double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The arguments' checks: std::invalid_argument for what surrogate_bound cannot use.
void check_surrogate_inputs(const std::vector<double>& weights, const std::vector<int>& counts,
                            const std::vector<double>& prices, double incumbent, double upper,
                            const SurrogateOptions& options) {
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
  if (options.shares.empty()) return;
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

void trace_gpus(const std::vector<int>& gpus) {
  for (int g : gpus) std::fprintf(stderr, " %d", g);
  std::fprintf(stderr, "\n");
}

// One run of the bound's search (surrogate_bound): the prices, the targets tested, the
// per-DNN answers of the last test and the best plan found.
class SurrogateSearch {
 public:
  SurrogateSearch(const std::vector<double>& weights, const std::vector<int>& counts,
                  const std::vector<double>& initial_prices, double incumbent, double upper,
                  const SurrogateOptions& options, const DnnTargetOracle& oracle,
                  const DnnCappedOracle& repair, const PlanImprover& improve)
      : weights_(weights),
        counts_(counts),
        prices_(initial_prices),
        incumbent_(incumbent),
        upper_(upper),
        options_(options),
        oracle_(oracle),
        repair_(repair),
        improve_(improve),
        lo_(incumbent),
        start_(now()) {
    out_.bound = upper;
  }

  SurrogateResult run();

 private:
  double budget() const {
    double b = 0.0;
    for (size_t k = 0; k < counts_.size(); ++k) b += prices_[k] * counts_[k];
    return b;
  }
  // Seconds in the limit's clock (cpu_time_limit: CPU, else wall).
  double now() const { return options_.cpu_time_limit ? cpu_now() : wall_now(); }
  bool out_of_time() const {
    if (options_.deadline && std::chrono::steady_clock::now() >= *options_.deadline) return true;
    return now() - start_ > options_.cpu_limit_s;
  }
  double best() const { return std::max({incumbent_, out_.plan_objective, out_.improved}); }
  bool met() const {
    const double have = best();
    return have > 0.0 && out_.bound - have <= options_.stop_gap * have * (1.0 - 1e-9);
  }
  bool test(double t);
  bool tally();
  void repair_greedily(double t);
  void repair_from_shares(double t);
  bool repaired(size_t m, double t, const std::vector<int>& caps, const char* what);
  void keep_plan();
  bool infeasible(double t);

  const std::vector<double>& weights_;
  const std::vector<int>& counts_;
  std::vector<double> prices_;
  const double incumbent_;
  const double upper_;
  const SurrogateOptions& options_;
  const DnnTargetOracle& oracle_;
  const DnnCappedOracle& repair_;
  const PlanImprover& improve_;
  SurrogateResult out_;
  double lo_;  // not proven infeasible
  const double start_;
  // The last test: the found plans' GPUs per class (empty when some DNN found none), the
  // sum of least costs, and each DNN's answer.
  std::vector<long> used_;
  double last_sum_ = 0.0;
  std::vector<DnnTargetAnswer> answers_;
};

// Whether the answers' plans fit every class together (`used_`: their GPUs per class).
bool SurrogateSearch::tally() {
  used_.assign(counts_.size(), 0);
  for (const auto& a : answers_) {
    if (a.gpus.size() != counts_.size()) {
      used_.clear();
      return false;
    }
    for (size_t k = 0; k < counts_.size(); ++k) used_[k] += a.gpus[k];
  }
  bool fit = true;
  for (size_t k = 0; k < counts_.size(); ++k) fit = fit && used_[k] <= counts_[k];
  return fit;
}

// DNN m re-solved within `caps`; true (and its answer replaced) when it found a plan there.
bool SurrogateSearch::repaired(size_t m, double t, const std::vector<int>& caps, const char* what) {
  ++out_.repair_calls;
  DnnTargetAnswer a = repair_(static_cast<int>(m), t * weights_[m], prices_, caps);
  bool ok = a.gpus.size() == counts_.size() && a.plan.throughput > 0.0;
  for (size_t k = 0; ok && k < counts_.size(); ++k) ok = a.gpus[k] <= caps[k];
  if (options_.trace) {
    std::fprintf(stderr, "surrogate %.2fs t=%.3f %s dnn %zu:%s", now() - start_, t, what, m,
                 ok ? "" : " none");
    trace_gpus(a.gpus);
  }
  if (ok) answers_[m] = std::move(a);
  return ok;
}

// The primal repair: each DNN whose plan does not fit beside the others' is re-solved with
// what they leave of every class.
void SurrogateSearch::repair_greedily(double t) {
  bool complete = false;
  for (int pass = 0; !complete && !used_.empty() && repair_ && pass < options_.repair_passes;
       ++pass) {
    for (size_t m = 0; m < answers_.size() && !complete && !used_.empty(); ++m) {
      std::vector<int> caps(counts_.size(), 0);
      bool over = false;
      for (size_t k = 0; k < counts_.size(); ++k) {
        const long others = used_[k] - answers_[m].gpus[k];
        caps[k] = static_cast<int>(std::max(0L, counts_[k] - others));
        over = over || answers_[m].gpus[k] > caps[k];
      }
      if (!over) continue;
      if (repaired(m, t, caps, "repair")) complete = tally();
      if (out_of_time()) break;
    }
  }
}

// The repair from the caller's split: every DNN holds its share (or, once checked, its
// plan's GPUs); a DNN whose plan does not fit beside the others' holdings is re-solved
// there. The holdings never exceed a class's count, so success is a plan that fits.
void SurrogateSearch::repair_from_shares(double t) {
  std::vector<std::vector<int>> hold = options_.shares;
  bool ok = true;
  for (size_t m = 0; m < answers_.size() && ok; ++m) {
    std::vector<int> caps(counts_.size(), 0);
    bool fits = true;
    for (size_t k = 0; k < counts_.size(); ++k) {
      long others = 0;
      for (size_t j = 0; j < hold.size(); ++j) others += j == m ? 0 : hold[j][k];
      caps[k] = static_cast<int>(std::max(0L, counts_[k] - others));
      fits = fits && answers_[m].gpus[k] <= caps[k];
    }
    if (!fits) ok = repaired(m, t, caps, "share repair");
    if (ok) hold[m] = answers_[m].gpus;
    if (out_of_time()) break;
  }
}

// The answers, when they fit together and beat the best plan so far, become it.
void SurrogateSearch::keep_plan() {
  double z = std::numeric_limits<double>::infinity();
  for (size_t m = 0; m < answers_.size(); ++m) {
    z = std::min(z, answers_[m].plan.throughput / weights_[m]);
  }
  if (!(z > out_.plan_objective)) return;
  out_.plan_objective = z;
  out_.plan.clear();
  out_.plan_values.clear();
  for (auto& a : answers_) {
    out_.plan.push_back(std::move(a.plan));
    out_.plan_values.push_back(std::move(a.values));
  }
}

// Tests t once with the current prices: true when the DNNs' least costs exceed the budget
// (t proven infeasible), false when not, with in `used_` the found plans' GPUs per class
// (empty when some DNN found none).
bool SurrogateSearch::test(double t) {
  ++out_.tests;
  used_.clear();
  answers_.clear();
  const double b = budget();
  double sum = 0.0;
  for (size_t m = 0; m < weights_.size(); ++m) {
    ++out_.oracle_calls;
    DnnTargetAnswer a = oracle_(static_cast<int>(m), t * weights_[m], prices_);
    const double c = std::isnan(a.cost_lower) ? 0.0 : std::max(0.0, a.cost_lower);
    sum += c;
    if (options_.trace) {
      std::fprintf(stderr, "surrogate %.2fs t=%.3f dnn %zu: cost >= %.4f (sum %.4f of %.4f)",
                   now() - start_, t, m, c, sum, b);
      trace_gpus(a.gpus);
    }
    if (sum > b * (1.0 + 1e-9) + 1e-9) return true;
    answers_.push_back(std::move(a));
  }
  last_sum_ = sum;
  // Not proven: do the plans found fit every class? Then they are a plan reaching t.
  bool complete = tally();
  if (!complete && !used_.empty() && repair_) {
    repair_greedily(t);
    complete = tally();
  }
  if (!complete && !used_.empty() && repair_ && !options_.shares.empty()) {
    repair_from_shares(t);
    complete = tally();
  }
  if (complete) keep_plan();
  return false;
}

// Proves t infeasible, re-pricing up to price_rounds times when the per-DNN plans over-use
// some class: a subgradient step on the prices (the found plans' GPUs minus the counts,
// Polyak's step length for twice the missing cost), projected onto p >= 0. Any prices >= 0
// give a valid test, so this only changes how strong it is.
bool SurrogateSearch::infeasible(double t) {
  double deficit = std::numeric_limits<double>::infinity();  // budget - sum, relative
  // A failed re-pricing keeps the prices that came closest (a step can widen the shortfall
  // many times over, and every later target would be tested with them).
  std::vector<double> kept_prices = prices_;
  double kept_sum = 0.0;
  double kept_deficit = std::numeric_limits<double>::infinity();
  const auto give_up = [&] {
    if (std::isfinite(kept_deficit)) {
      prices_ = kept_prices;
      last_sum_ = kept_sum;
    }
    return false;
  };
  for (int round = 0;; ++round) {
    if (test(t)) return true;
    const double now = (budget() - last_sum_) / std::max(budget(), 1e-300);
    if (now < kept_deficit) {
      kept_deficit = now;
      kept_prices = prices_;
      kept_sum = last_sum_;
    }
    if (round >= options_.price_rounds || used_.empty()) return give_up();
    // Re-price only near the threshold, and only while it helps: far from it (or when the
    // last step widened the shortfall) the time is better spent on another target.
    if (now > options_.reprice_within || now >= deficit) return give_up();
    deficit = now;
    bool over = false;
    double norm = 0.0;
    for (size_t k = 0; k < counts_.size(); ++k) {
      over = over || used_[k] > counts_[k];
      const double d = static_cast<double>(used_[k] - counts_[k]);
      norm += d * d;
    }
    if (!over || norm <= 0.0) return give_up();  // the plans fit: t is reached
    const double step = 2.0 * std::max(budget() - last_sum_, 1e-9 * budget()) / norm;
    for (size_t k = 0; k < counts_.size(); ++k) {
      prices_[k] = std::max(0.0, prices_[k] + step * static_cast<double>(used_[k] - counts_[k]));
    }
    if (options_.trace) {
      std::fprintf(stderr, "surrogate re-priced:");
      for (double p : prices_) std::fprintf(stderr, " %.4f", p);
      std::fprintf(stderr, "\n");
    }
    if (out_of_time()) return give_up();
  }
}

// First the target that would meet the stopping rule with a margin (incumbent x (1 + 0.8
// stop_gap)); after a target not proven, extrapolation; after a proof, the target the best
// plan needs; else bisection for the best bound the time allows.
SurrogateResult SurrogateSearch::run() {
  double t = std::min(upper_, std::max(incumbent_, 1e-9) * (1.0 + 0.8 * options_.stop_gap));
  for (int i = 0; i < options_.max_tests && !met(); ++i) {
    if (!(t > lo_) || !(t < out_.bound)) break;
    // After a target not proven, the next one is where the least costs, growing in
    // proportion to the target, would pass the budget (with a margin): the bound's likely
    // proof. After a proof, and when that is out of range, bisection.
    double next = 0.0;
    if (infeasible(t)) {
      out_.bound = t;
    } else {
      lo_ = std::max(t, out_.plan_objective);
      if (options_.extrapolate > 0.0 && last_sum_ > 0.0) {
        next = t * budget() / last_sum_ * (1.0 + options_.extrapolate);
      }
    }
    if (improve_ && !met() && !out_of_time()) {
      const double z = improve_();
      if (std::isfinite(z) && z > out_.improved) out_.improved = std::min(z, out_.bound);
      if (options_.trace) std::fprintf(stderr, "surrogate improved plan %.3f\n", out_.improved);
      lo_ = std::max(lo_, out_.improved);
    }
    if (met() || out_of_time()) break;
    // After a proof: the target whose proof would meet the stopping rule with the best plan
    // (the highest such, the easiest to prove).
    if (next == 0.0 && best() > 0.0) next = best() * (1.0 + options_.stop_gap) * (1.0 - 1e-6);
    t = next > lo_ && next < out_.bound ? next : 0.5 * (lo_ + out_.bound);
    if ((out_.bound - lo_) <= 1e-4 * out_.bound) break;
  }
  return std::move(out_);
}

}  // namespace

SurrogateResult surrogate_bound(const std::vector<double>& weights, const std::vector<int>& counts,
                                const std::vector<double>& initial_prices, double incumbent,
                                double upper, const SurrogateOptions& options,
                                const DnnTargetOracle& oracle, const DnnCappedOracle& repair,
                                const PlanImprover& improve) {
  check_surrogate_inputs(weights, counts, initial_prices, incumbent, upper, options);
  return SurrogateSearch(weights, counts, initial_prices, incumbent, upper, options, oracle, repair,
                         improve)
      .run();
}

}  // namespace tessera::plan
