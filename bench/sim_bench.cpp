// Simulator throughput: requests through a 3-stage pipeline on 64 workers.
//
//   build/bench/sim_bench --benchmark_filter='Simulate3Stage/1000000'
//
// Memory: run one size per process and compare max_rss_mb across sizes; it must not grow
// with the number of requests (metrics stream, requests are recycled).

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "sim/simulator.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

namespace tessera {
namespace {

App three_stage_chain() {
  App app;
  app.name = "chain3";
  app.slo = 0.200;
  for (const char* name : {"decode", "detect", "classify"}) {
    Task t;
    t.name = name;
    t.variants.push_back(Variant{name, 1.0, 1.0});
    app.tasks.push_back(t);
  }
  for (TaskId i = 0; i < 2; ++i) {
    Edge e;
    e.from = i;
    e.to = static_cast<TaskId>(i + 1);
    e.delay = 0.0005;
    app.edges.push_back(e);
  }
  app.finalize();
  return app;
}

double max_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

void BM_Simulate3Stage(benchmark::State& state) {
  const auto requests = static_cast<uint64_t>(state.range(0));
  const App app = three_stage_chain();
  ProfileTable profiles;
  for (const Task& t : app.tasks) {
    for (int b = 1; b <= 16; ++b) profiles.add(t.name, "gpu", b, 5.0 + 1.0 * b);
  }
  Deployment deployment;  // 22 + 21 + 21 = 64 workers, ~16k requests/s per stage at batch 16
  deployment.groups = {{0, {0}, "gpu", 16, 22}, {1, {0}, "gpu", 16, 21}, {2, {0}, "gpu", 16, 21}};
  PolicyConfig config;
  config.dispatch = "least_loaded";
  config.dropping = "expired";
  const PolicySet policies(config);
  uint64_t events = 0;
  for (auto _ : state) {
    SimOptions options;
    options.seed = 42;
    options.noise_cv = 0.05;
    Simulator sim(app, deployment, profiles, policies, options);
    Bounded arrivals(std::make_unique<PoissonSource>(12000.0, 42), std::nullopt, requests);
    sim.run(arrivals);
    events = sim.events_processed();
    benchmark::DoNotOptimize(sim.metrics().count(Outcome::kOk));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * requests));
  state.counters["events"] = static_cast<double>(events);
  state.counters["max_rss_mb"] = max_rss_mb();
}
BENCHMARK(BM_Simulate3Stage)
    ->Arg(100000)
    ->Arg(1000000)
    ->Arg(4000000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
