#pragma once

#include "core/time.hpp"
#include "engine/policies.hpp"

namespace tessera {

// Start as soon as the worker is free with whatever is queued (up to the max batch), and
// form the next batch while the current one runs.
class EagerBatching final : public BatchingPolicy {
 public:
  BatchPlan plan(const Worker&, Time) const override { return {true}; }
  bool forms_while_busy() const override { return true; }
};

// Start as soon as the worker is free, with whatever is queued; nothing is formed while
// a batch runs, so queued items stay free to go to whichever worker frees up first
// (SuperServe's router: workers receive work only when idle).
class IdleBatching final : public BatchingPolicy {
 public:
  BatchPlan plan(const Worker&, Time) const override { return {true}; }
  bool forms_while_busy() const override { return false; }
};

// Start when the queue holds a full batch or its oldest item has waited `timeout`. Items
// wait in the queue, not in a forming batch.
//
// JigsawServe's data plane (§3.3) is this policy with the planner's timeout and
// `start_on_completion`: a worker's timeout is the deployment's Lhat(t) (the task's slowest
// instance) when it has one, and a worker whose previous batch just finished starts the
// next one at once with what is queued, so an item waits at most Lhat(t) to start and
// Lhat(t) to run (the MILP's 2 Lhat(t) per task).
class TimeoutBatching final : public BatchingPolicy {
 public:
  explicit TimeoutBatching(Time timeout, bool start_on_completion = false)
      : timeout_(timeout), start_on_completion_(start_on_completion) {}
  BatchPlan plan(const Worker& worker, Time now) const override;
  bool forms_while_busy() const override { return false; }
  // The wait bound that applies to `worker`.
  Time timeout(const Worker& worker) const { return worker.batch_timeout_or(timeout_); }

 private:
  Time timeout_;
  bool start_on_completion_;
};

}  // namespace tessera
