// JigsawServe planner solve times (docs/benchmarks.md#planner): one CBC solve of Eq. 14 per
// app (examples/plan/) at 28 and 840 slices, at about half of the A+S+T space's max
// serviceable demand there (docs/results/jigsawserve.md); and the max-demand search.
#include <benchmark/benchmark.h>

#include <string>

#include "plan/plan_spec.hpp"
#include "plan/planner.hpp"

namespace {

using namespace tessera::plan;

void BM_Plan(benchmark::State& state, const std::string& app, int slices, double demand) {
  PlanSpec spec =
      load_plan_spec(std::string(TESSERA_SOURCE_DIR) + "/examples/plan/" + app + ".yaml");
  spec.input.slices = slices;
  spec.input.demand_rps = demand;
  Plan plan;
  for (auto _ : state) {
    plan = make_plan(spec.input, spec.options);
    benchmark::DoNotOptimize(plan.entries.data());
  }
  state.counters["optimal"] = plan.status == PlanStatus::kOptimal ? 1 : 0;
  state.counters["slices"] = plan.evaluation.slices;
  state.counters["accuracy"] = plan.evaluation.accuracy;
  state.counters["cbc_s"] = plan.stats.seconds;
  state.counters["gap"] = plan.stats.milp_bound - plan.stats.milp_objective;
  state.counters["check_ok"] = plan.evaluation.ok() ? 1 : 0;
}

void BM_MaxDemand(benchmark::State& state, const std::string& app, int slices) {
  PlanSpec spec =
      load_plan_spec(std::string(TESSERA_SOURCE_DIR) + "/examples/plan/" + app + ".yaml");
  spec.input.slices = slices;
  MaxDemand md;
  for (auto _ : state) {
    md = max_serviceable_demand(spec.input, spec.options);
    benchmark::DoNotOptimize(md.plan.entries.data());
  }
  state.counters["exact"] = md.status == PlanStatus::kOptimal ? 1 : 0;
  state.counters["demand_rps"] = md.max_demand_rps;
  state.counters["upper_rps"] = md.upper_bound_rps;
  state.counters["search_s"] = md.seconds;
  state.counters["milps"] = md.solves;
  state.counters["check_ok"] = md.plan.evaluation.ok() ? 1 : 0;
}

}  // namespace

BENCHMARK_CAPTURE(BM_Plan, traffic_28, "traffic", 28, 48)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, traffic_840, "traffic", 840, 1485)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, social_28, "social", 28, 912)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, social_840, "social", 840, 27500)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, ar_28, "ar", 28, 94)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, ar_840, "ar", 840, 2865)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, traffic_28_low, "traffic", 28, 20)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Plan, ar_28_low, "ar", 28, 40)->Iterations(1)->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(BM_MaxDemand, traffic_28, "traffic", 28)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaxDemand, ar_28, "ar", 28)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaxDemand, social_28, "social", 28)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
