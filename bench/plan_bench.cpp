// JigsawServe planner solve times (docs/benchmarks.md#planner): one CBC solve of Eq. 14 per
// app (examples/plan/) at 28 and 840 slices, at about half of the A+S+T space's max
// serviceable demand there (docs/results/jigsawserve.md); and the max-demand search.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "plan/jigsawserve/plan_spec.hpp"
#include "plan/jigsawserve/planner.hpp"
#include "plan/ppipe/planner.hpp"
#include "plan/ppipe/spec.hpp"

namespace {

using namespace tessera::plan;
namespace ppipe = tessera::ppipe;

void BM_Plan(benchmark::State& state, const std::string& app, int slices, double demand) {
  PlanSpec spec =
      load_plan_spec(std::string(TESSERA_SOURCE_DIR) + "/examples/plan/" + app + ".yaml");
  spec.input.slices = slices;
  spec.input.demand_rps = demand;
  JigsawPlan plan;
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

// PPipe planner solve times (docs/benchmarks.md#ppipe-planner): the A.2 MILP for one of the
// paper's groups (G1..G6, three DNNs, MAF-2019 weights) on one of its clusters, the NP plan
// (for the batch-build estimate) solved once before the timed loop. Counters: CBC's proven
// relative gap, the objective min_m x_m / w_m, each DNN's planned req/s, and whether the
// plan passed the re-check outside the solver.
PpipeInput paper_instance(const std::string& cluster, const std::string& group, int high, int low) {
  PpipeInput in;
  in.cluster = paper_cluster(cluster, high, low);
  in.dnns = load_ppipe_dnns(std::string(TESSERA_SOURCE_DIR) + "/data/profiles/ppipe",
                            paper_group(group), 5.0, "L4");
  if (std::getenv("PPIPE_POOLED")) in.options.one_config_per_template = false;
  if (std::getenv("PPIPE_NOINT")) in.options.integer_gpus_per_position = false;
  if (std::getenv("PPIPE_LOG")) in.options.milp.log = true;
  if (std::getenv("PPIPE_REPO")) in.options.repo_templates = true;
  if (std::getenv("PPIPE_NOPRE")) in.options.milp.preprocess = false;
  if (const char* t = std::getenv("PPIPE_TIME")) in.options.milp.time_limit_s = std::atof(t);
  return in;
}

void ppipe_counters(benchmark::State& state, const PpipeResult& r) {
  state.counters["cbc_s"] = r.plan.solve.seconds;
  state.counters["gap"] = r.plan.solve.gap;
  state.counters["objective"] = r.plan.solve.objective;
  state.counters["configs"] = r.plan.solve.configurations;
  state.counters["check_ok"] = r.ok() ? 1 : 0;
  for (size_t m = 0; m < r.plan.dnns.size(); ++m) {
    state.counters["x" + std::to_string(m)] = r.plan.dnns[m].throughput;
  }
}

void BM_Ppipe(benchmark::State& state, const PpipeInput& in) {
  const ppipe::PpipePlan np = plan_np(in).plan;
  PpipeResult r;
  for (auto _ : state) {
    r = plan_ppipe(in, &np);
    benchmark::DoNotOptimize(r.plan.dnns.data());
  }
  ppipe_counters(state, r);
}

void BM_PpipeBaseline(benchmark::State& state, const PpipeInput& in, const std::string& method) {
  PpipeResult r;
  for (auto _ : state) {
    r = method == "np" ? plan_np(in) : plan_dart_r(in);
    benchmark::DoNotOptimize(r.plan.dnns.data());
  }
  ppipe_counters(state, r);
}

// 3 and 4 GPU types: HC1's L4 and P4 with T4 (and V100) added, 100 GPUs in all.
PpipeInput mixed_instance(const std::string& group, int types) {
  PpipeInput in = paper_instance("HC1", group, 25, 75);
  auto gpu = [](const std::string& n, int count, double nic, int mps) {
    ppipe::GpuClass g;
    g.name = n;
    g.count = count;
    g.nic_gbps = nic;
    g.max_mps = mps;
    return g;
  };
  if (types == 3) {
    in.cluster.classes = {gpu("L4", 25, 32, 4), gpu("P4", 38, 32, 1), gpu("T4", 37, 50, 4)};
  } else {
    in.cluster.classes = {gpu("L4", 13, 32, 4), gpu("V100", 12, 32, 4), gpu("P4", 38, 32, 1),
                          gpu("T4", 37, 50, 4)};
  }
  return in;
}

const bool kPpipeRegistered = [] {
  for (const std::string c : {"HC1", "HC2", "HC3", "HC4"}) {
    for (const std::string g : {"G1", "G2", "G3", "G4", "G5", "G6"}) {
      benchmark::RegisterBenchmark(("BM_Ppipe/" + c + "/" + g).c_str(), BM_Ppipe,
                                   paper_instance(c, g, 25, 75))
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const std::string g : {"G1", "G2", "G3", "G4", "G5", "G6"}) {
    benchmark::RegisterBenchmark(("BM_Ppipe/HC1_100k/" + g).c_str(), BM_Ppipe,
                                 paper_instance("HC1", g, 25'000, 75'000))
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
  for (int types : {3, 4}) {
    for (const std::string g : {"G1", "G4"}) {
      benchmark::RegisterBenchmark(("BM_Ppipe/types" + std::to_string(types) + "/" + g).c_str(),
                                   BM_Ppipe, mixed_instance(g, types))
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const std::string c : {"HC1", "HC2", "HC3", "HC4"}) {
    for (const std::string m : {"np", "dart-r"}) {
      benchmark::RegisterBenchmark(("BM_PpipeBaseline/" + c + "/G1/" + m).c_str(), BM_PpipeBaseline,
                                   paper_instance(c, "G1", 25, 75), m)
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}();

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
