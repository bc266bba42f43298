// The LLM gateway's routing decision (src/policy/llm_routing.*): one LlmRouter::pick over
// 64 backends in service with varied state, per policy (docs/benchmarks.md#llm-router).
//
//   build/bench/llm_router_bench
//
// Goal: <= 10 us per decision with 64 backends. Each iteration routes the next of 1,024
// prepared requests (distinct prompts: 4 leading-block hashes, a TTFT and a TPOT SLO) and
// moves one backend's counts, so no two decisions see the same state; critical priority,
// so slo_aware always scores every backend and never stops at a shed.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "policy/llm_routing.hpp"

namespace tessera {
namespace {

constexpr int kBackends = 64;
constexpr int kRequests = 1024;

void BM_LlmRouterPick(benchmark::State& state, const std::string& policy) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> outstanding(0, 32);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  LlmRouterSetup setup;
  std::vector<LlmRouteBackend> backends(kBackends);
  for (int i = 0; i < kBackends; ++i) {
    // A heterogeneous fleet: step times from 8 to 40 ms, prefill and KV read costs varied.
    // Sampled curves, as sample_step_cost gives them: prefill superlinear in the prompt.
    LlmStepCost cost{0.008 + 0.032 * unit(rng), 1e-5 * (1 + 3 * unit(rng)),
                     1e-8 * (1 + 3 * unit(rng))};
    cost.sampled = true;
    std::array<Time, kLlmStepCostGrid.size()> prefill{}, context{};
    for (std::size_t k = 0; k < kLlmStepCostGrid.size(); ++k) {
      const double tokens = kLlmStepCostGrid[k];
      prefill[k] = cost.prefill_token * tokens * (1 + tokens / 8192);
      context[k] = cost.context_token * tokens;
    }
    cost.prefill = LlmCostCurve::through(prefill);
    cost.context = LlmCostCurve::through(context);
    setup.step_costs.push_back(cost);
    LlmRouteBackend& b = backends[static_cast<std::size_t>(i)];
    b.up = true;
    b.outstanding = outstanding(rng);
    b.awaiting_first = b.outstanding / 4;
    b.awaiting_prompt_tokens = static_cast<uint64_t>(b.awaiting_first) * 900;
    b.load_known = true;
    b.running = b.outstanding - b.awaiting_first;
    b.waiting = b.awaiting_first;
    b.kv_usage = unit(rng);
  }
  std::vector<std::vector<uint64_t>> hashes;
  std::vector<LlmRouteRequest> requests;
  for (int k = 0; k < kRequests; ++k) {
    hashes.push_back(
        llm_prefix_hashes("prompt " + std::to_string(k) + std::string(300, 'x'), 64, 4));
  }
  for (int k = 0; k < kRequests; ++k) {
    LlmRouteRequest r;
    r.prompt_tokens = 200 + static_cast<uint32_t>(k % 7) * 100;
    r.prefix_hashes = hashes[static_cast<std::size_t>(k)];
    r.priority = LlmPriority::kCritical;
    r.ttft_slo = 0.5;
    r.tpot_slo = 0.05;
    requests.push_back(r);
  }
  std::unique_ptr<LlmRouter> router = find_llm_routing(policy)->make(setup);
  const std::vector<int> skip;
  std::size_t k = 0;
  int64_t routed = 0;
  for (auto _ : state) {
    const LlmRouteDecision d =
        router->pick(requests[k % kRequests], backends, skip, static_cast<Time>(k) * 1e-3);
    benchmark::DoNotOptimize(d.backend);
    routed += d.backend >= 0 ? 1 : 0;
    // One backend's count moves each decision (a request starts or ends somewhere).
    LlmRouteBackend& moved = backends[k % kBackends];
    moved.outstanding = (moved.outstanding + 1) % 33;
    ++k;
  }
  state.counters["routed"] =  // 1: every decision routed a request
      benchmark::Counter(static_cast<double>(routed), benchmark::Counter::kAvgIterations);
  state.SetItemsProcessed(state.iterations());
}

void register_all() {
  for (const LlmRoutingRow& row : llm_routing_policies()) {
    const std::string name(row.name);
    benchmark::RegisterBenchmark(("BM_LlmRouterPick/" + name + "/64").c_str(),
                                 [name](benchmark::State& s) { BM_LlmRouterPick(s, name); });
  }
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
