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
  // The context rule (SimOptions::max_positions): a request too long for the model is
  // refused on arrival and ends failed (reason context_length).
  bool exceeds_context(const Arrival& arrival) const;
  void refuse(const Arrival& arrival);
  void report_progress(const Arrival& next, bool force);

  SimOptions options_;
  ManualClock clock_;
  MetricsCollector metrics_;
  LatencyNoise noise_;
  EventQueue events_queue_;
  // Items delivered later: consecutive groups, one per deliver_later call, ends[i] the end
  // of group i.
  struct DeliverySlot {
    std::vector<Item> items;
    std::vector<uint32_t> ends;
  };
  std::vector<DeliverySlot> deliveries_;
  DeliverySlot delivering_;
  std::vector<uint32_t> free_deliveries_;
  std::vector<std::function<void()>> actions_;
  std::unique_ptr<Engine> engine_;
  uint64_t events_ = 0;
  // The delivery event this step pushed last, while more items for its time may join it.
  bool open_delivery_ = false;
  uint64_t open_delivery_seq_ = 0;
  Time open_delivery_time_ = 0.0;
  uint32_t open_delivery_slot_ = 0;
  Time replaced_until_ = 0.0;  // the latest time of a replaced timer
  uint64_t refused_ = 0;
  ArrivalSource* arrivals_ = nullptr;  // between begin() and finish()
  Arrival next_{};
  bool has_next_ = false;
  Time last_time_ = 0.0;
  double wall_start_ = 0.0;
  double wall_last_report_ = 0.0;
};

}  // namespace tessera
