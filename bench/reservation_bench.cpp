// PPipe's reservation data plane (src/dataplane/ppipe): dispatch cost per batch and probe()
// calls per batch on a 100-GPU plan (paper §7.2: 3.58 probes, < 9 µs per batch).
//
//   build/bench/reservation_bench
//
// The plan: WideResNet-101 on 25 L4 (4 per server, 100 Gbps) + 75 T4 (2 per server,
// 50 Gbps), 1/5 of nominal bandwidth effective:
//   pipeline 0: the whole model on 9 L4, batch 2;
//   pipeline 1: blocks [0,6) on 75 T4 -> [6,10) on 32 half-L4 vGPUs (16 L4), batch 1.
// Planned capacity ~3,130 req/s; the streams run at 0.9 of it (Poisson).
//
// BM_Dispatch drives AdaptiveBatcher and the ReservationBook directly (decide + reserve
// per batch timed; intervals are released once past, as feedback would): probes per batch,
// wall time of decide + reserve per batch, and the loop's CPU time per batch. BM_Simulate runs
// the whole plane in the simulator and reports its probes per batch and attainment.

#include <benchmark/benchmark.h>

#include <time.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <queue>
#include <random>

#include "dataplane/ppipe/batcher.hpp"
#include "dataplane/ppipe/reactive_plane.hpp"
#include "dataplane/ppipe/reservation_plane.hpp"
#include "dataplane/ppipe/setup.hpp"
#include "sim/simulator.hpp"
#include "workload/renewal_sources.hpp"
#include "workload/transforms.hpp"

