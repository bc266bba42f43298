#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/time.hpp"
#include "engine/engine.hpp"
#include "metrics/metrics.hpp"
#include "policy/policy_set.hpp"
#include "sim/event_queue.hpp"
#include "sim/latency_noise.hpp"
#include "spec/sim_options.hpp"
#include "workload/arrival.hpp"

namespace tessera {

// Discrete-event simulation of the engine on virtual time: executors take the profiled
// latency of (variant, segment, batch size), optionally with seeded noise.
class Simulator final : public EngineDriver {
 public:
  Simulator(const App& app, const Deployment& deployment, const ProfileTable& profiles,
            const PolicySet& policies, SimOptions options);
  // The same with policy objects already built and engine-wide options; options.cost_model
  // is used when engine_options names none.
  Simulator(const App& app, const Deployment& deployment, const ProfileTable& profiles,
            EnginePolicies policies, SimOptions options, EngineOptions engine_options);

  // Runs until the arrival stream ends and every request has finished. Throws
  // std::logic_error if the accounting invariant is broken.
  void run(ArrivalSource& arrivals);

  // run() in steps, for advancing several simulators on one virtual time
  // (sim/co_simulation.hpp): begin() takes the arrival stream (it must outlive the steps),
  // next_time() is the time of the next arrival or event (infinity when none is left),
  // step() processes that one, and finish() closes the run with run()'s checks.
  void begin(ArrivalSource& arrivals);
  Time next_time() const;
  void step();
  void finish();

  const MetricsCollector& metrics() const { return metrics_; }
  const Engine& engine() const { return *engine_; }
  Engine& engine() { return *engine_; }
  Time now() const { return clock_.now(); }

  // Runs `action` at virtual time `at` (a controller's tick, a reconfiguration step). An
  // action may schedule further actions. Actions at the same time run in call order.
  void schedule(Time at, std::function<void()> action);
  uint64_t events_processed() const { return events_; }

  // EngineDriver.
  void start_batch(const Worker& worker) override;
  void set_timer(WorkerId worker, uint64_t generation, Time at) override;
  void deliver_later(std::span<const Item> items, Time at) override;

 private:
  void process(const Event& event);
  void report_progress(const Arrival& next, bool force);

  SimOptions options_;
  ManualClock clock_;
  MetricsCollector metrics_;
  LatencyNoise noise_;
  EventQueue events_queue_;
  std::vector<std::vector<Item>> deliveries_;
  std::vector<Item> delivering_;
  std::vector<uint32_t> free_deliveries_;
  std::vector<std::function<void()>> actions_;
  std::unique_ptr<Engine> engine_;
  uint64_t events_ = 0;
  ArrivalSource* arrivals_ = nullptr;  // between begin() and finish()
  Arrival next_{};
  bool has_next_ = false;
  Time last_time_ = 0.0;
  double wall_start_ = 0.0;
  double wall_last_report_ = 0.0;
};

}  // namespace tessera
