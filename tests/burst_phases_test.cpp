// Burst phases (src/experiments/burst_phases.hpp) and the metrics behind them: the work
// spent on lost requests, split by the task that did it, per window and per task.

#include "experiments/burst_phases.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "engine/deployment_view.hpp"
#include "metrics/metrics.hpp"
#include "two_task_app.hpp"

namespace tessera {
namespace {

TEST(BurstPhases, OnsetPlateauDecayCalm) {
  const std::vector<bool> overloaded = {false, true,  true,  true,  true,  true, false,
                                        false, false, false, false, false, true, false};
  using P = BurstPhase;
  const std::vector<P> expected = {P::kCalm,    P::kOnset, P::kOnset, P::kOnset, P::kPlateau,
                                   P::kPlateau, P::kDecay, P::kDecay, P::kDecay, P::kDecay,
                                   P::kDecay,   P::kCalm,  P::kOnset, P::kDecay};
  EXPECT_EQ(classify_burst_phases(overloaded, {3, 5}), expected);
  // A burst that starts inside the previous one's decay starts with its onset.
  EXPECT_EQ(classify_burst_phases({true, false, true, true}, {1, 5}),
            (std::vector<P>{P::kOnset, P::kDecay, P::kOnset, P::kPlateau}));
}

RequestRecord ended(Time at, Outcome outcome, TaskId task, const std::vector<Time>& gpu) {
  RequestRecord r;
  r.arrival = at;
  r.finish = at;
  r.outcome = outcome;
  r.drop_task = task;
  r.gpu_by_task = gpu;
  for (Time g : gpu) r.gpu_time += g;
  return r;
}

TEST(BurstPhases, WastedWorkIsChargedToTheTasksThatDidItInTheWindowTheRequestEnded) {
  const App app = testing::two_task_app("phases");
  MetricsCollector m(app, 1.0);
  const std::vector<Time> both = {0.010, 0.020};
  const std::vector<Time> first = {0.005, 0.0};
  m.on_request_done(ended(0.5, Outcome::kOk, 0, both));         // not wasted
  m.on_request_done(ended(1.5, Outcome::kLate, 0, both));       // wasted at a and b
  m.on_request_done(ended(2.5, Outcome::kDropped, 1, first));   // dropped at b: a's work
  m.on_request_done(ended(2.7, Outcome::kDropped, 0, {0, 0}));  // dropped before any work
  EXPECT_DOUBLE_EQ(m.tasks()[0].wasted_gpu, 0.015);
  EXPECT_DOUBLE_EQ(m.tasks()[1].wasted_gpu, 0.020);
  EXPECT_DOUBLE_EQ(m.wasted_gpu_seconds(), 0.035);

  // Window 0 calm, 1 onset, 2 decay.
  const auto phases = burst_phase_stats(
      m, {BurstPhase::kCalm, BurstPhase::kOnset, BurstPhase::kDecay}, app.tasks.size());
  const PhaseStats& calm = phases[static_cast<std::size_t>(BurstPhase::kCalm)];
  const PhaseStats& onset = phases[static_cast<std::size_t>(BurstPhase::kOnset)];
  const PhaseStats& decay = phases[static_cast<std::size_t>(BurstPhase::kDecay)];
  EXPECT_EQ(calm.ok, 1u);
  EXPECT_DOUBLE_EQ(calm.wasted_gpu[0] + calm.wasted_gpu[1], 0.0);
  EXPECT_EQ(onset.late, 1u);
  EXPECT_DOUBLE_EQ(onset.wasted_gpu[0], 0.010);
  EXPECT_DOUBLE_EQ(onset.wasted_gpu[1], 0.020);
  EXPECT_EQ(decay.dropped, 2u);
  EXPECT_DOUBLE_EQ(decay.wasted_gpu[0], 0.005);
  EXPECT_EQ(decay.dropped_at[0], 1u);
  EXPECT_EQ(decay.dropped_at[1], 1u);
  EXPECT_EQ(phases[static_cast<std::size_t>(BurstPhase::kPlateau)].windows, 0);
}

}  // namespace
}  // namespace tessera