namespace tessera::reservation {
namespace {

const std::filesystem::path kTimings = std::filesystem::path(TESSERA_SOURCE_DIR) / "data" /
                                       "profiles" / "ppipe" / "models" / "block-timing-tf32";
constexpr double kRate = 0.9 * 3130.0;

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

ppipe::PpipePlan plan_100() {
  ppipe::PpipePlan plan;
  plan.cluster.classes = {{"L4", 25, 4, 100.0, 4}, {"T4", 75, 2, 50.0, 4}};
  ppipe::DnnPlan d;
  d.dnn = "wide_resnet101_2";
  d.slo_ms = 67.1;
  ppipe::Pipeline whole;
  whole.batch = 2;
  whole.partitions.push_back({0, 10, "L4", 1, 9});
  ppipe::Pipeline split;
  split.batch = 1;
  split.partitions.push_back({0, 6, "T4", 1, 75});
  split.partitions.push_back({6, 10, "L4", 2, 32});
  d.pipelines = {whole, split};
  plan.dnns.push_back(d);
  return plan;
}

const PpipeSetup& setup_100() {
  static const PpipeSetup s =
      build_setup(plan_100(), 0, load_ppipe_model(kTimings, "wide_resnet101_2"));
  return s;
}

// The book and pipelines of the plan, as ReservationPlane builds them from the engine.
struct Tables {
  ReservationBook book;
  std::vector<PipelinePlan> pipes;
  explicit Tables(const PpipeSetup& s) {
    for (const LinkSpec& l : s.deployment.links) book.add_link({l.bandwidth, l.latency});
    for (const auto& lay : s.pipelines) {
      PipelinePlan p;
      p.batch = lay.batch;
      p.pools.resize(lay.tasks.size());
      for (std::size_t k = 0; k < lay.tasks.size(); ++k)
        p.pools[k].in_bytes_per_item = lay.in_bytes[k];
      pipes.push_back(p);
    }
    std::vector<std::pair<int, int>> pos(s.app.tasks.size());
    for (std::size_t p = 0; p < s.pipelines.size(); ++p) {
      for (std::size_t k = 0; k < s.pipelines[p].tasks.size(); ++k) {
        pos[s.pipelines[p].tasks[k]] = {static_cast<int>(p), static_cast<int>(k)};
      }
    }
    for (const WorkerGroup& g : s.deployment.groups) {
      const auto [p, k] = pos[g.task];
      PoolPlan& pool = pipes[static_cast<std::size_t>(p)].pools[static_cast<std::size_t>(k)];
      uint32_t up = 0;
      while (s.deployment.links[up].name != g.uplink) ++up;
      for (int c = 0; c < g.count; ++c) pool.members.push_back(book.add_vgpu(up, up + 1));
      const std::string& variant = s.app.tasks[g.task].variants[0].name;
      pool.latency.assign(static_cast<std::size_t>(g.max_batch) + 1, 0.0);
      for (int b = 1; b <= g.max_batch; ++b) {
        pool.latency[static_cast<std::size_t>(b)] = s.profiles.latency(variant, g.segment, b);
      }
    }
  }
};

void BM_Dispatch(benchmark::State& state) {
  const auto requests = static_cast<uint64_t>(state.range(0));
  const PpipeSetup& s = setup_100();
  uint64_t batches = 0, probes = 0, drops = 0;
  double dispatch_ns = 0, loop_cpu_ns = 0;
  for (auto _ : state) {
    Tables t(s);
    AdaptiveBatcher batcher(t.book, t.pipes);
    std::mt19937_64 rng(42);
    std::exponential_distribution<double> gap(kRate);
    std::deque<Time> queue;  // deadlines
    struct Past {
      Time end;
      bool link;
      uint32_t res;
      ReservationId id;
      bool operator>(const Past& o) const { return end > o.end; }
    };
    std::priority_queue<Past, std::vector<Past>, std::greater<>> past;
    Time now = 0.0, wake = -1.0, next = gap(rng);
    uint64_t arrived = 0, id = 1;
    batches = drops = 0;
    dispatch_ns = 0;
    const uint64_t probes0 = t.book.probes();
    const double cpu0 = thread_cpu_ns();
    while (arrived < requests || (!queue.empty() && wake >= 0)) {
      if (wake >= 0 && (wake <= next || arrived >= requests)) {
        now = wake;
        wake = -1.0;
      } else {
        now = next;
        next += gap(rng);
        queue.push_back(now + s.app.slo);
        ++arrived;
      }
      while (!past.empty() && past.top().end <= now) {  // feedback: over
        const Past p = past.top();
        past.pop();
        (p.link ? t.book.link(p.res) : t.book.gpu(p.res)).release(p.id);
      }
      wake = -1.0;
      while (!queue.empty()) {
        const auto t0 = std::chrono::steady_clock::now();
        const Decision d = batcher.decide(now, queue.front(), queue.size(), true);
        if (d.kind == Decision::Kind::kDispatch) t.book.reserve(d.offer, id);
        dispatch_ns += static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::steady_clock::now() - t0)
                                               .count());
        if (d.kind == Decision::Kind::kWait) {
          wake = d.wake_at;
          break;
        }
        if (d.kind == Decision::Kind::kDrop) {
          queue.pop_front();
          ++drops;
          continue;
        }
        if (d.kind != Decision::Kind::kDispatch) break;
        for (int h = 0; h < d.offer.hops; ++h) {
          const Hop& hop = d.offer.hop[static_cast<std::size_t>(h)];
          past.push({hop.start + hop.len, false, hop.vgpu, ReservationBook::gpu_id(id, h)});
          if (h > 0 && hop.xfer_len > 0) {
            const uint32_t from = d.offer.hop[static_cast<std::size_t>(h - 1)].vgpu;
            const Time end = hop.xfer_start + hop.xfer_len;
            past.push({end, true, t.book.uplink_of(from), ReservationBook::xfer_id(id, h)});
            past.push({end, true, t.book.downlink_of(hop.vgpu), ReservationBook::xfer_id(id, h)});
          }
        }
        ++id;
        ++batches;
        for (int i = 0; i < d.offer.batch; ++i) queue.pop_front();
      }
    }
    loop_cpu_ns = thread_cpu_ns() - cpu0;
    probes = t.book.probes() - probes0;
  }
  state.counters["batches"] = static_cast<double>(batches);
  state.counters["drops"] = static_cast<double>(drops);
  state.counters["probes_per_batch"] = static_cast<double>(probes) / static_cast<double>(batches);
  // Wall time of decide + reserve, and the whole loop's CPU time (arrivals and the emulated
  // feedback included: an upper bound that other processes on the machine do not inflate).
  state.counters["dispatch_us_per_batch"] = dispatch_ns / 1e3 / static_cast<double>(batches);
  state.counters["loop_cpu_us_per_batch"] = loop_cpu_ns / 1e3 / static_cast<double>(batches);
}
BENCHMARK(BM_Dispatch)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Simulate(benchmark::State& state) {
  const auto requests = static_cast<uint64_t>(state.range(0));
  const PpipeSetup& s = setup_100();
  PlaneStats stats;
  uint64_t probes = 0;
  double ok = 0;
  for (auto _ : state) {
    auto plane = ReservationPlane::create(s);
    SimOptions so;
    so.seed = 42;
    Simulator sim(s.app, s.deployment, s.profiles, plane->policies(), so, EngineOptions{});
    Bounded arrivals(std::make_unique<PoissonSource>(kRate, 42), std::nullopt, requests);
    sim.run(arrivals);
    stats = plane->stats();
    probes = plane->probes();
    ok = static_cast<double>(sim.metrics().count(Outcome::kOk)) /
         static_cast<double>(sim.metrics().submitted());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * requests));
  state.counters["attainment"] = ok;
  state.counters["probes_per_batch"] =
      static_cast<double>(probes) / static_cast<double>(stats.batches);
  state.counters["mean_batch"] =
      static_cast<double>(stats.batch_items) / static_cast<double>(stats.batches);
  state.counters["transfer_ms_mean"] = stats.transfer_time.mean() * 1e3;
}
BENCHMARK(BM_Simulate)->Arg(100000)->Unit(benchmark::kMillisecond)->Iterations(1);

