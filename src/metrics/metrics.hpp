#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/log_histogram.hpp"
#include "core/outcome.hpp"
#include "engine/app.hpp"
#include "engine/driver.hpp"

namespace tessera {

class DeploymentView;

// Counts for one time window of the run (the time series).
struct WindowStats {
  uint64_t arrivals = 0;
  uint64_t ok = 0;
  uint64_t late = 0;
  uint64_t dropped = 0;
  uint64_t failed = 0;
  Time gpu_busy = 0.0;
  double accuracy_sum = 0.0;  // over completed (ok or late) requests
  uint64_t accuracy_count = 0;
  double subrequests = 0.0;            // RequestRecord::subrequests of the finished requests
  double subrequests_violated = 0.0;   // and their violated share
  std::vector<uint64_t> queue_length;  // per task, sampled when the window closed
  // Per task, over the requests that ended (dropped or late) in this window: device time
  // spent at the task on them (wasted work, where it was done), and drops made at the task.
  std::vector<Time> wasted_gpu;
  std::vector<uint64_t> dropped_at;
};

// Per-task totals.
struct TaskStats {
  uint64_t batches = 0;
  uint64_t items = 0;
  Time gpu_busy = 0.0;
  uint64_t dropped = 0;  // requests whose drop happened at this task
  uint64_t failed = 0;
  Time wasted_gpu = 0.0;  // device time spent here on requests that ended dropped or late
};

// An LLM run's totals (requests that reported tokens; docs/llm.md#metrics).
struct LlmStats {
  uint64_t requests = 0;  // finished requests that reported tokens
  uint64_t ttft_met = 0;  // ... of them within the app's TTFT SLO (all, without one)
  uint64_t tpot_met = 0;
  uint64_t both_met = 0;  // within both and ended ok
  uint64_t output_tokens = 0;
  uint64_t preempted_requests = 0;
  uint64_t steps = 0;
  uint64_t preemptions = 0;
  uint64_t prefix_cache_queries = 0;  // prompt tokens looked up in the prefix cache
  uint64_t prefix_cache_hits = 0;     // ... and found there (prefill skipped)
  uint64_t prefill_tokens = 0;
  uint64_t decode_tokens = 0;
  double kv_block_seconds = 0.0;  // used blocks x step time, summed over steps
  double kv_total_seconds = 0.0;  // total blocks x step time
  double kv_peak = 0.0;           // highest used / total at a step start
  uint32_t kv_blocks = 0;         // the largest instance's KV blocks
  LogHistogram ttft;
  LogHistogram tpot;
};

// Streaming metrics: memory depends on the number of tasks and time windows, never on
// the number of requests. With spill_closed_windows() on (the simulator's reports), the
// windows advance() has closed go to a temporary file as they close, so memory does not
// grow with simulated time either; for_each_window() reads them back in order. Not
// thread-safe; move-only (it may own that file).
class MetricsCollector final : public EngineObserver {
 public:
  MetricsCollector(const App& app, Time window);
  MetricsCollector(MetricsCollector&&) = default;
  MetricsCollector& operator=(MetricsCollector&&) = default;

  void on_arrival(Time now);
  // Closes every window that ends at or before `now`, sampling queue lengths.
  void advance(Time now, const DeploymentView& deployment);
  void on_request_done(const RequestRecord& record) override;
  void on_batch_done(const Worker& worker, Time duration, Time now) override;
  void on_llm_step(const Worker& worker, const LlmStepStats& step) override;

  Time window() const { return window_; }
  // The windows held in memory: all of them, unless spilling is on (then the open tail,
  // from window number windows_spilled() on).
  const std::vector<WindowStats>& windows() const { return windows_; }
  // Closed windows go to a temporary file from now on (throws std::runtime_error when none
  // can be made). A closed window can no longer change: every update is at the driver's
  // current time, which advance() has passed.
  void spill_closed_windows();
  std::size_t windows_spilled() const { return spilled_; }
  std::size_t window_count() const { return spilled_ + windows_.size(); }
  // Every window in order, spilled ones first: fn(index, window).
  void for_each_window(const std::function<void(std::size_t, const WindowStats&)>& fn) const;
  const std::vector<TaskStats>& tasks() const { return tasks_; }
  uint64_t submitted() const { return submitted_; }
  uint64_t count(Outcome o) const { return outcomes_[static_cast<std::size_t>(o)]; }
  uint64_t finished() const;
  uint64_t dropped_for(DropReason r) const { return reasons_[static_cast<std::size_t>(r)]; }
  // Failed requests refused for their length (an LLM request longer than the model's
  // context); the driver reports each one with on_request_done too.
  void on_context_refusal() { ++context_refused_; }
  uint64_t context_refused() const { return context_refused_; }
  const LogHistogram& latency() const { return latency_; }
  Time gpu_seconds() const { return gpu_seconds_; }
  Time wasted_gpu_seconds() const { return wasted_gpu_seconds_; }
  double accuracy_sum() const { return accuracy_sum_; }
  // Per-sub-request accounting (RequestRecord::subrequests): totals over finished requests.
  double subrequests() const { return subrequests_; }
  double subrequests_violated() const { return subrequests_violated_; }
  uint64_t accuracy_count() const { return accuracy_count_; }
  Time first_arrival() const { return first_arrival_; }
  Time last_arrival() const { return last_arrival_; }
  Time last_finish() const { return last_finish_; }
  // Whether queue lengths were sampled (the simulator does; a client-side load generator,
  // which cannot see the server's queues, does not).
  bool queues_sampled() const { return queues_sampled_; }
  // LLM requests and steps; llm().requests == 0 in runs without LLM instances.
  const LlmStats& llm() const { return llm_; }

 private:
  WindowStats& window_at(Time t);
  void add_wasted(WindowStats& w, const RequestRecord& r);  // r ended dropped or late
  void spill(std::size_t count);     // the first `count` windows in memory to the file
  std::size_t window_index(Time t);  // floor(t / window), at least 0

  Time window_;
  std::size_t task_count_;
  std::vector<WindowStats> windows_;  // from window number spilled_ on
  struct CloseFile {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, CloseFile> spill_file_;
  std::size_t spilled_ = 0;
  std::size_t closed_windows_ = 0;
  // The window of the last window_index call and a range of times surely inside it.
  std::size_t same_index_ = 0;
  double same_lo_ = 0.0;
  double same_hi_ = -1.0;
  std::vector<TaskStats> tasks_;
  uint64_t submitted_ = 0;
  std::array<uint64_t, 4> outcomes_{};
  std::array<uint64_t, static_cast<std::size_t>(DropReason::kCount)> reasons_{};
  uint64_t context_refused_ = 0;
  LogHistogram latency_;
  Time gpu_seconds_ = 0.0;
  Time wasted_gpu_seconds_ = 0.0;
  double accuracy_sum_ = 0.0;
  uint64_t accuracy_count_ = 0;
  double subrequests_ = 0.0;
  double subrequests_violated_ = 0.0;
  Time first_arrival_ = -1.0;
  Time last_arrival_ = 0.0;
  Time last_finish_ = 0.0;
  bool queues_sampled_ = false;
  LlmStats llm_;
  Time ttft_slo_ = 0.0;
  Time tpot_slo_ = 0.0;
};

}  // namespace tessera
