#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/engine.hpp"
#include "policy/policy_set.hpp"
#include "serve/metrics/server_metrics.hpp"
#include "serve/runtime/answer.hpp"
#include "serve/runtime/event_loop.hpp"
#include "serve/runtime/executor.hpp"
#include "serve/runtime/model_registry.hpp"
#include "serve/runtime/steady_clock.hpp"

namespace tessera {

// One served application (a pipeline or DAG, or a single model as a one-task app): the
// engine the simulator runs, driven on a real clock. It is the engine's EngineDriver
// (batches go to one Executor thread per worker, timers and hops to the EventLoop) and
// its EngineObserver (answers go back to the waiting HTTP thread).
//
// Threads: submit() from any thread; everything else runs on the event loop, the only
// one that touches the engine (its thread, or a submit() caller running an idle loop
// itself: EventLoop::post_or_run; either way one thread at a time). The inputs and results of live
// requests are kept in a side table keyed by request id, since engine items carry no payload.
class Endpoint final : public EngineDriver, public EngineObserver {
 public:
  using Done = std::function<void(Answer&&)>;

  Endpoint(std::string name, App app, const Deployment& deployment, const ProfileTable& profiles,
           const PolicySet& policies, const ModelRegistry& models, const SteadyClock& clock,
           EventLoop& loop, ServerMetrics& metrics, uint64_t seed, int torch_threads,
           bool inline_noop, double model_timeout_s = 0.0);
  ~Endpoint() override;

  const std::string& name() const { return name_; }
  const App& app() const { return app_; }
  // The input every request carries (that of the root tasks' models) and the output of
  // each leaf task's model.
  const std::vector<int64_t>& input_shape() const { return input_shape_; }
  const std::vector<std::pair<std::string, std::vector<int64_t>>>& outputs() const {
    return outputs_;
  }
  EndpointMetrics& metrics() { return metrics_; }
  // The most rows one request may carry (any thread): the largest batch an instance of a
  // root task takes, so that a request's rows start together in one batch; more would
  // queue behind each other on an idle server (and be purged as stale by policies that
  // drop items waiting past their batch timeout).
  int max_request_rows() const { return max_request_rows_.load(std::memory_order_relaxed); }
  // The deployed variants served by a profile-timed emulation, not a real model (any
  // thread; a reconfiguration may add to them).
  std::vector<std::string> emulated() const;

  // Any thread: `done` is called exactly once, by the loop (perhaps on this thread,
  // before submit() returns: the caller must hold no lock that `done` takes). slo_s <= 0 uses the
  // app's SLO.
  void submit(std::shared_ptr<const FloatTensor> input, double slo_s, Done done);
  // The rows of one batched request, as submit() each, but arriving together: the engine
  // queues them all before a worker forms a batch, so eager batching takes them in one
  // batch (up to max_batch) rather than the first alone. inputs.size() == dones.size().
  void submit_rows(std::vector<std::shared_ptr<const FloatTensor>> inputs, double slo_s,
                   std::vector<Done> dones);

  // Loop thread.
  void refuse_all(const std::string& why);  // answers every waiting request (shutdown)
  std::size_t waiting() const { return waiting_; }
  std::vector<std::size_t> queue_lengths() const;

  // Stops the executors (after the loop has stopped): joins each thread whose model call
  // ends before `deadline`, leaves the others.
  void stop_executors(std::chrono::steady_clock::time_point deadline =
                          std::chrono::steady_clock::time_point::max());
  // Any thread: worker threads abandoned after a model call overran model_timeout_s.
  int workers_replaced() const;

  // Live reconfiguration (endpoint_reconfigure.cpp; server/live_deployment.hpp), loop
  // thread. Throws std::invalid_argument, changing nothing, if `variant`'s loaded model
  // does not fit this endpoint (input shape, the task's output shape).
  void check_fits(TaskId task, const std::string& variant) const;
  // Moves the engine to `target` in one Engine::apply (instances both have keep running;
  // see LiveDeployment); every variant's model must be in the registry. Returns the
  // instances started and stopped. Throws std::invalid_argument, changing nothing.
  std::pair<int, int> reconfigure(const Deployment& target, const ProfileTable& profiles);
  // The live instances grouped by kind; `batches`, if given, gets each group's batches.
  Deployment live_deployment(std::vector<uint64_t>* batches = nullptr) const;
  uint64_t arrivals() const { return engine_->submitted(); }

