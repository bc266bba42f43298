// PARD's per-decision and per-refresh costs.
//
//   build-rel/bench/pard_bench
//
// Targets (issue 3): one broker decision plus its heap operation <= 1 us at 10,000 queued
// requests; a batch-wait quantile refresh with M = 10,000 and 6 downstream tasks <= 5 ms.

#include <benchmark/benchmark.h>

#include "policy/budget_queue.hpp"
#include "policy/pard/batch_wait.hpp"
#include "policy/pard/request_broker.hpp"
#include "policy/presets.hpp"
#include "sim/simulator.hpp"

namespace tessera {
namespace {

App chain_app(int tasks) {
  App app;
  app.name = "chain";
  app.slo = 0.5;
  for (int i = 0; i < tasks; ++i) {
    Task t;
    t.name = "t" + std::to_string(i);
    t.variants.push_back(Variant{t.name, 1.0, 1.0});
    app.tasks.push_back(t);
  }
  for (int i = 0; i + 1 < tasks; ++i) {
    Edge e;
    e.from = static_cast<TaskId>(i);
    e.to = static_cast<TaskId>(i + 1);
    app.edges.push_back(e);
  }
  app.finalize();
  return app;
}

// Pops the most urgent (LBF) or least urgent (HBF) item from a 10,000-deep queue, runs the
// Request Broker's Eq. 3b decision on it and pushes a new arrival: one steady-state step.
void BM_BrokerDecisionWithHeap(benchmark::State& state) {
  const auto depth = static_cast<std::size_t>(state.range(0));
  const App app = chain_app(4);
  ProfileTable profiles;
  for (const Task& t : app.tasks) {
    for (int b = 1; b <= 8; ++b) profiles.add(t.name, "gpu", b, 5.0 + 2.0 * b);
  }
  Deployment deployment;
  for (TaskId t = 0; t < 4; ++t) deployment.groups.push_back({t, {0}, "gpu", 8, 4});
  const PolicySet policies(preset_config("pard"));
  Simulator sim(app, deployment, profiles, policies, {});
  auto planner = std::make_shared<StatePlanner>(app, PardSettings{}, 1);
  planner->sync(sim.engine(), 0.0);
  RequestBroker broker(planner);
  const PriorityMode mode =
      state.range(1) ? PriorityMode::kHighBudgetFirst : PriorityMode::kLowBudgetFirst;
  BudgetQueue queue(&mode);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> deadline(0.1, 0.6);
  for (std::size_t i = 0; i < depth; ++i) queue.push(Item{0, 0, 1.0, 0.0, deadline(rng), 0.0});
  const Worker& worker = *sim.engine().workers()[0];
  DropContext ctx{0.0, 0.02, 0.015, &worker, &sim.engine()};
  for (auto _ : state) {
    Item item = queue.pop();
    benchmark::DoNotOptimize(broker.on_batch(item, ctx));
    item.deadline = deadline(rng);
    queue.push(item);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BrokerDecisionWithHeap)->ArgsProduct({{10000}, {0, 1}})->ArgNames({"queued", "hbf"});

// F^-1(lambda) of the aggregate batch wait over `n` downstream tasks from M samples.
void BM_BatchWaitQuantile(benchmark::State& state) {
  const std::vector<Time> cycles(static_cast<std::size_t>(state.range(0)), 0.030);
  std::mt19937_64 rng(1);
  std::vector<Time> scratch;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        batch_wait_quantile(cycles, 0.1, static_cast<int>(state.range(1)), rng, scratch));
  }
}
BENCHMARK(BM_BatchWaitQuantile)
    ->ArgsProduct({{6}, {10000}})
    ->ArgNames({"downstream", "M"})
    ->Unit(benchmark::kMillisecond);

// A whole State Planner sync of a 7-task chain (quantiles for 6 downstream paths).
void BM_StatePlannerSync(benchmark::State& state) {
  const App app = chain_app(7);
  ProfileTable profiles;
  for (const Task& t : app.tasks) profiles.add(t.name, "gpu", 1, 10.0);
  Deployment deployment;
  for (TaskId t = 0; t < 7; ++t) deployment.groups.push_back({t, {0}, "gpu", 1, 2});
  Simulator sim(app, deployment, profiles, PolicySet(preset_config("pard")), {});
  StatePlanner planner(app, PardSettings{}, 1);
  Time now = 0.0;
  for (auto _ : state) {
    now += 1.0;
    planner.sync(sim.engine(), now);
  }
}
BENCHMARK(BM_StatePlannerSync)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
