#pragma once

// InstanceScheduler: the per-instance part of the data plane, in the role of Triton's
// Scheduler or an LLM simulator's replica scheduler. One per deployed instance (Worker): it
// owns the decision of what step the instance runs next (which queued items, at which
// variant and size, now or after a wait) and is told when a step finishes. The engine's
// ledger and router own everything else: requests, routing, accounting, links.
//
// SchedulerHost is what a scheduler may ask of the engine; it is implemented by the Engine.
// A scheduler never calls the driver and never touches another instance.
//
// Thread safety: none; called on the engine's thread only.

#include <functional>
#include <memory>
#include <vector>

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/cost_model.hpp"
#include "engine/driver.hpp"
#include "engine/item.hpp"
#include "engine/worker.hpp"

namespace tessera {

class SchedulerHost {
 public:
  virtual ~SchedulerHost() = default;
  virtual Time now() const = 0;
  // Whether `item`, just taken from the queue, may join a step of `worker` expected to start
  // at `start` and run for `exec`. If not, the host has already dropped or retired it.
  virtual bool admit(Worker& worker, const Item& item, Time start, Time exec) = 0;
  // Runs worker.running, with variant worker.running_variant, as the instance's next step.
  virtual void start_step(Worker& worker) = 0;
  // Calls the scheduler's on_timer at `at` (a pending timer at another time is replaced),
  // whether the instance is busy or idle then.
  virtual void set_timer(Worker& worker, Time at) = 0;
  // `item`, just taken from the queue without joining a step, is dropped for `reason` (or
  // retired, if its request was cancelled meanwhile).
  virtual void drop_queued(Worker& worker, const Item& item, DropReason reason) = 0;
  // Runs worker.running as the next step, timed by the cost model from `contents` rather
  // than from worker.running: an LLM step, whose requests mostly stay held by the scheduler
  // across steps (worker.running holds only those that finish with this step).
  virtual void start_step(Worker& worker, const StepContents& contents) = 0;
  // The token timings of `item`'s request (an LLM request), recorded in its RequestRecord;
  // with the app's ttft/tpot SLOs they decide whether it ends ok or late.
  virtual void record_tokens(const Item& item, const TokenTimes& times) = 0;
  // An LLM step's KV-cache and token figures, passed on to the observer.
  virtual void report_llm_step(const Worker& worker, const LlmStepStats& stats) = 0;
};

class InstanceScheduler {
 public:
  virtual ~InstanceScheduler() = default;
  // Items were queued for the instance (its own queue or its task's shared one).
  virtual void on_queue_grew(Worker& worker) = 0;
  // The running step finished and its items were taken; the instance is idle.
  virtual void on_step_done(Worker& worker) = 0;
  // A timer the scheduler asked for fired.
  virtual void on_timer(Worker& worker) = 0;
  // The instance's settings changed (a new batch timeout): look again.
  virtual void on_settings_changed(Worker& worker) = 0;
  // The instance leaves service: hand back the items it holds that have not started.
  virtual void release(Worker& worker, std::vector<Item>& out) = 0;
  // The request was stopped from outside (Engine::stop_request: its client went away): if
  // the instance holds an item of it that will not come back through worker.running, it
  // forgets it and returns true (the engine retires it). By default it holds none.
  virtual bool cancel(Worker& /*worker*/, RequestSlot /*request*/) { return false; }
};

// Builds the scheduler of one new instance (EnginePolicies::make_scheduler); the engine's
// cost model is passed for schedulers that predict step times. The scheduler may keep the
// host and the worker for the instance's lifetime.
using SchedulerFactory = std::function<std::unique_ptr<InstanceScheduler>(
    Worker& worker, SchedulerHost& host, const CostModel& cost)>;

}  // namespace tessera
