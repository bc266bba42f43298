// The metrics collector's spilled time series: closed windows go to a temporary file, and
// everything read back (for_each_window, the report's timeseries.csv) is what the
// collector that kept them in memory has; memory holds only the open tail.

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/deployment_view.hpp"
#include "metrics/metrics.hpp"
#include "metrics/report.hpp"
#include "two_task_app.hpp"

namespace tessera {
namespace {

// Queue lengths that change with the time they are sampled at.
class FakeDeployment final : public DeploymentView {
 public:
  explicit FakeDeployment(const App& app) : app_(app) {}
  const App& app() const override { return app_; }
  const std::vector<Worker*>& workers_of(TaskId) const override { return none_; }
  std::size_t queued_at(TaskId task) const override { return (step * 7 + task * 3) % 11; }
  uint64_t deployment_version() const override { return 0; }
  std::size_t step = 0;

 private:
  const App& app_;
  std::vector<Worker*> none_;
};

// Drives both collectors through the same run: arrivals and finished requests over 2,000
// windows of 0.1 s, some windows empty.
void drive(MetricsCollector& m, const App& app) {
  FakeDeployment d(app);
  for (int i = 0; i < 20000; ++i) {
    const Time t = 0.01 * i + (i % 3 == 0 ? 0.004 : 0.0);
    if ((i / 500) % 4 == 3) continue;  // a quiet stretch: empty windows
    d.step = static_cast<std::size_t>(i);
    m.advance(t, d);
    m.on_arrival(t);
    RequestRecord r;
    r.arrival = t;
    r.finish = t;
    r.outcome = i % 5 == 0 ? Outcome::kLate : i % 7 == 0 ? Outcome::kDropped : Outcome::kOk;
    r.drop_task = static_cast<TaskId>(i % 2);
    const std::vector<Time> gpu = {0.001 * (i % 3), 0.002};
    r.gpu_by_task = gpu;
    r.subrequests = 1.0;
    r.accuracy = 0.5;
    m.on_request_done(r);
  }
  d.step = 99;
  m.advance(200.5, d);
}

std::string read(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(MetricsSpill, SameWindowsAndTimeSeriesAsInMemory) {
  const App app = testing::two_task_app("spill");
  MetricsCollector kept(app, 0.1);
  MetricsCollector spilled(app, 0.1);
  spilled.spill_closed_windows();
  drive(kept, app);
  drive(spilled, app);
  ASSERT_GT(spilled.windows_spilled(), 1500u);
  EXPECT_LT(spilled.windows().size(), 300u);  // only the tail stays in memory
  ASSERT_EQ(spilled.window_count(), kept.windows().size());
  std::size_t seen = 0;
  spilled.for_each_window([&](std::size_t i, const WindowStats& w) {
    ASSERT_EQ(i, seen++);
    const WindowStats& k = kept.windows()[i];
    EXPECT_EQ(w.arrivals, k.arrivals);
    EXPECT_EQ(w.ok, k.ok);
    EXPECT_EQ(w.late, k.late);
    EXPECT_EQ(w.accuracy_sum, k.accuracy_sum);
    EXPECT_EQ(w.subrequests, k.subrequests);
    EXPECT_EQ(w.queue_length, k.queue_length);
    EXPECT_EQ(w.wasted_gpu, k.wasted_gpu);
    EXPECT_EQ(w.dropped_at, k.dropped_at);
  });
  EXPECT_EQ(seen, kept.windows().size());
  // The report reads them back the same way, twice (the file is rewound each time).
  const auto dir =
      std::filesystem::temp_directory_path() / ("tessera_spill_" + std::to_string(::getpid()));
  const nlohmann::json summary = summarize(kept, app);
  write_report(dir / "kept", summary, kept, app);
  write_report(dir / "spilled", summary, spilled, app);
  write_report(dir / "again", summary, spilled, app);
  EXPECT_EQ(read(dir / "kept" / "timeseries.csv"), read(dir / "spilled" / "timeseries.csv"));
  EXPECT_EQ(read(dir / "kept" / "timeseries.csv"), read(dir / "again" / "timeseries.csv"));
  EXPECT_EQ(read(dir / "kept" / "timeseries.svg"), read(dir / "spilled" / "timeseries.svg"));
  std::filesystem::remove_all(dir);
  // A window already written out cannot change.
  RequestRecord late;
  late.finish = 1.0;
  EXPECT_THROW(spilled.on_request_done(late), std::logic_error);
}

}  // namespace
}  // namespace tessera
