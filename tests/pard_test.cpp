#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/min_max_heap.hpp"
#include "experiments/comparison.hpp"
#include "policy/pard/batch_wait.hpp"
#include "policy/pard/state_planner.hpp"
#include "policy/presets.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

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
  hbf.queue = QueueKind::kHbf;
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
  lbf.queue = QueueKind::kLbf;
  const Outcomes f = run_one_stage(fifo, arrivals);
  const Outcomes l = run_one_stage(lbf, arrivals);
  EXPECT_EQ(f.late, 1u);  // R4 runs [300, 400 ms]
  EXPECT_EQ(l.late, 0u);  // R4 runs [200, 300 ms]; R5 at 400 ms is still inside 1.008 s
  EXPECT_EQ(l.ok, 10u);
}

// ---- the paper's baselines (PARD §5.1) --------------------------------------------------

// One item due 150 ms after it arrives at a worker busy until 100 ms (100 ms batches):
// by the time its batch would start it has spent 100 ms of its 150 ms budget, so it has
// not yet exceeded it, but running it ends at 200 ms.
TEST(PaperBaselines, ClipperIsReactiveItsPredictiveVariantIsNot) {
  std::vector<std::pair<Time, Time>> arrivals = {{0.000, 10.0}, {0.000, 0.150}};
  const Outcomes reactive = run_one_stage(preset_config("clipper++"), arrivals);
  const Outcomes predictive = run_one_stage(preset_config("clipper++-predictive"), arrivals);
  // One worker, batch 4, R0 starts alone at 0; the second joins the forming batch.
  EXPECT_EQ(reactive.dropped, 0u);
  EXPECT_EQ(reactive.late, 1u);  // kept: it had not exceeded its budget before inference
  EXPECT_EQ(predictive.dropped, 1u);
  EXPECT_EQ(predictive.late, 0u);
}

// Nexus checks a window of b_k requests, so a lone request is checked against the time of
// a full batch: with d(1) = 20 ms and d(4) = 80 ms and a 50 ms SLO it is dropped, while
// the predictive split (d at the batch's own size) keeps it and it finishes on time.
TEST(PaperBaselines, NexusChecksTheWholeWindow) {
  App app = chain(1, 0.050);
  ProfileTable p;
  add_affine(p, "t0", 0.0, 20.0, 4);
  for (const auto& [preset, ok, dropped] :
       {std::tuple{"nexus", 0u, 1u}, std::tuple{"clipper++-predictive", 1u, 0u}}) {
    Simulator sim(app, uniform_deployment(app, 1, 4), p, PolicySet(preset_config(preset)), {});
    testing::VectorSource source({0.0});
    sim.run(source);
    EXPECT_EQ(sim.metrics().count(Outcome::kOk), ok) << preset;
    EXPECT_EQ(sim.metrics().count(Outcome::kDropped), dropped) << preset;
  }
}

// ---- issue 11: a forming batch runs at its final size ----------------------------------

// One stage whose batch time grows with its size (d(b) = 10 + 5·b ms, batch 4), no noise,
// no hops: Eq. 3b's estimate is exact at the last stage only if it uses the time of the
// batch as it will run. With the time at the batch's size when an item joined, items
// joining a half-empty forming batch were admitted and then ran late.
TEST(FormingBatch, AdmittedRequestsNeverFinishLateAtTheLastStage) {
  App app = chain(1, 0.045);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 5.0, 4);  // 15 ms alone, 30 ms at 4: capacity 133 req/s
  for (const char* preset : {"pard", "nexus-e2e", "pard-fcfs"}) {
    Simulator sim(app, uniform_deployment(app, 1, 4), p, PolicySet(preset_config(preset)), {});
    Bounded source(std::make_unique<PoissonSource>(100.0, 7), 60.0, std::nullopt);
    sim.run(source);
    const auto& m = sim.metrics();
    EXPECT_GT(m.count(Outcome::kOk), 4000u) << preset;
    EXPECT_EQ(m.count(Outcome::kLate), 0u) << preset;
  }
}

// ---- issue 11: a congested downstream task under HBF -----------------------------------

