#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "engine/driver.hpp"
#include "engine/fanout.hpp"
#include "engine/item.hpp"
#include "engine/worker.hpp"
#include "policy/policy_set.hpp"
#include "profile/profile_table.hpp"
#include "workload/arrival.hpp"

namespace tessera {

// The data plane. It owns requests, items, workers and their queues, and applies the
// policies; it never reads a wall clock or sleeps. Time comes from the driver's Clock and
// work is carried out through the EngineDriver, so the simulator and the live server
// run this same code.
//
// Accounting: every submitted request ends exactly once (ok, late, dropped at a stage
// with a reason, or failed) and is reported to the observer. Its items are counted while
// they are queued, forming, running or in transit; when the count reaches zero the
// request is finished.
class Engine {
 public:
  Engine(const App& app, const Deployment& deployment, const ProfileTable& profiles,
         const PolicySet& policies, const Clock& clock, EngineDriver& driver,
         EngineObserver& observer, uint64_t seed);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // A request arrives at the front end now. Returns its id (ids count up from 0).
  uint64_t submit(const Arrival& arrival);

  // Driver callbacks.
  void on_batch_done(WorkerId worker);
  // The same, with the real fan-out of each item of the finished batch, in
  // worker.running order, as a live driver reads it from the model's outputs. A negative
  // count, or an item past the end of `fanout`, draws from the task's distribution as
  // usual; leaf tasks ignore it.
  void on_batch_done(WorkerId worker, std::span<const int> fanout);
  void on_timer(WorkerId worker, uint64_t generation);
  void deliver(const std::vector<Item>& items);

  // Takes a worker out of service now: its queued and forming items are re-dispatched to
  // the task's other workers (or fail if none is left); a running batch still finishes.
  void kill_worker(WorkerId worker);
  // Brings `group.count` new workers into service now (a reconfiguration); returns their ids.
  std::vector<WorkerId> add_workers(const WorkerGroup& group, const ProfileTable& profiles);
  // While on, an item for a task with no live worker waits for add_workers instead of
  // failing (a reconfiguration that stops old workers before new ones start). Turning it
  // off fails whatever is still waiting.
  void set_reconfiguring(bool on);
  // Sets the batching timeout of the task's live workers (a new plan's Lhat(t)).
  void set_batch_timeout(TaskId task, Time timeout);
  // Changes whenever a worker is added or taken out of service, for policies that cache
  // facts about the deployment.
  uint64_t deployment_version() const { return deployment_version_; }

  // Introspection for policies, metrics and tests.
  const App& app() const { return app_; }
  const Clock& clock() const { return clock_; }
  const std::vector<std::unique_ptr<Worker>>& workers() const { return workers_; }
  // The task's workers in service (taken-out workers are removed).
  const std::vector<Worker*>& workers_of(TaskId task) const { return task_workers_[task]; }
  std::size_t queued_at(TaskId task) const;  // queued + forming items over the task's workers
  std::size_t requests_in_flight() const { return in_flight_; }
  uint64_t submitted() const { return next_id_; }
  // The id of the request that owns a live item's slot (Item::request), for drivers that
  // keep per-request payloads.
  uint64_t request_id(RequestSlot slot) const { return requests_[slot].id; }

 private:
  struct RequestState {
    uint64_t id = 0;
    Time arrival = 0.0;
    Time deadline = 0.0;
    uint32_t live = 0;  // items queued, forming, running or in transit
    bool terminated = false;
    Outcome outcome = Outcome::kOk;
    TaskId stop_task = 0;
    DropReason reason = DropReason::kNone;
    Time gpu_time = 0.0;
    double accuracy_sum = 0.0;
    uint32_t accuracy_count = 0;
  };

  RequestSlot allocate_request();
  // Dispatches and queues one item; returns its worker, or nullptr if it went no further.
  Worker* arrive(Item item);
  bool enqueue(Worker& worker, const Item& item);
  void kick(Worker& worker);  // start or fill a batch on a worker whose queue grew
  void try_start(Worker& worker);
  void fill_forming(Worker& worker);
  void start_running(Worker& worker, std::vector<Item>& batch, int variant_slot);
  // Runs the drop policy; returns true if the item may join the batch.
  bool admit_to_batch(Worker& worker, const Item& item, Time batch_start, Time exec_time);
  void finish_item(const Item& item, int task_variant, int fanout);
  void route(const Item& item, int task_variant, double accuracy, int fanout);
  // Marks a join ready for this request and appends its item to `out` (sent by the caller,
  // after `delay`, the longest hop into the join).
  bool release_join_if_ready(RequestSlot slot, TaskId join, std::vector<Item>& out, Time& delay);
  void terminate(const Item& item, Outcome outcome, DropReason reason);
  void retire_item(const Item& item);  // one item of the request is gone
  void finish_request(RequestSlot slot);
  void emit(std::vector<Item>& items, Time delay);

  const App& app_;
  const Clock& clock_;
  EngineDriver& driver_;
  EngineObserver& observer_;
  EnginePolicies policies_;
  BatchingPolicy& batching_;
  DropPolicy& dropping_;
  VariantPolicy& variant_;
  std::size_t max_queue_;

  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::vector<Worker*>> task_workers_;
  std::vector<std::shared_ptr<WorkQueue>> task_queues_;  // with a task-wide queue
  std::vector<std::unique_ptr<Dispatcher>> dispatchers_;
  std::vector<std::vector<FanoutSampler>> fanout_;  // [task][variant]

  uint64_t deployment_version_ = 0;
  bool reconfiguring_ = false;
  std::vector<std::vector<Item>> parked_;  // per task, during a reconfiguration

  std::vector<RequestState> requests_;
  std::vector<RequestSlot> free_slots_;
  // Join bookkeeping, only for apps with joins: [slot * tasks + task].
  bool track_tasks_ = false;
  std::vector<uint32_t> task_live_;
  std::vector<uint32_t> join_inputs_;
  std::vector<double> join_accuracy_;
  std::vector<uint8_t> join_released_;

  std::mt19937_64 rng_;
  uint64_t next_id_ = 0;
  std::size_t in_flight_ = 0;
  std::vector<Item> scratch_batch_;
  std::vector<int> scratch_fanout_;  // the driver's fan-out counts for the finishing batch
  std::vector<std::vector<Item>> scratch_out_;  // per out-edge, reused
};

}  // namespace tessera
