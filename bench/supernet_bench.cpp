// SubNetAct micro-benchmarks (docs/benchmarks.md, docs/supernet.md): actuation when switching
// between hosted subnets, forward latency of the smallest and largest subnet, and extraction
// (copying a subnet's weights out, what loading a separate model would cost at least).
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <memory>

#include "supernet/extract.hpp"
#include "supernet/subnet_selection.hpp"
#include "supernet/supernet.hpp"

namespace {

using namespace tessera::supernet;

constexpr int kResolution = 64;

// One supernet hosting the 12 pareto subnets, built once.
Supernet& hosted() {
  static Supernet* supernet = [] {
    at::set_num_threads(1);
    auto* s = new Supernet();
    const at::Tensor calibration =
        at::randn({8, 3, kResolution, kResolution}, at::detail::createCPUGenerator(1), at::kFloat);
    for (const SubnetConfig& c : select_subnets(12)) s->host(c, calibration);
    return s;
  }();
  return *supernet;
}

// Switches to the next of the 12 hosted subnets each iteration: LayerSelect, WeightSlice
// (views of every layer's weights) and the SubnetNorm lookup.
void BM_ActuateSwitch(benchmark::State& state) {
  Supernet& supernet = hosted();
  const std::vector<SubnetConfig> subnets = select_subnets(12);
  std::size_t i = 0;
  for (auto _ : state) {
    ActiveSubnet active = supernet.actuate(subnets[i]);
    benchmark::DoNotOptimize(active);
    i = (i + 1) % subnets.size();
  }
}
BENCHMARK(BM_ActuateSwitch)->Unit(benchmark::kMicrosecond);

// Actuation of the largest subnet alone (the most views).
void BM_ActuateMax(benchmark::State& state) {
  Supernet& supernet = hosted();
  const SubnetConfig max = SubnetConfig::max_config();
  for (auto _ : state) {
    ActiveSubnet active = supernet.actuate(max);
    benchmark::DoNotOptimize(active);
  }
}
BENCHMARK(BM_ActuateMax)->Unit(benchmark::kMicrosecond);

// Actuation + forward at batch state.range(1); subnet 0 = min, 1 = max.
void BM_Forward(benchmark::State& state) {
  Supernet& supernet = hosted();
  const SubnetConfig c =
      state.range(0) == 0 ? SubnetConfig::min_config() : SubnetConfig::max_config();
  const at::Tensor x = at::randn({state.range(1), 3, kResolution, kResolution},
                                 at::detail::createCPUGenerator(2), at::kFloat);
  for (auto _ : state) {
    at::Tensor y = supernet.forward(x, c);
    benchmark::DoNotOptimize(y.data_ptr<float>());
  }
}
BENCHMARK(BM_Forward)
    ->ArgNames({"max", "batch"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 16})
    ->Args({1, 16})
    ->Unit(benchmark::kMillisecond);

// Extracting a subnet into its own network (copies its weights): the alternative to actuation.
void BM_Extract(benchmark::State& state) {
  Supernet& supernet = hosted();
  const SubnetConfig c =
      state.range(0) == 0 ? SubnetConfig::min_config() : SubnetConfig::max_config();
  for (auto _ : state) {
    auto net = std::make_unique<ExtractedNet>(supernet, c);
    benchmark::DoNotOptimize(net.get());
  }
}
BENCHMARK(BM_Extract)->ArgName("max")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