struct CongestedRun {
  uint64_t ok = 0, late = 0, dropped = 0, dropped_first = 0;
  uint64_t max_last_queue = 0;  // the last stage's queue, sampled at window ends
};

// Two stages, 4 workers each (d = 10 + 2.5·b ms, batch 4: 200 req/s per worker), Poisson
// at 600 req/s; at 5 s three of the four second-stage workers are lost, so it can serve
// only a third of the load for the remaining 15 s.
CongestedRun run_congested(const PolicyConfig& config) {
  App app = chain(2, 0.200);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 2.5, 4);
  add_affine(p, "t1", 10.0, 2.5, 4);
  SimOptions options;
  options.worker_losses = {{5.0, 5}, {5.0, 6}, {5.0, 7}};  // workers 4..7 serve t1
  Simulator sim(app, uniform_deployment(app, 4, 4), p, PolicySet(config), options);
  Bounded source(std::make_unique<PoissonSource>(600.0, 3), 20.0, std::nullopt);
  sim.run(source);
  const auto& m = sim.metrics();
  CongestedRun r{m.count(Outcome::kOk), m.count(Outcome::kLate), m.count(Outcome::kDropped),
                 m.tasks()[0].dropped, 0};
  for (const auto& w : m.windows())
    r.max_last_queue = std::max(r.max_last_queue, w.queue_length[1]);
  return r;
}