// The ablation (§7.4) on the same plan: reservation vs reactive at load factors of the
// planned capacity, 30 s of Poisson arrivals each.
void BM_Ablation(benchmark::State& state) {
  const bool reactive = state.range(0) == 1;
  const double load = static_cast<double>(state.range(1)) / 100.0;
  const double rate = load * 3130.0;
  const auto requests = static_cast<uint64_t>(rate * 30.0);
  SetupOptions o;
  o.link_edges = reactive;
  static const auto blocks = load_ppipe_model(kTimings, "wide_resnet101_2");
  const PpipeSetup s = build_setup(plan_100(), 0, blocks, o);
  double ok = 0, dropped = 0, late = 0, xfer_mean = 0, xfer_p99 = 0;
  for (auto _ : state) {
    SimOptions so;
    so.seed = 42;
    std::shared_ptr<ReservationPlane> rp;
    std::shared_ptr<ReactivePlane> ap;
    EnginePolicies policies;
    if (reactive) {
      ap = ReactivePlane::create(s);
      policies = ap->policies();
    } else {
      rp = ReservationPlane::create(s);
      policies = rp->policies();
    }
    Simulator sim(s.app, s.deployment, s.profiles, std::move(policies), so, EngineOptions{});
    Bounded arrivals(std::make_unique<PoissonSource>(rate, 42), std::nullopt, requests);
    sim.run(arrivals);
    const auto n = static_cast<double>(sim.metrics().submitted());
    ok = static_cast<double>(sim.metrics().count(Outcome::kOk)) / n;
    late = static_cast<double>(sim.metrics().count(Outcome::kLate)) / n;
    dropped = static_cast<double>(sim.metrics().count(Outcome::kDropped)) / n;
    const LogHistogram& h = reactive ? ap->stats().transfer_time : rp->stats().transfer_time;
    xfer_mean = h.mean() * 1e3;
    xfer_p99 = h.quantile(0.99) * 1e3;
  }
  state.counters["attainment"] = ok;
  state.counters["late"] = late;
  state.counters["dropped"] = dropped;
  state.counters["xfer_ms_mean"] = xfer_mean;
  state.counters["xfer_ms_p99"] = xfer_p99;
}
BENCHMARK(BM_Ablation)
    ->ArgsProduct({{0, 1}, {70, 80, 90, 100, 110}})
    ->ArgNames({"reactive", "load_pct"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace tessera::reservation

BENCHMARK_MAIN();
