#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/min_max_heap.hpp"
#include "policy/pard/batch_wait.hpp"
#include "policy/pard/state_planner.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"

namespace tessera {
namespace {

using testing::add_affine;
using testing::chain;
using testing::uniform_deployment;

// ---- min-max heap -------------------------------------------------------------------

TEST(MinMaxHeap, PopMinAndPopMaxMatchAReferenceMultiset) {
  MinMaxHeap<int, std::less<int>> heap;
  std::multiset<int> ref;
  std::mt19937_64 rng(3);
  for (int step = 0; step < 20000; ++step) {
    const auto op = rng() % 3;
    if (op == 0 || ref.empty()) {
      const int v = static_cast<int>(rng() % 1000);
      heap.push(v);
      ref.insert(v);
    } else if (op == 1) {
      ASSERT_EQ(heap.min(), *ref.begin());
      EXPECT_EQ(heap.pop_min(), *ref.begin());
      ref.erase(ref.begin());
    } else {
      ASSERT_EQ(heap.max(), *ref.rbegin());
      EXPECT_EQ(heap.pop_max(), *ref.rbegin());
      ref.erase(std::prev(ref.end()));
    }
    ASSERT_EQ(heap.size(), ref.size());
  }
}

TEST(MinMaxHeap, SmallSizes) {
  MinMaxHeap<int, std::less<int>> heap;
  heap.push(5);
  EXPECT_EQ(heap.min(), 5);
  EXPECT_EQ(heap.max(), 5);
  heap.push(2);
  EXPECT_EQ(heap.min(), 2);
  EXPECT_EQ(heap.max(), 5);
  heap.push(9);
  EXPECT_EQ(heap.pop_max(), 9);
  EXPECT_EQ(heap.pop_max(), 5);
  EXPECT_EQ(heap.pop_min(), 2);
  EXPECT_TRUE(heap.empty());
}

// ---- batch-wait quantile ------------------------------------------------------------

TEST(BatchWaitQuantile, IrwinHallQuantilesAtLambdaTenPercent) {
  // The 10 % quantile of a sum of n independent U(0, d) (digest §2.3).
  const double expected[] = {0.100, 0.447, 0.844, 1.249};
  const Time d = 0.050;
  std::mt19937_64 rng(11);
  std::vector<Time> scratch;
  for (int n = 1; n <= 4; ++n) {
    const std::vector<Time> cycles(static_cast<std::size_t>(n), d);
    const Time w = batch_wait_quantile(cycles, 0.1, 10000, rng, scratch);
    EXPECT_NEAR(w / d, expected[n - 1], 0.02 * expected[n - 1]) << "n = " << n;
  }
}

TEST(BatchWaitQuantile, Bounds) {
  std::mt19937_64 rng(1);
  std::vector<Time> scratch;
  const std::vector<Time> cycles = {0.01, 0.02, 0.03};
  EXPECT_EQ(batch_wait_quantile(cycles, 0.0, 10000, rng, scratch), 0.0);
  EXPECT_DOUBLE_EQ(batch_wait_quantile(cycles, 1.0, 10000, rng, scratch), 0.06);
  EXPECT_EQ(batch_wait_quantile({}, 0.1, 10000, rng, scratch), 0.0);
}

// ---- adaptive priority ----------------------------------------------------------------

TEST(Hysteresis, NoSwitchInsideTheBand) {
  const auto lbf = PriorityMode::kLowBudgetFirst;
  const auto hbf = PriorityMode::kHighBudgetFirst;
  const double eps = 0.2;
  for (double mu : {0.8, 0.9, 1.0, 1.1, 1.2}) {
    EXPECT_EQ(StatePlanner::next_mode(lbf, mu, eps, true), lbf) << mu;
    EXPECT_EQ(StatePlanner::next_mode(hbf, mu, eps, true), hbf) << mu;
  }
  EXPECT_EQ(StatePlanner::next_mode(lbf, 1.21, eps, true), hbf);
  EXPECT_EQ(StatePlanner::next_mode(hbf, 0.79, eps, true), lbf);
  // PARD-instant: no band at all.
  EXPECT_EQ(StatePlanner::next_mode(lbf, 1.01, eps, false), hbf);
  EXPECT_EQ(StatePlanner::next_mode(hbf, 1.0, eps, false), lbf);
}

// ---- scenarios ------------------------------------------------------------------------

// Arrivals with their own SLOs (to give requests different remaining budgets).
class SloSource final : public ArrivalSource {
 public:
  explicit SloSource(std::vector<std::pair<Time, Time>> arrivals) : a_(std::move(arrivals)) {}
  bool next(Arrival& out) override {
    if (i_ >= a_.size()) return false;
    out = Arrival{};
    out.time = a_[i_].first;
    out.slo_s = a_[i_].second;
    ++i_;
    return true;
  }
  std::string describe() const override { return "slo list"; }

