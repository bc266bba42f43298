#pragma once

// A minimal driver for LLM engine tests and benchmarks: one Engine on a ManualClock whose
// steps end after the cost model's time exactly (no noise), arrivals first on ties, with
// every RequestRecord and LLM step kept for the test to inspect. Single-threaded.

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "engine/engine.hpp"
#include "llm/llm_scheduler.hpp"
#include "policy/policy_set.hpp"
#include "workload/arrival.hpp"

namespace tessera::testing {

// t = base + per_prompt_token * prefill tokens: hand-computable steps.
class SimpleLlmCost final : public CostModel {
 public:
  SimpleLlmCost(Time base, Time per_token) : base_(base), per_token_(per_token) {}
  Time step_time(const Worker&, const StepContents& s) const override {
    return base_ + per_token_ * static_cast<double>(s.tokens_in);
  }

 private:
  Time base_;
  Time per_token_;
};

class LlmHarness final : public EngineDriver, public EngineObserver {
 public:
  LlmHarness(const LlmSchedulerConfig& config, std::shared_ptr<const CostModel> cost,
             int instances = 1, Time ttft_slo = 0.0, Time tpot_slo = 0.0, Time slo = 1000.0,
             const std::function<void(EnginePolicies&)>& adjust = {}) {
    app_.name = "llm";
    app_.slo = slo;
    app_.ttft_slo = ttft_slo;
    app_.tpot_slo = tpot_slo;
    Task task;
    task.name = "llm";
    task.variants.push_back(Variant{"m", 1.0, 1.0});
    app_.tasks.push_back(task);
    app_.finalize();
    profiles_.add("m", "gpu", 1, 10.0);
    Deployment d;
    d.groups.push_back(WorkerGroup{0, {0}, "gpu", 1, instances});
    EngineOptions options;
    options.cost_model = std::move(cost);
    LlmSchedulerConfig c = config;
    c.ttft_slo = ttft_slo;
    c.tpot_slo = tpot_slo;
    PolicyConfig pc;
    pc.dispatch = DispatchKind::kLeastLoaded;
    EnginePolicies policies = PolicySet(pc).instantiate(app_, 1);
    policies.make_scheduler = [this, c](const Worker&, SchedulerHost& host, const CostModel& cm) {
      auto s = std::make_unique<LlmInstanceScheduler>(c, host, cm);
      schedulers_.push_back(s.get());
      return s;
    };
    if (adjust) adjust(policies);  // a test's own dispatcher, say
    engine_ = std::make_unique<Engine>(app_, d, profiles_, std::move(policies), clock_, *this,
                                       *this, 1, std::move(options));
  }

  // Runs `action` once virtual time reaches `at` (before the events at that time).
  void at(Time at, std::function<void()> action) { actions_.emplace(at, std::move(action)); }

  void run(const std::vector<Arrival>& arrivals) {
    std::size_t next = 0;
    while (next < arrivals.size() || !events_.empty()) {
      const Time upcoming = std::min(next < arrivals.size() ? arrivals[next].time : 1e300,
                                     events_.empty() ? 1e300 : events_.begin()->first);
      if (!actions_.empty() && actions_.begin()->first <= upcoming) {
        auto action = std::move(actions_.begin()->second);
        clock_.set(actions_.begin()->first);
        actions_.erase(actions_.begin());
        action();
        continue;
      }
      const bool arrival_first = next < arrivals.size() &&
                                 (events_.empty() || arrivals[next].time <= events_.begin()->first);
      if (arrival_first) {
        clock_.set(arrivals[next].time);
        engine_->submit(arrivals[next++]);
      } else {
        auto it = events_.begin();
        const auto [at, worker] = *it;
        events_.erase(it);
        clock_.set(at);
        engine_->on_batch_done(worker);
      }
    }
  }

  // EngineDriver.
  void start_batch(const Worker& w) override {
    events_.emplace(clock_.now() + w.running_duration, w.id);
  }
  void set_timer(WorkerId, uint64_t, Time) override {}
  void deliver_later(std::span<const Item>, Time) override {}
  // EngineObserver.
  void on_request_done(const RequestRecord& r) override { records.push_back(r); }
  void on_llm_step(const Worker&, const LlmStepStats& s) override { steps.push_back(s); }

  const RequestRecord* record(uint64_t id) const {
    for (const auto& r : records)
      if (r.id == id) return &r;
    return nullptr;
  }
  Engine& engine() { return *engine_; }
  LlmInstanceScheduler& scheduler(std::size_t i = 0) { return *schedulers_.at(i); }

  std::vector<RequestRecord> records;
  std::vector<LlmStepStats> steps;

 private:
  App app_;
  ProfileTable profiles_;
  ManualClock clock_;
  std::multimap<Time, WorkerId> events_;
  std::multimap<Time, std::function<void()>> actions_;
  std::vector<LlmInstanceScheduler*> schedulers_;
  std::unique_ptr<Engine> engine_;
};

inline Arrival llm_arrival(Time t, uint32_t prompt, uint32_t output) {
  Arrival a;
  a.time = t;
  a.input_tokens = prompt;
  a.output_tokens = output;
  return a;
}

}  // namespace tessera::testing
