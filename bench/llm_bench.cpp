// LLM serving speed (docs/benchmarks.md#llm): the whole Azure LLM 2023 code trace (8,819
// requests) replayed with continuous batching on 8 instances (examples/llm/run.yaml with 8
// instances; target < 1 s on one core), and one decode-iteration scheduling decision with
// 256 running requests (target <= 10 us).
//
//   build-release/bench/llm_bench

#include <benchmark/benchmark.h>

#include <memory>

#include "engine/policies.hpp"
#include "llm/llm_cost_model.hpp"
#include "llm/llm_scheduler.hpp"
#include "policy/fifo_queue.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"

namespace tessera {
namespace {

void BM_LlmTraceReplay(benchmark::State& state) {
  RunSpec run = load_run_spec(std::string(TESSERA_SOURCE_DIR) + "/examples/llm/run.yaml");
  run.deployment.groups.at(0).count = 8;
  run.llm->scheduler.policy = LlmPolicy::kContinuous;
  run.sim.make_scheduler = llm_scheduler_factory(run.llm->scheduler);
  const PolicySet policies(run.policies);
  uint64_t events = 0;
  uint64_t steps = 0;
  for (auto _ : state) {
    Simulator sim(run.app, run.deployment, run.profiles, policies, run.sim);
    auto arrivals = make_run_arrivals(run);
    sim.run(*arrivals);
    events = sim.events_processed();
    steps = sim.metrics().llm().steps;
    benchmark::DoNotOptimize(sim.metrics().count(Outcome::kOk));
  }
  state.counters["requests"] = 8819;
  state.counters["events"] = static_cast<double>(events);
  state.counters["steps"] = static_cast<double>(steps);
}
BENCHMARK(BM_LlmTraceReplay)->Unit(benchmark::kMillisecond);

// The engine's side of a step, reduced to what the scheduler needs.
class BenchHost final : public SchedulerHost {
 public:
  explicit BenchHost(const CostModel& cost) : cost_(cost) {}
  Time now() const override { return now_; }
  bool admit(Worker&, const Item&, Time, Time) override { return true; }
  void start_step(Worker& w) override { w.busy = true; }
  void set_timer(Worker&, Time) override {}
  void drop_queued(Worker&, const Item&, DropReason) override {}
  void start_step(Worker& w, const StepContents& contents) override {
    w.busy = true;
    w.running_duration = cost_.step_time(w, contents);
  }
  void record_tokens(const Item&, const TokenTimes&) override {}
  void report_llm_step(const Worker&, const LlmStepStats&) override {}
  Time now_ = 0.0;

 private:
  const CostModel& cost_;
};

// One decode iteration's decision: apply the finished iteration's tokens to 256 running
// requests (none finishes), grow their KV blocks, and plan and start the next iteration.
void BM_LlmDecodeDecision(benchmark::State& state) {
  const auto running = static_cast<uint32_t>(state.range(0));
  LlmModel model;
  LlmGpu gpu;
  const LlmAnalyticCostModel cost(model, gpu);
  BenchHost host(cost);
  LlmSchedulerConfig config;
  config.policy = LlmPolicy::kContinuous;
  config.kv_blocks = 4000000000u;  // room for the contexts the iterations grow
  config.max_seqs = running;
  config.token_budget = 1u << 20;
  LlmInstanceScheduler scheduler(config, host, cost);
  Worker worker;
  worker.queue = std::make_shared<FifoQueue>();
  for (uint32_t i = 0; i < running; ++i) {
    Item item;
    item.request = i;
    item.tokens_in = 512;
    item.tokens_out = 4000000;  // never finishes here
    worker.queue->push(item);
  }
  scheduler.on_queue_grew(worker);  // one prefill step admits them all
  auto step = [&] {
    host.now_ += worker.running_duration;
    worker.busy = false;
    worker.running.clear();
    scheduler.on_step_done(worker);
  };
  step();  // the first decode iteration
  if (scheduler.admitted() != running) state.SkipWithError("not all requests admitted");
  for (auto _ : state) step();
  state.counters["running"] = static_cast<double>(scheduler.admitted());
}
BENCHMARK(BM_LlmDecodeDecision)->Arg(256)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera

BENCHMARK_MAIN();