  // EngineDriver.
  void start_batch(const Worker& worker) override;
  void set_timer(WorkerId worker, uint64_t generation, Time at) override;
  void deliver_later(std::span<const Item> items, Time at) override;
  // EngineObserver.
  void on_request_done(const RequestRecord& record) override;
  void on_request_stopped(uint64_t id, Outcome outcome, TaskId task, DropReason reason) override;
  void on_batch_start(const Worker& worker, Time now) override;
  void on_batch_done(const Worker& worker, Time duration, Time now) override;

 private:
  struct Pending {
    std::shared_ptr<const FloatTensor> input;
    // By task: its output for this request, kept while a child stage takes it as input
    // (stage_input: parent; one item per request at such a task, checked at construction).
    std::vector<std::shared_ptr<const FloatTensor>> stage_outputs;
    std::vector<std::pair<TaskId, FloatTensor>> results;
    Done done;
    Time arrival = 0.0;
    Time first_start = -1.0;  // when its first batch started (-1: not yet)
    bool answered = false;
  };
  struct BatchResult {
    std::vector<FloatTensor> outputs;      // one per item (empty for a failed item)
    std::vector<int> fanout;               // one per item, when the model has a rule
    std::vector<std::string> item_errors;  // one per item when some failed ("" = ok)
    std::string error;                     // the whole batch failed
  };

  void admit(std::shared_ptr<const FloatTensor> input, double slo_s, Done done);
  // admit()'s two halves: the side-table entry of the request the engine will number
  // `id`, made before the engine may answer it; and its expiry, after.
  Arrival prepare(uint64_t id, std::shared_ptr<const FloatTensor> input, double slo_s, Done done);
  void schedule_expiry(uint64_t id, const Arrival& arrival);
  // Answers request `id` as expired if it is still waiting; expire_due() does so for every
  // deadline in expiries_ that has passed.
  void expire(uint64_t id);
  void expire_due();
  void executed(WorkerId worker, BatchResult result);
  void answer(Pending& p, Answer&& a);
  std::vector<NamedOutput> stack_results(Pending& p) const;
  const LoadedModel& model_of(const Worker& worker) const;
  // Which stages take their parent's output (docs/serve.md#stage-inputs), checked: throws
  // std::invalid_argument naming the variant and task when the app cannot give them one.
  void set_stage_inputs(const Deployment& deployment,
                        const std::vector<std::vector<int64_t>>& task_output,
                        const std::vector<int>& task_stage_input);
  // The per-item input a model of `task` must take; check_stage_input() throws
  // std::invalid_argument naming `variant` when its model takes another.
  const std::vector<int64_t>& stage_input_shape(TaskId task) const;
  void check_stage_input(TaskId task, const std::string& variant) const;
  void set_max_request_rows(const Deployment& deployment);
  // A worker out of service whose last batch is done: its thread is let go.
  void retire_if_idle(WorkerId worker);

  std::string name_;
  App app_;
  const ModelRegistry& models_;
  const SteadyClock& clock_;
  EventLoop& loop_;
  ServerMetrics& server_metrics_;
  EndpointMetrics& metrics_;
  bool inline_noop_;  // run the no-op model on the loop thread (ServeOptions::inline_noop)
  double model_timeout_s_;
  int torch_threads_;  // intra-op threads of each worker's thread
  std::vector<int64_t> input_shape_;
  // By task: it takes its parent's output (parent_of_[task]) rather than the request's input;
  // keep_output_[task]: a child takes this task's output; task_output_: each task's output.
  std::vector<bool> from_parent_;
  std::vector<TaskId> parent_of_;
  std::vector<bool> keep_output_;
  std::vector<std::vector<int64_t>> task_output_;
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputs_;
  mutable std::mutex emulated_mutex_;  // emulated_ grows on reconfiguration
  std::vector<std::string> emulated_;
  std::atomic<int> max_request_rows_{1};
  std::unordered_map<uint64_t, Pending> pending_;
  std::size_t waiting_ = 0;                         // pending requests not yet answered
  std::deque<std::pair<Time, uint64_t>> expiries_;  // (deadline, request id), in order
  bool expiry_timer_ = false;                       // a loop timer runs expire_due()
  // One per worker, by WorkerId; grows on the loop thread (reconfiguration), which reads
  // it unlocked; other threads take executors_mutex_.
  mutable std::mutex executors_mutex_;
  std::vector<std::unique_ptr<Executor>> executors_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace tessera
