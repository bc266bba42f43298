// Simulator throughput: requests through a 3-stage pipeline on 64 workers, and through a
// PPipe-shaped chain of 3 partitions on pools with link transfers; heap allocations per
// request in steady state (a counting operator new).
//
//   build/bench/sim_bench --benchmark_filter='Simulate3Stage/1000000'
//   build/bench/sim_bench --benchmark_filter='PoolChain/1000000'
//   build/bench/sim_bench --benchmark_filter='Allocations'
//
// Memory: run one size per process and compare max_rss_mb across sizes; it must not grow
// with the number of requests (metrics stream, requests are recycled). events_per_request
// counts the arrivals and every event the loop handled (a finished step, a timer that
// fired, a delivery of a batch's items to the next hop).

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "sim/simulator.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

// Every heap allocation in this process is counted. (GCC 12 mistakes the replacement
// pair below for a mismatched new/free at inlined call sites.)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

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

// The 3-stage chain's profiles, deployment and policies.
struct ThreeStage {
  App app = three_stage_chain();
  ProfileTable profiles;
  Deployment deployment;
  PolicySet policies{PolicyConfig{}};
  ThreeStage() {
    for (const Task& t : app.tasks) {
      for (int b = 1; b <= 16; ++b) profiles.add(t.name, "gpu", b, 5.0 + 1.0 * b);
    }
    // 22 + 21 + 21 = 64 workers, ~16k requests/s per stage at batch 16
    deployment.groups = {{0, {0}, "gpu", 16, 22}, {1, {0}, "gpu", 16, 21}, {2, {0}, "gpu", 16, 21}};
    PolicyConfig config;
    config.dispatch = DispatchKind::kLeastLoaded;
    config.dropping = DroppingKind::kExpired;
    policies = PolicySet(config);
  }
};

void BM_Simulate3Stage(benchmark::State& state) {
  const auto requests = static_cast<uint64_t>(state.range(0));
  const ThreeStage chain;
  uint64_t events = 0;
  for (auto _ : state) {
    SimOptions options;
    options.seed = 42;
    options.noise_cv = 0.05;
    Simulator sim(chain.app, chain.deployment, chain.profiles, chain.policies, options);
    Bounded arrivals(std::make_unique<PoissonSource>(12000.0, 42), std::nullopt, requests);
    sim.run(arrivals);
    events = sim.events_processed();
    benchmark::DoNotOptimize(sim.metrics().count(Outcome::kOk));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * requests));
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_request"] =
      static_cast<double>(events) / static_cast<double>(requests);
  state.counters["max_rss_mb"] = max_rss_mb();
}
// A PPipe-shaped chain: a model cut into 3 partitions served by pools of 25, 21 and 39
// workers (4 per server, each server with its own NIC up- and downlink at 2 Gbit/s
// effective), batch 2, one shared queue per partition with timeout batching (2 ms), and the
// intermediate tensor (150 KB per sample) crossing the links between partitions.
struct PoolChain {
  App app;
  ProfileTable profiles;
  Deployment deployment;
  PolicySet policies{PolicyConfig{}};
  PoolChain() {
    app.name = "pool3";
    app.slo = 0.200;
    const int pools[] = {25, 21, 39};
    const double base_ms[] = {8.0, 7.0, 14.0};  // per batch of 2: 10, 9 and 16 ms
    for (int k = 0; k < 3; ++k) {
      const std::string name = "part" + std::to_string(k);
      Task t;
      t.name = name;
      t.variants.push_back(Variant{name, 1.0, 1.0});
      app.tasks.push_back(t);
      for (int b = 1; b <= 2; ++b) profiles.add(name, "gpu", b, base_ms[k] + 1.0 * b);
    }
    for (TaskId i = 0; i < 2; ++i) {
      Edge e;
      e.from = i;
      e.to = static_cast<TaskId>(i + 1);
      e.bytes_per_item = 150e3;
      app.edges.push_back(e);
    }
    app.finalize();
    for (int k = 0; k < 3; ++k) {
      for (int first = 0, server = 0; first < pools[k]; first += 4, ++server) {
        const std::string s = "p" + std::to_string(k) + "s" + std::to_string(server);
        deployment.links.push_back(LinkSpec{s + "/up", 2e9 / 8, 20e-6});
        deployment.links.push_back(LinkSpec{s + "/down", 2e9 / 8, 20e-6});
        WorkerGroup g{static_cast<TaskId>(k), {0}, "gpu", 2, std::min(4, pools[k] - first)};
        g.uplink = s + "/up";
        g.downlink = s + "/down";
        deployment.groups.push_back(g);
      }
    }
    PolicyConfig config;
    config.dispatch = DispatchKind::kCentral;
    config.batching = BatchingKind::kTimeout;
    config.batch_timeout = 0.002;
    config.dropping = DroppingKind::kExpired;
    policies = PolicySet(config);
  }
};

void BM_PoolChain(benchmark::State& state) {
  const auto requests = static_cast<uint64_t>(state.range(0));
  const PoolChain chain;
  uint64_t events = 0;
  double ok = 0;
  for (auto _ : state) {
    SimOptions options;
    options.seed = 42;
    Simulator sim(chain.app, chain.deployment, chain.profiles, chain.policies, options);
    Bounded arrivals(std::make_unique<PoissonSource>(3750.0, 42), std::nullopt, requests);
    sim.run(arrivals);
    events = sim.events_processed();
    ok = static_cast<double>(sim.metrics().count(Outcome::kOk)) /
         static_cast<double>(sim.metrics().submitted());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * requests));
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_request"] =
      static_cast<double>(events) / static_cast<double>(requests);
  state.counters["attainment"] = ok;
  state.counters["max_rss_mb"] = max_rss_mb();
}
BENCHMARK(BM_PoolChain)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(1);

// Heap allocations per request in steady state: the difference between a run of 2N and a
// run of N requests (start-up allocations cancel out), divided by N.
template <typename Run>
double allocations_per_request(Run run, uint64_t n) {
  const uint64_t a0 = g_allocations.load();
  run(n);
  const uint64_t a1 = g_allocations.load();
  run(2 * n);
  const uint64_t a2 = g_allocations.load();
  return (static_cast<double>(a2 - a1) - static_cast<double>(a1 - a0)) / static_cast<double>(n);
}

void BM_Allocations(benchmark::State& state) {
  const ThreeStage three;
  const PoolChain chain;
  double chain3 = 0, pool3 = 0;
  for (auto _ : state) {
    chain3 = allocations_per_request(
        [&](uint64_t n) {
          SimOptions options;
          options.seed = 42;
          options.noise_cv = 0.05;
          Simulator sim(three.app, three.deployment, three.profiles, three.policies, options);
          Bounded arrivals(std::make_unique<PoissonSource>(12000.0, 42), std::nullopt, n);
          sim.run(arrivals);
        },
        200000);
    pool3 = allocations_per_request(
        [&](uint64_t n) {
          SimOptions options;
          options.seed = 42;
          Simulator sim(chain.app, chain.deployment, chain.profiles, chain.policies, options);
          Bounded arrivals(std::make_unique<PoissonSource>(3750.0, 42), std::nullopt, n);
          sim.run(arrivals);
        },
        100000);
  }
  state.counters["allocs_per_request_chain3"] = chain3;
  state.counters["allocs_per_request_pool3"] = pool3;
}
BENCHMARK(BM_Allocations)->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK(BM_Simulate3Stage)
    ->Arg(100000)
    ->Arg(1000000)
    ->Arg(4000000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
