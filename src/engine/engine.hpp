#pragma once

// Engine: the data plane's request ledger and router. It owns requests, items, instances
// (Worker) and their instance schedulers, the links between servers, and the policies of one
// run; it never reads a wall clock or sleeps. Time comes from the driver's Clock and work
// is carried out through the EngineDriver, so the simulator and the live server run this
// same code.
//
// Ledger: every submitted request ends exactly once (ok, late, dropped at a stage with a
// reason, or failed) and is reported to the observer with its per-sub-request counts. Its
// items are counted while they are queued, forming, running or in transit; when the count
// reaches zero the request is finished.
//
// Router: submit sends a request's items to the app's root tasks; a finished item derives
// sub-requests along the DAG (fan-out, share edges, joins), after each edge's delay or over
// the deployment's links; a task's dispatcher picks the instance.
//
// Thread safety: none. Every call comes from one thread (the simulator's loop or the
// server's event loop).

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "core/outcome.hpp"
#include "core/time.hpp"
#include "engine/app.hpp"
#include "engine/cost_model.hpp"
#include "engine/deployment.hpp"
#include "engine/deployment_edit.hpp"
#include "engine/deployment_view.hpp"
#include "engine/dispatch_loads.hpp"
#include "engine/driver.hpp"
#include "engine/fanout.hpp"
#include "engine/instance_scheduler.hpp"
#include "engine/item.hpp"
#include "engine/links.hpp"
#include "engine/policies.hpp"
#include "engine/worker.hpp"
#include "profile/profile_table.hpp"
#include "workload/arrival.hpp"

namespace tessera {

// Engine-wide settings that are not a policy.
struct EngineOptions {
  // When one item of a request is dropped or fails, its sibling items are cancelled (the
  // request's answer is already decided). Off: siblings run on and are counted as
  // sub-requests (JigsawServe §4.5's per-sub-request accounting), while the request still
  // ends dropped/failed.
  bool cancel_siblings_on_drop = true;
  // The time of a step; the profiled tables when null.
  std::shared_ptr<const CostModel> cost_model;
};

class Engine final : public DeploymentView, private SchedulerHost {
 public:
  Engine(const App& app, const Deployment& deployment, const ProfileTable& profiles,
         EnginePolicies policies, const Clock& clock, EngineDriver& driver,
         EngineObserver& observer, uint64_t seed, EngineOptions options = {});
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // A request arrives at the front end now. Returns its id (ids count up from 0).
  uint64_t submit(const Arrival& arrival);
  // Several requests arrive at once (the rows of one batched request): their items are
  // all queued before any worker forms a batch, so that eager batching takes them
  // together. Returns the first one's id; the others follow in order.
  uint64_t submit_together(std::span<const Arrival> arrivals);

  // Driver callbacks.
  void on_batch_done(WorkerId worker);
  // The same, with the real fan-out of each item of the finished batch, in
  // worker.running order, as a live driver reads it from the model's outputs. A negative
  // count, or an item past the end of `fanout`, draws from the task's distribution as
  // usual; leaf tasks ignore it.
  void on_batch_done(WorkerId worker, std::span<const int> fanout);
  void on_timer(WorkerId worker, uint64_t generation);
  void deliver(std::span<const Item> items);
  // Ends a live request now, from outside the data plane: its client went away (kDropped,
  // DropReason::kCancelled) or it cannot be served any more (kFailed: a model error, the
  // server stopping). The instance schedulers that hold its items let go of them
  // (InstanceScheduler::cancel) and they are retired now; an item in a running step ends
  // with the step; any other is discarded where it is next seen. The request's record
  // follows (on_request_done) once its last item is gone. False if no live request has
  // this id.
  bool stop_request(uint64_t id, Outcome outcome, DropReason reason);
  // `worker`'s instance scheduler was called from outside the engine and may have changed
  // the worker's queue or batches (LlmInstanceScheduler::finish_with_step, from the live
  // server): the engine reads its load again for dispatch. Call it before anything else
  // reaches the engine.
  void note_worker_changed(WorkerId worker) { note_load(*workers_.at(worker)); }

  // Reconfiguration, applied atomically: see DeploymentEdit. Returns the ids of the
  // instances it started, group by group.
  std::vector<WorkerId> apply(const DeploymentEdit& edit, const ProfileTable& profiles);
  // Single-step forms of apply(), kept for drivers and tests.
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

  // DeploymentView.
  const App& app() const override { return app_; }
  const std::vector<Worker*>& workers_of(TaskId task) const override { return task_workers_[task]; }
  std::size_t queued_at(TaskId task) const override;
  uint64_t deployment_version() const override { return deployment_version_; }

  // Introspection for drivers, metrics and tests.
  const Clock& clock() const { return clock_; }
  const std::vector<std::unique_ptr<Worker>>& workers() const { return workers_; }
  const Links& links() const { return links_; }
  const CostModel& cost_model() const { return *cost_model_; }
  std::size_t requests_in_flight() const { return in_flight_; }
  uint64_t submitted() const { return next_id_; }
  // The id of the request that owns a live item's slot (Item::request), for drivers that
  // keep per-request payloads.
  uint64_t request_id(RequestSlot slot) const { return requests_[slot].id; }
  // Expected final results (leaf sub-requests) of one item at `task`: the weight a drop
  // there carries in the per-sub-request count.
  double subrequest_weight(TaskId task) const { return subrequest_weight_[task]; }

