#pragma once

// The policy interfaces the engine calls, one per family, and the bundle of policy objects
// one engine owns (EnginePolicies). The implementations live in src/policy/, which links
// against the engine; the engine itself never includes a policy implementation, so the
// dependency runs one way (policy -> engine).
//
// Policies see only their arguments and a read-only DeploymentView; they never read a clock
// and never reach into the engine. Every object here belongs to exactly one engine and is
// called from that engine's thread only.

#include <cstddef>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/deployment_view.hpp"
#include "engine/instance_scheduler.hpp"
#include "engine/item.hpp"
#include "engine/worker.hpp"

namespace tessera {

// ---- queue order -------------------------------------------------------------------------

// A worker's queue (or a task-wide queue its workers share). The order it hands items out
// in is the queue-order policy. The size is kept here, so that dispatchers scanning many
// workers read it without a virtual call.
class WorkQueue {
 public:
  virtual ~WorkQueue() = default;
  void push(const Item& item) {
    do_push(item);
    ++size_;
  }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // The item the next batch should take first, and its removal (the queue is not empty).
  virtual const Item& front() const = 0;
  Item pop() {
    --size_;
    return do_pop();
  }
  // The item with the least remaining budget (the earliest deadline) and its removal,
  // for purging requests that can no longer make it; by default the front (a FIFO
  // queue's oldest item).
  virtual const Item& least_budget() const { return front(); }
  Item pop_least_budget() {
    --size_;
    return do_pop_least_budget();
  }
  // Earliest enqueue time among queued items (timeout batching); +inf if empty.
  virtual Time oldest_enqueue() const = 0;
  // Removes everything (a worker was lost); order unspecified.
  void drain(std::vector<Item>& out) {
    do_drain(out);
    size_ = 0;
  }

 protected:
  virtual void do_push(const Item& item) = 0;
  virtual Item do_pop() = 0;
  virtual Item do_pop_least_budget() { return do_pop(); }
  virtual void do_drain(std::vector<Item>& out) = 0;

 private:
  std::size_t size_ = 0;
};

// ---- dispatch ------------------------------------------------------------------------------

class DispatchLoads;

// Chooses which of a task's workers an arriving item goes to.
class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  // `workers` holds the task's live workers. Returns an index into it, or -1 if none fits.
  virtual int pick(const std::vector<Worker*>& workers, const Item& item) = 0;
  // A dispatcher that chooses by load returns its loads here, and the engine keeps them up
  // to date for the dispatcher's task (dispatch_loads.hpp); null: it reads the workers.
  virtual DispatchLoads* loads() { return nullptr; }
  // Why the last pick() returned -1, when the dispatcher refused the item on purpose (an
  // LLM gateway's routing shedding a request no backend can serve within its SLO): the
  // engine ends the request dropped with this reason. kNone: no worker fits (failed).
  virtual DropReason last_refusal() const { return DropReason::kNone; }
};

// ---- batching ------------------------------------------------------------------------------

// What an idle worker with queued items should do now.
struct BatchPlan {
  bool start = false;                                    // start a batch now...
  Time wake_at = std::numeric_limits<Time>::infinity();  // ...or look again at this time
};

// When an idle worker starts a batch, and whether the next batch is formed while the
// current one runs.
class BatchingPolicy {
 public:
  virtual ~BatchingPolicy() = default;
  virtual BatchPlan plan(const Worker& worker, Time now) const = 0;
  // PARD §4.2's model: items join the forming batch while the previous batch runs, and
  // the forming batch starts the moment the running one ends.
  virtual bool forms_while_busy() const = 0;
};

// ---- variant choice ------------------------------------------------------------------------

// Which of a worker's variants the next batch runs and how large it may be.
struct BatchChoice {
  int variant_slot = 0;  // index into Worker::variants
  int max_size = 1;
};

// Variant choice per batch (SuperServe's SlackFit and friends plug in here).
class VariantPolicy {
 public:
  virtual ~VariantPolicy() = default;
  virtual BatchChoice choose(const Worker& worker, Time now) = 0;
};

// ---- dropping ------------------------------------------------------------------------------

// What a dropping policy knows at t_b, the moment an item would join a batch.
struct DropContext {
  Time now = 0.0;
  Time batch_start = 0.0;  // expected t_e: now for an idle worker, else the running batch's end
  Time exec_time = 0.0;    // d_k of this worker at the batch size being formed
  const Worker* worker = nullptr;
  const DeploymentView* view = nullptr;  // for policies that read shared pipeline state
};

// Decides whether an item is dropped instead of joining a batch. Policies are called in
// every worker of every task; they never read a clock, only the context.
class DropPolicy {
 public:
  virtual ~DropPolicy() = default;
  // Called when the item reaches a worker's queue; dropping here costs no queue space.
  virtual DropReason on_enqueue(const Item&, const DropContext&) { return DropReason::kNone; }
  // Observations for policies that keep pipeline state (PARD's State Planner).
  virtual void on_arrival(const Item&, const Worker&, const DeploymentView&, Time /*now*/) {}
  virtual void on_batch_start(const Worker&, int /*size*/, const DeploymentView&, Time /*now*/) {}
  // Called when the item would join a batch.
  virtual DropReason on_batch(const Item& item, const DropContext& ctx) = 0;
  // The time from which `item`, still waiting in a queue of `worker` (picked up by no
  // instance), is dropped as stale (DropReason::kStale); +inf: never. The instance
  // scheduler purges such items from the queue's least-budget end
  // (WorkQueue::least_budget) whenever the queue is touched and by a timer (exact for
  // FIFO queues, whose front is the oldest item, when staleness follows enqueue order,
  // and for budget-ordered queues when it follows the deadline).
  virtual Time stale_at(const Item& /*item*/, const Worker& /*worker*/) const {
    return std::numeric_limits<Time>::infinity();
  }
  // Whether stale_at can ever be finite; asked once, so that instance schedulers of
  // policies without a stale rule skip the purge on the hot path.
  virtual bool purges_stale() const { return false; }
  // The reason recorded for an item purged by stale_at (JigsawServe: kStale; a policy
  // that purges what can no longer meet its deadline: kPredictedLate).
  virtual DropReason stale_reason() const { return DropReason::kStale; }
};

// ---- the bundle ----------------------------------------------------------------------------

// The policy objects of one engine, built by PolicySet::instantiate (src/policy). Policies
// that share pipeline state (PARD's State Planner drives both the Request Broker and the
// adaptive queues) are wired together there.
struct EnginePolicies {
  std::unique_ptr<BatchingPolicy> batching;
  std::unique_ptr<DropPolicy> dropping;
  std::unique_ptr<VariantPolicy> variant;
  std::function<std::unique_ptr<WorkQueue>(TaskId)> make_queue;
  bool shared_queue = false;  // one queue per task, served by its idle workers
  std::function<std::unique_ptr<Dispatcher>(TaskId)> make_dispatcher;
  std::size_t max_queue = 0;  // per-worker queue bound; 0 = unbounded
  // The instance scheduler of each new instance; null: BatchInstanceScheduler over the
  // policies above. A data plane that decides steps itself (PPipe's reservations) or an
  // LLM instance (token-level steps) plugs in here.
  SchedulerFactory make_scheduler;
};

}  // namespace tessera
