#pragma once

#include <deque>
#include <random>
#include <vector>

#include "core/time.hpp"
#include "engine/app.hpp"
#include "policy/budget_queue.hpp"
#include "policy/pard/pard_settings.hpp"

namespace tessera {

class DeploymentView;

// PARD's State Planner (§4.2, §4.3), one per engine, covering every task (module): it
// watches each task's arrivals, queueing delays and batch sizes, and every sync period
// recomputes what the Request Brokers and queues read:
//  - q_i: linearly weighted average queueing delay over the last `queue_window`, and with
//    `backlog_queueing` at least the time the task's workers need for their backlog now;
//  - d_i: profiled execution time at the task's current (recent mean) batch size;
//  - L_sub: max over downstream paths of Σ q_i + Σ d_i + F⁻¹(λ) + the paths' edge delays
//    (network hops) + at each join on the path, the expected wait for its slowest other
//    input (each task's expected finish after the request's start, with queueing,
//    execution and a mean batch wait d_i / 2, along the slowest path to it);
//  - the priority mode from the load factor μ = T_in / T_m with the hysteresis band ε.
// It reads no clock: the engine's hooks pass the time, and a sync happens lazily at the
// first hook at or after each period boundary.
class StatePlanner {
 public:
  StatePlanner(const App& app, PardSettings settings, uint64_t seed);

  // Hooks, called by the engine through the dropping policy.
  void on_arrival(TaskId task, Time now);
  void on_queue_delay(TaskId task, Time delay, Time now);
  void on_batch_start(TaskId task, int size, Time now);
  void maybe_sync(const DeploymentView& view, Time now);
  void sync(const DeploymentView& view, Time now);  // recompute everything now
  // Re-evaluates every task's μ and mode from its arrivals and queue since the last
  // evaluation (PardSettings::mode_period).
  void update_modes(const DeploymentView& view, Time now);

  // State as of the last sync.
  Time downstream_latency(TaskId task) const { return tasks_[task].lsub; }
  Time downstream_service(TaskId task) const { return tasks_[task].lsub_service; }
  // The least time a request still needs after this task: over the downstream paths, the
  // prefix every request certainly takes (kAll edges from tasks with a fixed fan-out of at
  // least 1), Σ of its tasks' fastest live worker at batch size 1 and its edge delays; the
  // max over paths (the purge's floor).
  Time downstream_floor(TaskId task) const { return tasks_[task].lsub_floor; }
  Time fastest_exec(TaskId task) const { return tasks_[task].d_fastest; }  // any worker, b = 1
  Time backlog_delay(TaskId task) const { return tasks_[task].backlog; }
  Time queue_delay(TaskId task) const { return tasks_[task].q; }
  Time exec_time(TaskId task) const { return tasks_[task].d; }
  double load_factor(TaskId task) const { return tasks_[task].mu; }
  double epsilon(TaskId task) const { return tasks_[task].epsilon; }
  PriorityMode mode(TaskId task) const { return tasks_[task].mode; }
  const PriorityMode* mode_ref(TaskId task) const { return &tasks_[task].mode; }
  const std::vector<std::vector<TaskId>>& downstream_paths(TaskId task) const {
    return paths_[task];
  }
  const PardSettings& settings() const { return settings_; }
  uint64_t syncs() const { return syncs_; }  // changes whenever the state does

  // The hysteresis rule on its own: the next mode given the current one.
  static PriorityMode next_mode(PriorityMode current, double mu, double epsilon, bool hysteresis);

 private:
  struct TaskState {
    std::deque<std::pair<Time, Time>> delays;    // (when, queueing delay)
    std::deque<std::pair<Time, int>> batches;    // (when, batch size)
    std::deque<std::pair<Time, Time>> backlogs;  // (sync time, backlog delay)
    uint64_t arrivals_since_sync = 0;
    uint64_t arrivals_since_mode = 0;
    std::deque<std::pair<double, double>> rates;  // per period: (T_in, smoothed T_s)
    Time q = 0.0;
    Time d = 0.0;
    Time d_single = 0.0;   // d at batch size 1 (PARD-sf)
    Time d_fastest = 0.0;  // the fastest live worker's d at batch size 1
    double mu = 0.0;
    double epsilon = 0.0;
    PriorityMode mode = PriorityMode::kLowBudgetFirst;
    Time lsub = 0.0;
    Time lsub_service = 0.0;
    Time lsub_floor = 0.0;
    Time backlog = 0.0;  // time to serve the queued items, at the last sync
  };

  void prune(TaskState& t, Time now) const;
  // The expected wait at a join for its slowest other input, for an item on `edge`.
  Time join_wait(uint32_t edge) const;

  const App& app_;
  PardSettings settings_;
  std::vector<TaskState> tasks_;
  std::vector<std::vector<std::vector<TaskId>>> paths_;         // per task: paths below it
  std::vector<std::vector<std::vector<uint32_t>>> path_edges_;  // per task and path: edges
  std::vector<std::vector<std::size_t>> certain_;  // per task and path: certain prefix length
  std::vector<TaskId> order_;                      // topological
  std::vector<Time> finish_;  // per task: expected finish after the request's start
  std::mt19937_64 rng_;
  std::vector<Time> scratch_;
  std::vector<Time> cycles_;
  Time last_sync_ = 0.0;
  Time next_sync_ = 0.0;
  Time last_mode_ = 0.0;
  Time next_mode_ = 0.0;
  bool synced_once_ = false;
  uint64_t syncs_ = 0;
};

}  // namespace tessera
