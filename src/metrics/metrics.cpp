#include "metrics/metrics.hpp"

#include <algorithm>
#include <cmath>

#include "engine/deployment_view.hpp"
#include "engine/outcome_rule.hpp"

namespace tessera {

MetricsCollector::MetricsCollector(const App& app, Time window)
    : window_(window),
      task_count_(app.tasks.size()),
      tasks_(app.tasks.size()),
      ttft_slo_(app.ttft_slo),
      tpot_slo_(app.tpot_slo) {}

void MetricsCollector::on_llm_step(const Worker& /*worker*/, const LlmStepStats& step) {
  ++llm_.steps;
  llm_.preemptions += step.preemptions;
  llm_.prefill_tokens += step.prefill_tokens;
  llm_.decode_tokens += step.decode_tokens;
  llm_.kv_block_seconds += step.kv_used_blocks * step.duration;
  llm_.kv_total_seconds += step.kv_total_blocks * step.duration;
  llm_.kv_blocks = std::max(llm_.kv_blocks, step.kv_total_blocks);
  if (step.kv_total_blocks > 0) {
    llm_.kv_peak = std::max(llm_.kv_peak, static_cast<double>(step.kv_used_blocks) /
                                              static_cast<double>(step.kv_total_blocks));
  }
}

WindowStats& MetricsCollector::window_at(Time t) {
  auto idx = static_cast<std::size_t>(std::max(0.0, std::floor(t / window_)));
  while (windows_.size() <= idx) {
    windows_.emplace_back();
    windows_.back().queue_length.assign(task_count_, 0);
  }
  return windows_[idx];
}

void MetricsCollector::on_arrival(Time now) {
  ++submitted_;
  if (first_arrival_ < 0) first_arrival_ = now;
  last_arrival_ = now;
  window_at(now).arrivals++;
}

void MetricsCollector::advance(Time now, const DeploymentView& deployment) {
  queues_sampled_ = true;
  const auto current = static_cast<std::size_t>(std::max(0.0, std::floor(now / window_)));
  while (closed_windows_ < current) {
    WindowStats& w = window_at(static_cast<double>(closed_windows_) * window_);
    for (std::size_t t = 0; t < task_count_; ++t) {
      w.queue_length[t] = deployment.queued_at(static_cast<TaskId>(t));
    }
    ++closed_windows_;
  }
}

uint64_t MetricsCollector::finished() const {
  uint64_t n = 0;
  for (uint64_t c : outcomes_) n += c;
  return n;
}

void MetricsCollector::on_request_done(const RequestRecord& r) {
  outcomes_[static_cast<std::size_t>(r.outcome)]++;
  subrequests_ += r.subrequests;
  subrequests_violated_ += r.subrequests_violated;
  last_finish_ = std::max(last_finish_, r.finish);
  WindowStats& w = window_at(r.finish);
  w.subrequests += r.subrequests;
  w.subrequests_violated += r.subrequests_violated;
  switch (r.outcome) {
    case Outcome::kOk:
      w.ok++;
      break;
    case Outcome::kLate:
      w.late++;
      wasted_gpu_seconds_ += r.gpu_time;
      break;
    case Outcome::kDropped:
      w.dropped++;
      tasks_[r.drop_task].dropped++;
      reasons_[static_cast<std::size_t>(r.reason)]++;
      wasted_gpu_seconds_ += r.gpu_time;
      break;
    case Outcome::kFailed:
      w.failed++;
      tasks_[r.drop_task].failed++;
      break;
  }
  if (r.ttft >= 0 && (r.outcome == Outcome::kOk || r.outcome == Outcome::kLate)) {
    ++llm_.requests;
    const bool ttft_ok = within_slo(r.ttft, ttft_slo_);
    const bool tpot_ok = within_slo(r.tpot, tpot_slo_);
    llm_.ttft_met += ttft_ok ? 1 : 0;
    llm_.tpot_met += tpot_ok ? 1 : 0;
    llm_.both_met += ttft_ok && tpot_ok && r.outcome == Outcome::kOk ? 1 : 0;
    llm_.output_tokens += r.output_tokens;
    llm_.preempted_requests += r.preemptions > 0 ? 1 : 0;
    llm_.ttft.add(r.ttft);
    if (r.output_tokens > 1) llm_.tpot.add(r.tpot);
  }
  if (r.outcome == Outcome::kOk || r.outcome == Outcome::kLate) {
    w.accuracy_sum += r.accuracy;
    w.accuracy_count++;
    latency_.add(r.finish - r.arrival);
    accuracy_sum_ += r.accuracy;
    accuracy_count_++;
  }
}

void MetricsCollector::on_batch_done(const Worker& worker, Time duration, Time now) {
  gpu_seconds_ += duration;
  TaskStats& t = tasks_[worker.task];
  t.batches++;
  t.items += worker.running.size();
  t.gpu_busy += duration;
  window_at(now).gpu_busy += duration;
}

}  // namespace tessera
