// JigsawServe's controller loop (src/control): demand prediction, plan caching with the
// max-demand fallback, and a re-planned run in simulation (its deployment diff is the
// engine's: engine_test's LiveInstances).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "control/demand_predictor.hpp"
#include "control/live_replanner.hpp"
#include "control/plan_cache.hpp"
#include "control/replan_report.hpp"
#include "control/replanning.hpp"
#include "plan_fixture.hpp"
#include "policy/presets.hpp"
#include "test_support.hpp"

namespace tessera::control {
namespace {

using tessera::testing::VectorSource;

TEST(DemandPredictor, MeanOfTheLastBins) {
  DemandPredictor p(3);
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(p.predict(), 0.0);
  p.observe(10);
  EXPECT_DOUBLE_EQ(p.predict(), 10.0);
  p.observe(20);
  p.observe(30);
  EXPECT_DOUBLE_EQ(p.predict(), 20.0);
  p.observe(40);  // 10 leaves the window
  EXPECT_DOUBLE_EQ(p.predict(), 30.0);
  EXPECT_THROW(DemandPredictor(0), std::invalid_argument);
}

plan::PlanInput tiny_input() { return testing::tiny_plan_input(); }

plan::PlanOptions tiny_options() {
  plan::PlanOptions o;
  o.space = plan::parse_search_space("A+S+T");
  return o;
}

TEST(PlanCache, RoundsDemandUpToTheGridAndSolvesEachPointOnce) {
  PlanCache cache(tiny_input(), tiny_options(), 0.10);
  const auto first = cache.plan_for(50.0);
  ASSERT_NE(first.plan, nullptr);
  EXPECT_TRUE(first.solved);
  EXPECT_GE(first.grid_demand_rps, 50.0);
  EXPECT_LT(first.grid_demand_rps, 55.0 + 1e-9);
  const auto again = cache.plan_for(first.grid_demand_rps * 0.99);  // same grid point
  EXPECT_FALSE(again.solved);
  EXPECT_EQ(again.plan, first.plan);
  EXPECT_EQ(cache.solves(), 1);
}

TEST(PlanCache, FallsBackToTheMaxDemandPlan) {
  PlanCache cache(tiny_input(), tiny_options(), 0.05);
  const auto huge = cache.plan_for(1e6);
  ASSERT_NE(huge.plan, nullptr);
  EXPECT_TRUE(huge.fallback);
  EXPECT_NEAR(huge.grid_demand_rps, cache.max_demand().max_demand_rps, 1e-9);
  EXPECT_LE(huge.plan->evaluation.slices, 14);
}

// Arrivals at `rate[b]` req/s, evenly spaced, in consecutive bins of `bin` seconds.
std::vector<Time> stepped(const std::vector<double>& rate, Time bin) {
  std::vector<Time> t;
  for (std::size_t b = 0; b < rate.size(); ++b) {
    const int n = static_cast<int>(rate[b] * bin);
    for (int i = 0; i < n; ++i) t.push_back(static_cast<double>(b) * bin + (i + 0.5) * bin / n);
  }
  return t;
}

TEST(Replanning, PlansEachBinFromThePastAndAccountsForEveryRequest) {
  const plan::PlanInput in = tiny_input();
  ControllerOptions c;
  c.bin = 10.0;
  c.history_bins = 2;
  c.reconfiguration_delay = 1.0;
  c.demand_step = 0.0;
  const std::vector<double> rates = {100, 100, 400, 400, 400, 100};
  const auto times = stepped(rates, c.bin);
  VectorSource counting(times);
  const auto counts = count_per_bin(counting, c.bin);
  ASSERT_EQ(counts.size(), rates.size());
  for (bool disruptive : {false, true}) {
    c.disruptive = disruptive;
    VectorSource source(times);
    const ReplanResult r =
        run_replanning(in, tiny_options(), preset_config("jigsawserve"), {}, c, source, counts);
    ASSERT_GE(r.bins.size(), rates.size());
    // Bin 0 is sized for its own demand; bin k for the mean of bins k-2 and k-1.
    EXPECT_NEAR(r.bins[0].predicted_rps, 100.0, 1e-9);
    EXPECT_NEAR(r.bins[1].predicted_rps, 100.0, 1e-9);
    EXPECT_NEAR(r.bins[3].predicted_rps, 250.0, 1e-9);
    EXPECT_NEAR(r.bins[4].predicted_rps, 400.0, 1e-9);
    // The under-predicted jump at bin 2 needs more slices from bin 3 on.
    EXPECT_GT(r.bins[4].slices, r.bins[1].slices);
    EXPECT_GT(r.bins[3].started, 0);
    EXPECT_EQ(r.submitted, times.size());
    EXPECT_EQ(r.ok + r.late + r.dropped + r.failed, r.submitted);
    EXPECT_EQ(r.failed, 0u) << (disruptive ? "disruptive" : "make-before-break");
    const ReplanSummary s = summarize_replan(r);
    EXPECT_GT(s.slices_pct, 0.0);
    EXPECT_LE(s.slices_pct, 100.0);
    EXPECT_GE(s.accuracy_drop_pct, 0.0);
  }
}

// A space with no plan at any demand is reported as an infeasible row (comparison.md,
// summary.json) instead of aborting the run; the other spaces keep their results. The
// per-sub-request violations sit next to the per-frame ones.
TEST(Replanning, ASpaceWithNoPlanIsAnInfeasibleRow) {
  ControllerOptions c;
  c.bin = 10.0;
  c.history_bins = 1;
  c.reconfiguration_delay = 1.0;
  const auto times = stepped({100, 100}, c.bin);
  VectorSource counting(times);
  const auto counts = count_per_bin(counting, c.bin);

  plan::PlanInput tight = tiny_input();
  tight.latency_slo_ms = 5.0;  // below the fastest path: nothing is serviceable
  VectorSource none(times);
  const ReplanResult bad =
      run_replanning(tight, tiny_options(), preset_config("jigsawserve"), {}, c, none, counts);
  EXPECT_TRUE(bad.infeasible);
  EXPECT_NE(bad.message.find("no plan of this search space serves any demand"), std::string::npos)
      << bad.message;
  EXPECT_EQ(bad.submitted, 0u);

  VectorSource source(times);
  const ReplanResult good = run_replanning(tiny_input(), tiny_options(),
                                           preset_config("jigsawserve"), {}, c, source, counts);
  ASSERT_FALSE(good.infeasible);
  EXPECT_EQ(good.submitted, times.size());
  // det fans out 2 cls items on average: about 2 final results (sub-requests) per frame.
  EXPECT_GT(good.subrequests, 1.5 * static_cast<double>(good.submitted));
  EXPECT_LT(good.subrequests, 2.5 * static_cast<double>(good.submitted));

  const auto dir = std::filesystem::path(::testing::TempDir()) / "replan_infeasible_row";
  std::filesystem::remove_all(dir);
  write_replan_report(dir, {bad, good}, "tiny");
  std::ifstream md(dir / "comparison.md");
  const std::string table((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(table.find("| A+S+T | infeasible: no plan of this search space"), std::string::npos)
      << table;
  EXPECT_NE(table.find("per sub-request"), std::string::npos);
  std::ifstream js(dir / "summary.json");
  const auto summary = nlohmann::json::parse(js);
  ASSERT_EQ(summary.size(), 2u);
  EXPECT_TRUE(summary[0].value("infeasible", false));
  EXPECT_FALSE(summary[1].contains("infeasible"));
  EXPECT_NEAR(summary[1]["subrequests"]["total"].get<double>(), good.subrequests, 1e-6);
  EXPECT_TRUE(std::filesystem::exists(dir / "A+S+T" / "bins.csv"));
  std::filesystem::remove_all(dir);
}

TEST(Replanning, RejectsADelayLongerThanTheBin) {
  ControllerOptions c;
  c.bin = 10.0;
  c.reconfiguration_delay = 10.0;
  VectorSource source({0.0});
  EXPECT_THROW(run_replanning(tiny_input(), tiny_options(), preset_config("jigsawserve"), {}, c,
                              source, {1}),
               std::invalid_argument);
}

// The live server's controller (serve --replan) fed, window by window, the demand series
// the simulated controller observes makes the same plan at every bin after the first (bin
// 0's plan is the simulation's sized-in-advance deployment; a live server starts from its
// run spec's). Windows are ticked explicitly.
TEST(LiveReplanner, MakesTheSimulatedPlanSequenceForTheSameDemand) {
  const plan::PlanInput in = tiny_input();
  ControllerOptions c;
  c.bin = 10.0;
  c.history_bins = 2;
  c.reconfiguration_delay = 1.0;
  c.demand_step = 0.05;
  const std::vector<double> rates = {100, 100, 100, 400, 400, 400, 400};  // a step up
  const auto times = stepped(rates, c.bin);
  VectorSource counting(times);
  const auto counts = count_per_bin(counting, c.bin);
  VectorSource source(times);
  const ReplanResult sim =
      run_replanning(in, tiny_options(), preset_config("jigsawserve"), {}, c, source, counts);
  ASSERT_GE(sim.bins.size(), rates.size());

  LiveReplanner live(in, tiny_options(), c);
  std::vector<int> applied_at;
  for (std::size_t b = 1; b < rates.size(); ++b) {
    const LiveDecision d = live.close_window(counts[b - 1], c.bin);
    const BinRecord& want = sim.bins[b];
    EXPECT_EQ(d.window, static_cast<int>(b));
    EXPECT_DOUBLE_EQ(d.measured_rps, static_cast<double>(counts[b - 1]) / c.bin);
    EXPECT_DOUBLE_EQ(d.record.predicted_rps, want.predicted_rps) << "bin " << b;
    EXPECT_DOUBLE_EQ(d.record.planned_rps, want.planned_rps) << "bin " << b;
    EXPECT_EQ(d.record.slices, want.slices) << "bin " << b;
    EXPECT_EQ(d.record.workers, want.workers) << "bin " << b;
    EXPECT_EQ(d.record.fallback, want.fallback) << "bin " << b;
    if (d.apply) {
      applied_at.push_back(static_cast<int>(b));
      EXPECT_EQ(d.apply->total_workers(), want.workers);
    }
    // The simulation reconfigured at this bin only if the live controller changed plan
    // (the live one also applies its first plan at window 1).
    if (b > 1 && want.started + want.stopped > 0) {
      EXPECT_TRUE(d.apply.has_value()) << "bin " << b;
    }
  }
  // The step (seen at window 4) raises the prediction to 250, then 400: new plans there.
  ASSERT_FALSE(applied_at.empty());
  EXPECT_EQ(applied_at.front(), 1);
  EXPECT_NE(std::find(applied_at.begin(), applied_at.end(), 4), applied_at.end());
  EXPECT_NE(std::find(applied_at.begin(), applied_at.end(), 5), applied_at.end());
  EXPECT_GT(sim.bins[5].slices, sim.bins[2].slices);
  EXPECT_NE(plan_summary(sim.bins[5]).find("slices"), std::string::npos);
}

}  // namespace
}  // namespace tessera::control
