// `tessera ppipe-simulate` end to end (the binary, as a user runs it) on a tiny hand-built
// plan: the table and --csv rows it writes, the --sweep stop, --trace arrivals, and clear
// errors for a bad PLAN.json and bad flags. Also fit_trace_to_rate (workload/trace_fit),
// which builds the trace arrivals. Seconds to run: 2 simulated seconds per point.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/ppipe/plan_json.hpp"
#include "workload/trace_fit.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// ---- fit_trace_to_rate ---------------------------------------------------------------------

std::vector<Arrival> times(std::initializer_list<double> ts) {
  std::vector<Arrival> out;
  for (double t : ts) out.push_back(Arrival{t, 7, 3, 0.0});
  return out;
}

TEST(TraceFit, KeepsTheGapsAndFillsThePointWithRateTimesDuration) {
  // 4 arrivals at 10, 11, 13, 16 s repeat every 6 x 4/3 = 8 s: 0 1 3 6 | 8 9 11 14 | 16 17.
  // 2 req/s for 4.5 s keeps the first ceil(9) = 9, scaled so that the 10th (17) is 4.5 s.
  const auto out = fit_trace_to_rate(times({10, 11, 13, 16}), 2.0, 4.5, "t.csv");
  const std::vector<double> trace_time = {0, 1, 3, 6, 8, 9, 11, 14, 16};
  ASSERT_EQ(out.size(), trace_time.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(out[i].time, trace_time[i] * 4.5 / 17.0, 1e-12) << i;
  }
  EXPECT_EQ(out[3].input_tokens, 7u);  // rows keep their fields
  // Exactly rate x duration arrivals, within [0, duration).
  const auto many = fit_trace_to_rate(times({0, 0.1, 0.5, 3}), 100.0, 60.0, "t.csv");
  EXPECT_EQ(many.size(), 6000u);
  EXPECT_GE(many.front().time, 0.0);
  EXPECT_LT(many.back().time, 60.0);
}

TEST(TraceFold, OverlaysSegmentsOfTheTraceAtTheRate) {
  // 5 arrivals at 0, 1, 2.5, 3, 4: rate 1 req/s; at 2 req/s they fold modulo 4 / 2 = 2 s:
  // 0, 1, 0.5, 1, 0 -> sorted 0 0 0.5 1 1, repeated every 2 s.
  const auto out = fold_trace_to_rate(times({0, 1, 2.5, 3, 4}), 2.0, 5.0, "t.csv");
  const std::vector<double> want = {0, 0, 0.5, 1, 1, 2, 2, 2.5, 3, 3, 4, 4, 4.5};
  ASSERT_EQ(out.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[i].time, want[i], 1e-12) << i;
  EXPECT_THROW(fold_trace_to_rate(times({1, 1}), 1.0, 1.0, "t.csv"), std::invalid_argument);
}

TEST(TraceFit, RejectsUnusableTracesAndArguments) {
  EXPECT_THROW(fit_trace_to_rate(times({1}), 1.0, 1.0, "t.csv"), std::invalid_argument);
  EXPECT_THROW(fit_trace_to_rate(times({1, 1}), 1.0, 1.0, "t.csv"), std::invalid_argument);
  EXPECT_THROW(fit_trace_to_rate(times({1, 3, 2}), 1.0, 1.0, "t.csv"), std::invalid_argument);
  EXPECT_THROW(fit_trace_to_rate(times({1, 2}), 0.0, 1.0, "t.csv"), std::invalid_argument);
  EXPECT_THROW(fit_trace_to_rate(times({1, 2}), 1.0, -1.0, "t.csv"), std::invalid_argument);
  try {
    fit_trace_to_rate(times({1, 2}), 1e9, 1e6, "big.csv", 1000);
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("big.csv"), std::string::npos) << e.what();
  }
}

// ---- the command -----------------------------------------------------------------------------

#ifdef TESSERA_BINARY

struct CmdResult {
  int status = 0;
  std::string out;  // stdout and stderr together
};

class PpipeSimulateCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tessera_ppipe_simulate_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ppipe::write_plan_file(dir_ / "plan.json", tiny_plan());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // WideResNet-101 on 2 L4 + 4 T4: the whole model on 1 L4 at batch 2, and blocks [0,4)
  // on 4 T4 -> [4,10) on 2 half-L4 vGPUs at batch 1. Planned 100 req/s (well within).
  static ppipe::PpipePlan tiny_plan() {
    ppipe::PpipePlan plan;
    plan.cluster.classes = {{"L4", 2, 2, 50.0, 4}, {"T4", 4, 2, 50.0, 4}};
    ppipe::DnnPlan d;
    d.dnn = "wide_resnet101_2";
    d.slo_ms = 67.1;
    d.throughput = 100.0;
    ppipe::Pipeline whole;
    whole.batch = 2;
    whole.partitions.push_back({0, 10, "L4", 1, 1});
    ppipe::Pipeline split;
    split.batch = 1;
    split.partitions.push_back({0, 4, "T4", 1, 4});
    split.partitions.push_back({4, 10, "L4", 2, 2});
    d.pipelines = {whole, split};
    plan.dnns.push_back(d);
    plan.solve.status = plan::PlanStatus::kOptimal;
    return plan;
  }

  CmdResult run(const std::string& args) const {
    const fs::path log = dir_ / "log.txt";
    const std::string cmd = std::string(TESSERA_BINARY) + " ppipe-simulate " + args +
                            " --profiles " + TESSERA_SOURCE_DIR + "/data/profiles/ppipe > " +
                            log.string() + " 2>&1";
    CmdResult r;
    r.status = std::system(cmd.c_str());
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    r.out = ss.str();
    return r;
  }

  std::vector<std::vector<std::string>> csv(const std::string& name) const {
    std::ifstream in(dir_ / name);
    std::vector<std::vector<std::string>> rows;
    std::string line;
    while (std::getline(in, line)) {
      std::vector<std::string> cells;
      std::stringstream ss(line);
      std::string cell;
      while (std::getline(ss, cell, ',')) cells.push_back(cell);
      if (!line.empty() && line.back() == ',') cells.emplace_back();
      rows.push_back(cells);
    }
    return rows;
  }

  std::string plan_file() const { return (dir_ / "plan.json").string(); }
  fs::path dir_;
};

TEST_F(PpipeSimulateCommand, TableAndCsvRowsPerPointAndTheSweepStops) {
  const CmdResult r = run(plan_file() + " --loads 1.0,0.5 --duration 2 --sweep --csv " +
                          (dir_ / "points.csv").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("| dnn | load | rate (req/s) |"), std::string::npos) << r.out;
  // 100 req/s on a plan with plenty of room: >= 99 % at load 1.0, so the sweep stops there.
  EXPECT_NE(r.out.find("max load at >= 99 % attainment: 1.00"), std::string::npos) << r.out;
  const auto rows = csv("points.csv");
  ASSERT_EQ(rows.size(), 2u);  // header + one point (the sweep stopped)
  const std::vector<std::string> header = {"method",
                                           "data_plane",
                                           "arrivals",
                                           "dnn",
                                           "load",
                                           "rate_rps",
                                           "duration_s",
                                           "submitted",
                                           "goodput_rps",
                                           "slo_attainment",
                                           "drop_rate",
                                           "late_rate",
                                           "batches",
                                           "mean_batch",
                                           "probes_per_batch",
                                           "transfers",
                                           "transfer_mean_ms",
                                           "transfer_p50_ms",
                                           "transfer_p99_ms",
                                           "busy_gpu_s"};
  EXPECT_EQ(rows[0], header);
  const auto& p = rows[1];
  ASSERT_EQ(p.size(), header.size());
  EXPECT_EQ(p[0], "ppipe");
  EXPECT_EQ(p[1], "reservation");
  EXPECT_EQ(p[2], "poisson");
  EXPECT_EQ(p[3], "wide_resnet101_2");
  EXPECT_DOUBLE_EQ(std::stod(p[4]), 1.0);
  EXPECT_DOUBLE_EQ(std::stod(p[5]), 100.0);
  EXPECT_NEAR(std::stod(p[7]), 200.0, 60.0);  // Poisson, 2 s at 100 req/s
  EXPECT_GE(std::stod(p[9]), 0.99);
  EXPECT_LE(std::stod(p[9]), 1.0);
  EXPECT_GT(std::stoull(p[12]), 0u);                // batches
  EXPECT_GE(std::stod(p[14]), 1.0);                 // probes per batch
  EXPECT_NE(p[19].find("L4:"), std::string::npos);  // both classes did work
  EXPECT_NE(p[19].find("T4:"), std::string::npos);
}

