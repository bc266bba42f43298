#pragma once

// Small builders shared by the engine and simulator tests.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "profile/profile_table.hpp"
#include "sim/simulator.hpp"
#include "workload/arrival.hpp"

namespace tessera::testing {

// Replays a fixed list of arrival times.
class VectorSource final : public ArrivalSource {
 public:
  explicit VectorSource(std::vector<Time> times) : times_(std::move(times)) {}
  bool next(Arrival& out) override {
    if (i_ >= times_.size()) return false;
    out = Arrival{};
    out.time = times_[i_++];
    return true;
  }
  std::string describe() const override { return "vector"; }

 private:
  std::vector<Time> times_;
  std::size_t i_ = 0;
};

inline std::vector<Time> evenly(std::size_t n, Time gap, Time start = 0.0) {
  std::vector<Time> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(start + static_cast<Time>(i) * gap);
  return out;
}

// A task with one variant named after it.
inline Task make_task(const std::string& name, double fanout = 1.0, double accuracy = 1.0,
                      FanoutDistribution kind = FanoutDistribution::kFixed) {
  Task t;
  t.name = name;
  t.fanout = kind;
  t.variants.push_back(Variant{name, accuracy, fanout});
  return t;
}

inline Edge make_edge(TaskId from, TaskId to, Time delay = 0.0) {
  Edge e;
  e.from = from;
  e.to = to;
  e.delay = delay;
  return e;
}

inline Edge share_edge(TaskId from, TaskId to, double share) {
  Edge e = make_edge(from, to);
  e.mode = EdgeMode::kShare;
  e.share_by_variant = {share};
  return e;
}

// A chain t0 -> t1 -> ... with the given SLO.
inline App chain(int n, Time slo) {
  App app;
  app.name = "chain";
  app.slo = slo;
  for (int i = 0; i < n; ++i) app.tasks.push_back(make_task("t" + std::to_string(i)));
  for (int i = 0; i + 1 < n; ++i) {
    app.edges.push_back(make_edge(static_cast<TaskId>(i), static_cast<TaskId>(i + 1)));
  }
  app.finalize();
  return app;
}

// Latency affine in the batch size: base_ms + per_item_ms * b, for b = 1..max_batch.
inline void add_affine(ProfileTable& table, const std::string& variant, double base_ms,
                       double per_item_ms, int max_batch = 32, const std::string& segment = "gpu") {
  for (int b = 1; b <= max_batch; ++b) table.add(variant, segment, b, base_ms + per_item_ms * b);
}

// A finished simulation, kept for its metrics and engine.
struct SimRun {
  std::unique_ptr<Simulator> sim;
  const MetricsCollector& m() const { return sim->metrics(); }
};

// Simulates `arrivals` on the deployment; `before` may schedule control actions first.
inline SimRun simulate(const App& app, const Deployment& d, const ProfileTable& p,
                       PolicyConfig config, std::vector<Time> arrivals, SimOptions options = {},
                       const std::function<void(Simulator&)>& before = {}) {
  SimRun run{std::make_unique<Simulator>(app, d, p, PolicySet(std::move(config)), options)};
  if (before) before(*run.sim);
  VectorSource source(std::move(arrivals));
  run.sim->run(source);
  return run;
}

// `count` workers of every task's first variant on segment "gpu".
inline Deployment uniform_deployment(const App& app, int count, int max_batch) {
  Deployment d;
  for (std::size_t t = 0; t < app.tasks.size(); ++t) {
    d.groups.push_back(WorkerGroup{static_cast<TaskId>(t), {0}, "gpu", max_batch, count});
  }
  return d;
}

}  // namespace tessera::testing
