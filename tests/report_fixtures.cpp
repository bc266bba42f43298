#include "report_fixtures.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>

#include "control/replan_report.hpp"
#include "experiments/comparison.hpp"
#include "metrics/report.hpp"
#include "plan/jigsawserve/plan_report.hpp"
#include "plan/jigsawserve/plan_spec.hpp"
#include "plan/jigsawserve/planner.hpp"
#include "policy/policy_set.hpp"
#include "sim/simulator.hpp"
#include "spec/run_spec.hpp"

namespace tessera::testing_fixtures {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot(TESSERA_SOURCE_DIR);

}  // namespace

fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("tessera_report_test_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_simulate_output(const fs::path& dir) {
  const RunSpec run = load_run_spec(kRoot / "examples" / "traffic" / "run.yaml");
  auto arrivals = make_run_arrivals(run);
  Simulator sim(run.app, run.deployment, run.profiles, PolicySet(run.policies), run.sim);
  sim.run(*arrivals);
  write_report(dir, summarize(sim.metrics(), run.app), sim.metrics(), run.app);
}

void write_compare_output(const fs::path& dir) {
  const RunSpec run = load_run_spec(kRoot / "examples" / "traffic" / "run.yaml");
  const auto rows = run_comparison(run, comparison_cases(run, {"naive", "nexus", "pard"}, {}, {}));
  write_comparison(dir, rows, run.app);
}

void write_plan_output(const fs::path& dir) {
  plan::PlanSpec spec = plan::load_plan_spec(kRoot / "examples" / "plan" / "traffic.yaml");
  const plan::JigsawPlan p = plan::make_plan(spec.input, spec.options);
  ASSERT_TRUE(p.has_plan());
  fs::create_directories(dir);
  std::ofstream(dir / "plan.json") << plan::plan_to_json(p, spec.input).dump(2);
}

void write_replan_output(const fs::path& dir) {
  // A day of 24 one-hour bins: two spaces, one of which predicts exactly like the other
  // (identical lines), and a last bin with no arrivals (stragglers only).
  std::vector<control::ReplanResult> runs;
  for (const char* space : {"A+S+T", "A+S"}) {
    control::ReplanResult r;
    r.space = space;
    r.bin = 3600;
    r.slices_available = 28;
    r.accuracy_max = 1.0;
    for (int b = 0; b < 25; ++b) {
      control::BinRecord rec;
      rec.bin = b;
      const double demand = b < 24 ? 40.0 + 30.0 * std::sin(b / 24.0 * 6.283) : 0.0;
      rec.demand_rps = demand;
      rec.predicted_rps = demand * 1.05;
      rec.planned_rps = demand;
      rec.slices = static_cast<int>(demand / 4) + (r.space == "A+S" ? 3 : 0);
      rec.planned_accuracy = r.space == "A+S" ? 0.99 : 0.97;
      rec.finished = b < 24 ? 1000 : 3;
      rec.ok = b < 24 ? 990 - static_cast<uint64_t>(b % 5) : 0;
      rec.late = rec.finished - rec.ok;
      rec.accuracy = 0.95;
      r.bins.push_back(rec);
      r.submitted += rec.finished;
      r.ok += rec.ok;
      r.late += rec.late;
    }
    r.solves = 20;
    runs.push_back(r);
  }
  control::write_replan_report(dir, runs, "fixture_app");
}

void write_loadgen_output(const fs::path& dir) {
  const RunSpec run = load_run_spec(kRoot / "tests" / "data" / "chain" / "run.yaml");
  // What a client sees: arrivals and outcomes, no batches or queues.
  MetricsCollector m(run.app, 1.0);
  for (uint64_t i = 0; i < 200; ++i) {
    const double t = 0.05 * static_cast<double>(i);
    m.on_arrival(t);
    RequestRecord r;
    r.id = i;
    r.arrival = t;
    r.finish = t + 0.020 + 0.0004 * static_cast<double>(i % 50);
    r.outcome = i % 40 == 39 ? Outcome::kDropped : Outcome::kOk;
    if (r.outcome == Outcome::kDropped) r.reason = DropReason::kQueueFull;
    r.accuracy = 0.8;
    m.on_request_done(r);
  }
  // A client measures neither GPU time nor sub-requests (loadgen's client_unmeasured()).
  Unmeasured client;
  client.gpu =
      "a load generator is a client: the server's batches and GPU time are on its /metrics";
  client.subrequests = "a client sees whole requests, not the sub-requests inside the server";
  write_report(dir, summarize(m, run.app, client), m, run.app);
  std::ofstream(dir / "loadgen.json")
      << R"({"connections": 8, "http_status": {"200": 195, "503": 5}, "max_send_lag_ms": 0.4,)"
      << R"( "sent_late": 0, "sent_late_no_free_connection": 0, "sent_late_client_slow": 0,)"
      << R"( "wall_s": 10.2})";
}

void write_crowded_labels_output(const fs::path& dir) {
  // README's comparison of the planned traffic app under four policies.
  fs::create_directories(dir / "compare");
  std::ofstream(dir / "compare" / "comparison.csv")
      << "label,policy,load_scale,lambda,submitted,ok,late,dropped,failed,goodput_rps,"
         "slo_attainment,drop_rate,invalid_rate,p50_ms,p99_ms\n"
      << "\"naive\",naive,1,0.5,8819,6681,2138,0,0,38.9,0.7576,0,0.241,150.2,2218\n"
      << "\"jigsawserve\",jigsawserve,1,0.5,8819,6304,0,2515,0,36.7,0.7148,0.2852,0.0063,90.1,196\n"
      << "\"clipper++\",clipper++,1,0.5,8819,7241,0,1578,0,42.1,0.8211,0.1789,0,120.4,366\n"
      << "\"pard\",pard,1,0.5,8819,7724,0,1095,0,45.0,0.8758,0.1242,0.0033,143.7,614.4\n";
  // A run with README's latency percentiles (143.7 / 488.8 / 614.4 ms) and a 650 ms SLO.
  RunSpec run = load_run_spec(kRoot / "tests" / "data" / "chain" / "run.yaml");
  run.app.slo = 0.650;
  MetricsCollector m(run.app, 1.0);
  const std::vector<std::pair<double, double>> quantiles = {
      {0.0, 0.020}, {0.5, 0.1437}, {0.9, 0.4888}, {0.99, 0.6144}, {1.0, 0.640}};
  for (uint64_t i = 0; i < 2000; ++i) {
    const double q = static_cast<double>(i) / 1999.0, t = 0.01 * static_cast<double>(i);
    std::size_t k = 1;
    while (k + 1 < quantiles.size() && quantiles[k].first < q) ++k;
    const auto [q0, l0] = quantiles[k - 1];
    const auto [q1, l1] = quantiles[k];
    m.on_arrival(t);
    RequestRecord r;
    r.id = i;
    r.arrival = t;
    r.finish = t + l0 + (l1 - l0) * (q - q0) / (q1 - q0);
    r.outcome = Outcome::kOk;
    r.accuracy = 0.9;
    m.on_request_done(r);
  }
  write_report(dir / "run", summarize(m, run.app), m, run.app);
}

}  // namespace tessera::testing_fixtures