TEST(CongestedDownstream, PardPurgesTheHopelessAndTheBacklogVariantDropsEarly) {
  const CongestedRun purged = run_congested(preset_config("pard"));
  const CongestedRun unpurged = run_congested(preset_config("pard-no-purge"));
  const CongestedRun backlog = run_congested(preset_config("pard-backlog-q"));
  // Without the purge the hopeless requests pile up at the least-budget end of the last
  // stage's queue under HBF, and the first stage never sees it: every drop is at the end.
  EXPECT_GT(unpurged.max_last_queue, 2000u);
  EXPECT_EQ(unpurged.dropped_first, 0u);
  // The purge keeps that queue to what can still make it, at no cost in goodput (the
  // last stage's capacity bounds it: 600 req/s for 5 s, then 200 req/s for 15 s).
  EXPECT_LT(purged.max_last_queue, 150u);
  EXPECT_GE(purged.ok, unpurged.ok);
  EXPECT_GT(purged.ok, 5800u);
  EXPECT_EQ(purged.late, 0u);
  // Counting the backlog in q_i makes the congestion visible upstream: most drops move to
  // the first stage (before any GPU time is spent downstream).
  EXPECT_GT(backlog.dropped_first * 2, backlog.dropped);
  EXPECT_EQ(backlog.late, 0u);
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

// Issue 11: L_sub covers the hops and, at a join, the wait for the slower sibling branch.
// a -> {b (10 ms), c (50 ms)} -> d (20 ms), 1-ms edges, no queueing, λ = 0.5.
TEST(StatePlanner, DownstreamEstimateIncludesHopsAndTheJoinWait) {
  using testing::make_edge;
  using testing::make_task;
  App app;
  app.slo = 1.0;
  app.tasks = {make_task("a"), make_task("b"), make_task("c"), make_task("d")};
  app.edges = {make_edge(0, 1, 0.001), make_edge(0, 2, 0.001), make_edge(1, 3, 0.001),
               make_edge(2, 3, 0.001)};
  app.finalize();
  ProfileTable p;
  add_affine(p, "a", 10.0, 0.0, 1);
  add_affine(p, "b", 10.0, 0.0, 1);
  add_affine(p, "c", 50.0, 0.0, 1);
  add_affine(p, "d", 20.0, 0.0, 1);
  PolicyConfig config = preset_config("pard");
  config.pard.lambda = 0.5;
  Simulator sim(app, uniform_deployment(app, 1, 1), p, PolicySet(config), {});
  testing::VectorSource source(testing::evenly(20, 0.5));
  sim.run(source);
  EXPECT_EQ(sim.metrics().count(Outcome::kOk), 20u);
  StatePlanner planner(app, config.pard, 7);
  planner.sync(sim.engine(), 0.0);
  // Each task's expected finish uses d + d/2 (mean batch wait): the join waits
  // 1.5 × (50 − 10) = 60 ms for c after b. L_sub(b) = hop 1 + d 20 + median wait 10 + 60.
  EXPECT_NEAR(planner.downstream_latency(1), 0.091, 0.001);
  EXPECT_NEAR(planner.downstream_latency(2), 0.031, 0.001);  // c is the slower input
  // The purge's floor: the hop and d's time at batch 1, no waits.
  EXPECT_NEAR(planner.downstream_floor(1), 0.021, 1e-9);
  // From a: the slower path, through c: hop 1 + 50 + hop 1 + 20.
  EXPECT_NEAR(planner.downstream_floor(0), 0.072, 1e-9);
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

// A burst that starts just after a sync: with the load factor read only at the once-per-
// second sync the task serves the burst's first second low-budget-first; with its own
// mode period it turns high-budget-first within 0.1 s.
TEST(StatePlanner, ModePeriodCatchesABurstBeforeTheNextSync) {
  App app = chain(1, 1.0);
  ProfileTable p;
  add_affine(p, "t0", 10.0, 0.0, 1);  // capacity 100 req/s
  PolicySet policies(preset_config("pard"));
  Simulator sim(app, uniform_deployment(app, 1, 1), p, policies, {});
  for (Time period : {0.0, 0.1}) {
    PardSettings settings;
    settings.mode_period = period;
    StatePlanner planner(app, settings, 1);
    for (int s = 0; s <= 5; ++s) {  // calm: 50 req/s
      for (int i = 0; i < 50 && s > 0; ++i) planner.on_arrival(0, s - 0.5);
      planner.maybe_sync(sim.engine(), s);
    }
    ASSERT_EQ(planner.mode(0), PriorityMode::kLowBudgetFirst);
    for (int i = 0; i < 40; ++i) planner.on_arrival(0, 5.05);  // 400 req/s from 5.0 s
    planner.maybe_sync(sim.engine(), 5.1);
    EXPECT_EQ(planner.mode(0),
              period > 0 ? PriorityMode::kHighBudgetFirst : PriorityMode::kLowBudgetFirst)
        << "mode period " << period;
  }
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
  // The wasted work, split by the task that did it, adds up to the run's wasted work.
  Time by_task = 0.0;
  for (const TaskStats& t : m.tasks()) by_task += t.wasted_gpu;
  EXPECT_NEAR(by_task, m.wasted_gpu_seconds(), 1e-9 * (1.0 + m.wasted_gpu_seconds()));
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

// ---- the comparison's ratio table ------------------------------------------------------

ComparisonRow fake_row(const std::string& label, double scale, double goodput, double drop) {
  ComparisonRow r;
  r.run.label = label;
  r.run.load_scale = scale;
  nlohmann::json s;
  s["submitted"] = 1000;
  s["dropped"] = static_cast<int>(drop * 1000);
  s["late"] = 0;
  s["dropped_by_stage"] = {{"t0", static_cast<int>(drop * 1000)}};
  s["goodput_rps"] = goodput;
  s["slo_attainment"] = 1.0 - drop;
  s["mean_accuracy"] = 1.0;
  s["drop_rate"] = drop;
  s["invalid_rate"] = drop / 2;
  s["latency_ms"] = {{"p99", 10.0}};
  r.summary = s;
  return r;
}

TEST(ComparisonTable, RatiosAtEveryLoadScale) {
  const App app = chain(1, 1.0);
  const std::vector<ComparisonRow> rows = {
      fake_row("nexus", 1.0, 100, 0.2), fake_row("pard", 1.0, 120, 0.1),
      fake_row("nexus ×2", 2.0, 50, 0.6), fake_row("pard ×2", 2.0, 150, 0.3),
      fake_row("clipper++ ×2", 2.0, 75, 0.5)};
  const std::string md = comparison_markdown(rows, app);
  EXPECT_NE(md.find("| nexus | 1.20 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| nexus ×2 | 3.00 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| clipper++ ×2 | 2.00 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace tessera