 private:
  std::vector<std::pair<Time, Time>> a_;
  std::size_t i_ = 0;
};

struct Outcomes {
  uint64_t ok, late, dropped;
};

Outcomes run_one_stage(const PolicyConfig& config, std::vector<std::pair<Time, Time>> arrivals) {
  App app = chain(1, 10.0);
  ProfileTable p;
  add_affine(p, "t0", 100.0, 0.0, 4);  // 100 ms at any batch size up to 4
  Simulator sim(app, uniform_deployment(app, 1, 4), p, PolicySet(config), {});
  SloSource source(std::move(arrivals));
  sim.run(source);
  const auto& m = sim.metrics();
  return {m.count(Outcome::kOk), m.count(Outcome::kLate), m.count(Outcome::kDropped)};
}

// The timeline both scenarios share: R0 runs [0, 100 ms]; four fillers join the forming
// batch and run [100, 200 ms]; everything after that waits in the queue and is chosen
// from when the next forming batch opens at 100 ms.
std::vector<std::pair<Time, Time>> busy_worker() {
  return {{0.000, 10.0}, {0.001, 10.0}, {0.002, 10.0}, {0.003, 10.0}, {0.004, 10.0}};
}

// PARD Figure 3a: under a burst only half the backlog fits the next batch. FIFO serves
// the oldest half, which has spent its budget waiting, and misses; HBF serves the
// newest half, which still makes it.
TEST(PardScenarios, Figure3aHighBudgetFirstUnderABurst) {
  auto arrivals = busy_worker();
  for (int i = 0; i < 4; ++i) arrivals.push_back({0.005 + 0.001 * i, 0.280});  // due ~0.29 s
  for (int i = 0; i < 4; ++i) arrivals.push_back({0.009 + 0.001 * i, 0.330});  // due ~0.34 s
  // The next batch runs [200, 300 ms], the one after [300, 400 ms]: whichever half runs
  // second is late, so only the new half can be saved, and only if it runs first.
  PolicyConfig fifo;
  PolicyConfig hbf;
  hbf.queue = "hbf";
  const Outcomes f = run_one_stage(fifo, arrivals);
  const Outcomes h = run_one_stage(hbf, arrivals);
  EXPECT_EQ(f.ok, 5u);       // R0 and the fillers; the whole burst is late
  EXPECT_EQ(h.ok, 5u + 4u);  // the new half on time at 300 ms
  EXPECT_GT(h.ok, f.ok);

  // With PARD's broker the doomed old half is dropped instead of run late.
  PolicyConfig pard_hbf = preset_config("pard-hbf");
  const Outcomes p = run_one_stage(pard_hbf, arrivals);
  EXPECT_EQ(p.ok, 9u);
  EXPECT_EQ(p.late, 0u);
  EXPECT_EQ(p.dropped, 4u);
}

// PARD Figure 7: at steady load one slot is left in the forming batch and two requests
// wait. R4 arrived later at this module but has less budget left; LBF takes R4 and both
// meet their deadlines, FIFO takes R5 and R4 misses.
TEST(PardScenarios, Figure7LowBudgetFirstAtSteadyLoad) {
  auto arrivals = busy_worker();
  arrivals.push_back({0.005, 10.0});   // A1
  arrivals.push_back({0.006, 10.0});   // A2
  arrivals.push_back({0.007, 10.0});   // A3
  arrivals.push_back({0.008, 1.000});  // R5: plenty of budget
  arrivals.push_back({0.009, 0.300});  // R4: arrives later, due at 0.309 s
  PolicyConfig fifo;
  PolicyConfig lbf;
  lbf.queue = "lbf";
  const Outcomes f = run_one_stage(fifo, arrivals);
  const Outcomes l = run_one_stage(lbf, arrivals);
  EXPECT_EQ(f.late, 1u);  // R4 runs [300, 400 ms]
  EXPECT_EQ(l.late, 0u);  // R4 runs [200, 300 ms]; R5 at 400 ms is still inside 1.008 s
  EXPECT_EQ(l.ok, 10u);
}

// ---- the State Planner on a running pipeline ------------------------------------------

TEST(StatePlanner, DownstreamEstimateAtLowLoadIsServicePlusBatchWaitQuantile) {
  App app = chain(3, 1.0);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 1);
  add_affine(p, "t1", 20.0, 0.0, 1);
  add_affine(p, "t2", 30.0, 0.0, 1);
  PolicyConfig config = preset_config("pard");
  config.pard.lambda = 0.5;
  PolicySet policies(config);
  // Drive a real engine so the planner sees arrivals and batches; one request at a time.
  Simulator sim(app, uniform_deployment(app, 1, 1), p, policies, {});
  testing::VectorSource source(testing::evenly(50, 0.5));
  sim.run(source);
  EXPECT_EQ(sim.metrics().count(Outcome::kOk), 50u);