 private:
  struct RequestState {
    uint64_t id = 0;
    Time arrival = 0.0;
    Time deadline = 0.0;
    uint32_t live = 0;     // items queued, forming, running or in transit
    bool stopped = false;  // the outcome is decided: dropped or failed
    Outcome outcome = Outcome::kOk;
    TaskId stop_task = 0;
    DropReason reason = DropReason::kNone;
    Time gpu_time = 0.0;
    double accuracy_sum = 0.0;
    uint32_t accuracy_count = 0;
    double sub_done = 0.0;  // final results delivered
    double sub_late = 0.0;  // ... of them after the deadline
    double sub_lost = 0.0;  // weighted items dropped, failed or cancelled
    TokenTimes tokens;      // an LLM request's, when its scheduler reported them
  };

  // SchedulerHost.
  Time now() const override { return clock_.now(); }
  bool admit(Worker& worker, const Item& item, Time start, Time exec) override;
  void start_step(Worker& worker) override;
  void set_timer(Worker& worker, Time at) override;
  void drop_queued(Worker& worker, const Item& item, DropReason reason) override;
  void start_step(Worker& worker, const StepContents& contents) override;
  void record_tokens(const Item& item, const TokenTimes& times) override;
  void report_llm_step(const Worker& worker, const LlmStepStats& stats) override;

  bool cancelled(const RequestState& r) const { return r.stopped && cancel_siblings_; }
  RequestSlot allocate_request();
  void add_links(const std::vector<LinkSpec>& links);
  // Dispatches and queues one item; returns its worker, or nullptr if it went no further.
  Worker* arrive(Item item);
  bool enqueue(Worker& worker, const Item& item);
  void kick(Worker& worker);  // a worker's queue grew
  void finish_item(const Item& item, int task_variant, int fanout, Time gpu_share);
  void route(const Item& item, int task_variant, double accuracy, int fanout);
  // Marks a join ready for this request and appends its item to `out` (sent by the caller,
  // after `delay`, the longest hop into the join).
  bool release_join_if_ready(RequestSlot slot, TaskId join, std::vector<Item>& out, Time& delay);
  void terminate(const Item& item, Outcome outcome, DropReason reason);
  void discard(const Item& item);      // an item of a cancelled request leaves unserved
  void retire_item(const Item& item);  // one item of the request is gone
  void finish_request(RequestSlot slot);
  void emit(std::vector<Item>& items, Time delay);
  // A new request's ledger entry; its root items are appended to `entering`.
  uint64_t enter(const Arrival& arrival, Time now, std::vector<Item>& entering);
  // Sends a finished batch's items for one link edge as one transfer.
  void send_over_link(const Worker& from, const Edge& edge, std::vector<Item>& items);
  InstanceScheduler& scheduler(const Worker& w) { return *schedulers_[w.id]; }
  // `worker` may have changed: its task's dispatcher, if it keeps loads, reads it again.
  void note_load(const Worker& worker) {
    if (DispatchLoads* loads = loads_[worker.task]) loads->refresh(worker);
  }
  void reset_loads(TaskId task) {
    if (DispatchLoads* loads = loads_[task]) loads->reset(task_workers_[task]);
  }

  const App& app_;
  const Clock& clock_;
  EngineDriver& driver_;
  EngineObserver& observer_;
  EnginePolicies policies_;
  DropPolicy& dropping_;
  std::size_t max_queue_;
  bool cancel_siblings_;
  std::shared_ptr<const CostModel> cost_model_;

  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<InstanceScheduler>> schedulers_;  // by WorkerId
  std::vector<std::vector<Worker*>> task_workers_;
  std::vector<std::shared_ptr<WorkQueue>> task_queues_;  // with a task-wide queue
  std::vector<std::unique_ptr<Dispatcher>> dispatchers_;
  std::vector<DispatchLoads*> loads_;               // by task: its dispatcher's, or null
  std::vector<std::vector<FanoutSampler>> fanout_;  // [task][variant]
  std::vector<double> subrequest_weight_;           // by task
  Links links_;
  bool has_link_edges_ = false;

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
  // Per request slot and task: device time spent on the request's items there
  // (RequestRecord::gpu_by_task), slot-major.
  std::vector<Time> gpu_by_task_;

  std::mt19937_64 rng_;
  uint64_t next_id_ = 0;
  std::size_t in_flight_ = 0;
  // Reused buffers, so that the steady state allocates nothing per request.
  std::vector<Item> scratch_batch_;
  std::vector<Item> scratch_entering_;
  std::vector<int> scratch_fanout_;  // the driver's fan-out counts for the finishing batch
  std::vector<int> scratch_share_counts_;
  std::vector<std::vector<Item>> scratch_out_;   // per out-edge, reused
  std::vector<std::vector<Item>> scratch_link_;  // per out-edge: a batch's items for a link
  const Worker* routing_from_ = nullptr;         // the worker whose batch is being routed
};

}  // namespace tessera
