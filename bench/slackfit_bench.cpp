// SuperServe's per-batch decision cost.
//
//   build-rel/bench/slackfit_bench
//
// Target (issue 5): one SlackFit decision <= 1 us at 10,000 queued requests. A decision is
// the EDF peek of the most urgent request in a 10,000-deep min-max heap plus the bucket
// lookup (MaxBatch and MaxAcc: their scans of batch sizes and variants).

#include <benchmark/benchmark.h>

#include <random>

#include "policy/budget_queue.hpp"
#include "policy/slack_policies.hpp"

namespace tessera {
namespace {

// A task hosting 12 variants, accuracy 0.74..0.80, latency growing with accuracy and batch.
App supernet_app(int variants) {
  App app;
  app.name = "supernet";
  app.slo = 0.12;
  Task t;
  t.name = "classify";
  for (int v = 0; v < variants; ++v) {
    t.variants.push_back(Variant{"s" + std::to_string(v), 0.74 + 0.005 * v, 1.0});
  }
  app.tasks.push_back(t);
  app.finalize();
  return app;
}

template <typename Policy, typename... Args>
void run_decisions(benchmark::State& state, Args&&... args) {
  const int variants = 12;
  const App app = supernet_app(variants);
  Worker worker;
  worker.max_batch = 16;
  for (int v = 0; v < variants; ++v) {
    worker.variants.push_back(v);
    std::vector<Time> row(17, 0.0);
    for (int b = 1; b <= 16; ++b)
      row[static_cast<std::size_t>(b)] = 0.004 * (1 + v) + 0.001 * (1 + v) * b;
    worker.latency.push_back(row);
  }
  const PriorityMode mode = PriorityMode::kLowBudgetFirst;
  worker.queue = std::make_shared<BudgetQueue>(&mode);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> deadline(0.0, 0.12);
  for (int i = 0; i < state.range(0); ++i)
    worker.queue->push(Item{0, 0, 1.0, 0.0, deadline(rng), 0.0});
  Policy policy(app, std::forward<Args>(args)...);
  // The decision reads the queue's most urgent request; sweeping `now` over the SLO moves
  // its slack across every bucket.
  Time now = -0.01;
  for (auto _ : state) {
    benchmark::DoNotOptimize(policy.choose(worker, now));
    now = now > 0.13 ? -0.01 : now + 1e-5;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SlackFitDecision(benchmark::State& state) { run_decisions<SlackFit>(state, 10); }
void BM_MaxBatchDecision(benchmark::State& state) { run_decisions<MaxBatch>(state); }
void BM_MaxAccDecision(benchmark::State& state) { run_decisions<MaxAcc>(state); }
BENCHMARK(BM_SlackFitDecision)->Arg(10000)->ArgName("queued");
BENCHMARK(BM_MaxBatchDecision)->Arg(10000)->ArgName("queued");
BENCHMARK(BM_MaxAccDecision)->Arg(10000)->ArgName("queued");

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