  StatePlanner planner(app, config.pard, 7);
  planner.sync(sim.engine(), 0.0);
  // No queueing observed: L_sub(t0) = d1 + d2 + median of U(0,d1)+U(0,d2) = 50 + 25 ms.
  EXPECT_NEAR(planner.downstream_latency(0), 0.075, 0.002);
  EXPECT_NEAR(planner.downstream_latency(1), 0.030 + 0.015, 0.001);
  EXPECT_EQ(planner.downstream_latency(2), 0.0);
  ASSERT_EQ(planner.downstream_paths(0).size(), 1u);
  EXPECT_EQ(planner.downstream_paths(0)[0], (std::vector<TaskId>{1, 2}));
}

TEST(StatePlanner, LoadFactorSwitchesToHighBudgetFirstUnderOverload) {
  App app = chain(1, 1.0);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 1);  // capacity 100 req/s
  PolicySet policies(preset_config("pard"));
  StatePlanner planner(app, PardSettings{}, 1);
  Simulator sim(app, uniform_deployment(app, 1, 1), p, policies, {});
  planner.sync(sim.engine(), 0.0);
  for (int i = 0; i < 300; ++i) planner.on_arrival(0, 0.5);  // 300 req/s for one period
  planner.sync(sim.engine(), 1.0);
  EXPECT_NEAR(planner.load_factor(0), 3.0, 1e-9);
  EXPECT_EQ(planner.mode(0), PriorityMode::kHighBudgetFirst);
  for (int step = 2; step < 12; ++step) {
    for (int i = 0; i < 20; ++i) planner.on_arrival(0, step - 0.5);  // 20 req/s
    planner.sync(sim.engine(), step);
  }
  EXPECT_EQ(planner.mode(0), PriorityMode::kLowBudgetFirst);
}

// Every preset keeps the accounting invariant on an overloaded DAG with a join.
class PresetAccounting : public ::testing::TestWithParam<std::string> {};

TEST_P(PresetAccounting, EveryRequestEndsExactlyOnce) {
  using testing::make_edge;
  using testing::make_task;
  using testing::share_edge;
  App app;
  app.slo = 0.15;
  app.tasks = {make_task("det", 2.0, 0.9, FanoutDistribution::kPoisson), make_task("cars"),
               make_task("faces"), make_task("merge")};
  app.edges = {share_edge(0, 1, 0.7), share_edge(0, 2, 0.3), make_edge(1, 3), make_edge(2, 3)};
  app.finalize();
  ProfileTable p;
  for (auto n : {"det", "cars", "faces", "merge"}) add_affine(p, n, 5.0, 2.0);
  SimOptions options;
  options.noise_cv = 0.2;
  Simulator sim(app, uniform_deployment(app, 2, 8), p, PolicySet(preset_config(GetParam())),
                options);
  std::vector<Time> times = testing::evenly(4000, 0.0005);  // ~2x overload, then quiet
  testing::VectorSource source(times);
  sim.run(source);
  const auto& m = sim.metrics();
  EXPECT_EQ(m.count(Outcome::kOk) + m.count(Outcome::kLate) + m.count(Outcome::kDropped) +
                m.count(Outcome::kFailed),
            4000u);
  EXPECT_EQ(sim.engine().requests_in_flight(), 0u);
  if (GetParam() != "naive") {
    EXPECT_GT(m.count(Outcome::kDropped), 0u);
  }
}

// SuperServe's presets too: a task-wide EDF queue served by idle workers, on the same DAG
// (clipper+ needs a variant every task hosts, so it is covered in superserve_test).
INSTANTIATE_TEST_SUITE_P(SuperServePresets, PresetAccounting,
                         ::testing::Values("slackfit", "maxbatch", "maxacc", "infaas"));

INSTANTIATE_TEST_SUITE_P(AllPresets, PresetAccounting, ::testing::ValuesIn(policy_presets()),
                         [](const auto& test_info) {
                           std::string name = test_info.param;
                           for (char& c : name) {
                             if (c == '-' || c == '+') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace tessera