TEST_F(PpipeSimulateCommand, SharedNicsRunsTheDnnsTogetherAndNeedsTheReservationPlane) {
  const CmdResult r = run(plan_file() + " --loads 1.0 --duration 2 --shared-nics --csv " +
                          (dir_ / "points.csv").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("shared NICs: 0 of"), std::string::npos) << r.out;  // one DNN
  const auto rows = csv("points.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][1], "reservation-shared-nics");
  EXPECT_GE(std::stod(rows[1][9]), 0.99);
  const CmdResult bad = run(plan_file() + " --duration 1 --shared-nics --data-plane reactive");
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.out.find("--shared-nics needs --data-plane reservation"), std::string::npos)
      << bad.out;
}

TEST_F(PpipeSimulateCommand, OverloadFailsTheSweepAndTheReactivePlaneRuns) {
  const CmdResult r = run(plan_file() + " --loads 8,6 --duration 1 --sweep --data-plane reactive " +
                          "--csv " + (dir_ / "points.csv").string());
  ASSERT_EQ(r.status, 0) << r.out;
  // 800 and 600 req/s are far beyond the plan: no load holds 99 %, both points run.
  EXPECT_NE(r.out.find("max load at >= 99 % attainment: 0.00"), std::string::npos) << r.out;
  const auto rows = csv("points.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1][1], "reactive");
  EXPECT_LT(std::stod(rows[1][9]), 0.9);
  EXPECT_DOUBLE_EQ(std::stod(rows[1][14]), 0.0);  // the reactive plane does not probe
}

TEST_F(PpipeSimulateCommand, TraceArrivalsAtThePointsRate) {
  const CmdResult r =
      run(plan_file() + " --loads 1 --duration 5 --trace " + TESSERA_SOURCE_DIR +
          "/data/traces/azure_llm_code_2023.csv --csv " + (dir_ / "t.csv").string());
  ASSERT_EQ(r.status, 0) << r.out;
  const auto rows = csv("t.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][2], "trace-fold");
  // Folding keeps the mean rate over a whole period (88 s here); 5 s of it is near it.
  EXPECT_NEAR(std::stod(rows[1][7]), 500.0, 125.0);
  const CmdResult c = run(plan_file() + " --loads 1 --duration 5 --trace-fit compress --trace " +
                          TESSERA_SOURCE_DIR + "/data/traces/azure_llm_code_2023.csv --csv " +
                          (dir_ / "c.csv").string());
  ASSERT_EQ(c.status, 0) << c.out;
  const auto crows = csv("c.csv");
  ASSERT_EQ(crows.size(), 2u);
  EXPECT_EQ(crows[1][2], "trace-compress");
  EXPECT_DOUBLE_EQ(std::stod(crows[1][7]), 500.0);  // exactly rate x duration
}

TEST_F(PpipeSimulateCommand, ClearErrorsForABadPlanAndBadFlags) {
  {
    std::ofstream(dir_ / "bad.json") << "{\"method\": \"ppipe\", \"dnns\": [";
    const CmdResult r = run((dir_ / "bad.json").string());
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("bad.json"), std::string::npos) << r.out;
  }
  {
    std::ofstream(dir_ / "wrong.json") << "{\"method\": \"ppipe\", \"dnns\": 3}";
    const CmdResult r = run((dir_ / "wrong.json").string());
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("wrong.json: "), std::string::npos) << r.out;  // file and field
  }
  {
    const CmdResult r = run((dir_ / "missing.json").string());
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("missing.json"), std::string::npos) << r.out;
  }
  {
    const CmdResult r = run(plan_file() + " --data-plane fast");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("--data-plane"), std::string::npos) << r.out;
  }
  {
    const CmdResult r = run(plan_file() + " --loads 0.5,abc");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("--loads"), std::string::npos) << r.out;
  }
  {
    const CmdResult r = run(plan_file() + " --trace-fit stretch");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("--trace-fit"), std::string::npos) << r.out;
  }
  {
    const CmdResult r = run(plan_file() + " --duration 0");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("--duration"), std::string::npos) << r.out;
  }
  {
    std::ofstream(dir_ / "trace.csv") << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                         "2023-11-16 18:17:03.9799600,1,1\n";
    const CmdResult r = run(plan_file() + " --trace " + (dir_ / "trace.csv").string());
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("trace.csv"), std::string::npos) << r.out;
  }
  {
    // A plan naming a model with no profile: the error names the model.
    ppipe::PpipePlan plan = tiny_plan();
    plan.dnns[0].dnn = "no_such_model";
    ppipe::write_plan_file(dir_ / "nomodel.json", plan);
    const CmdResult r = run((dir_ / "nomodel.json").string());
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("no_such_model"), std::string::npos) << r.out;
  }
}

#endif  // TESSERA_BINARY

}  // namespace
}  // namespace tessera
