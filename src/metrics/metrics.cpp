#include "metrics/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

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
  llm_.prefix_cache_queries += step.prefix_queries;
  llm_.prefix_cache_hits += step.prefix_hits;
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

std::size_t MetricsCollector::window_index(Time t) {
  // Most calls fall in the window of the previous one: a range test, with a margin that
  // keeps it inside what floor(t / window) gives, spares the division.
  if (t >= same_lo_ && t < same_hi_) return same_index_;
  const auto idx = static_cast<std::size_t>(std::max(0.0, std::floor(t / window_)));
  const double lo = static_cast<double>(idx) * window_;
  const double margin = window_ * 1e-6 + std::abs(lo) * 1e-12;  // >> the rounding of t / w
  same_index_ = idx;
  same_lo_ = idx == 0 ? -std::numeric_limits<double>::infinity() : lo + margin;
  same_hi_ = lo + window_ - margin;
  return idx;
}

WindowStats& MetricsCollector::window_at(Time t) {
  const std::size_t idx = window_index(t);
  if (idx < spilled_) {
    throw std::logic_error("metrics: an update at t=" + std::to_string(t) +
                           " for a window already closed and written out");
  }
  while (spilled_ + windows_.size() <= idx) {
    windows_.emplace_back();
    windows_.back().queue_length.assign(task_count_, 0);
    windows_.back().wasted_gpu.assign(task_count_, 0.0);
    windows_.back().dropped_at.assign(task_count_, 0);
  }
  return windows_[idx - spilled_];
}

namespace {

// A spilled window: the sums, then the task count's wasted device times; the counters,
// then the task count's queue lengths and drops.
constexpr std::size_t kSpillCounts = 6;
constexpr std::size_t kSpillSums = 4;

}  // namespace

void MetricsCollector::spill_closed_windows() {
  if (spill_file_) return;
  spill_file_.reset(std::tmpfile());
  if (!spill_file_) throw std::runtime_error("metrics: cannot open a temporary file");
}

void MetricsCollector::spill(std::size_t count) {
  std::vector<uint64_t> counts(kSpillCounts + 2 * task_count_);
  std::vector<double> sums(kSpillSums + task_count_);
  for (std::size_t i = 0; i < count; ++i) {
    const WindowStats& w = windows_[i];
    counts[0] = w.arrivals;
    counts[1] = w.ok;
    counts[2] = w.late;
    counts[3] = w.dropped;
    counts[4] = w.failed;
    counts[5] = w.accuracy_count;
    std::copy(w.queue_length.begin(), w.queue_length.end(), counts.begin() + kSpillCounts);
    std::copy(w.dropped_at.begin(), w.dropped_at.end(),
              counts.begin() + static_cast<std::ptrdiff_t>(kSpillCounts + task_count_));
    sums[0] = w.gpu_busy;
    sums[1] = w.accuracy_sum;
    sums[2] = w.subrequests;
    sums[3] = w.subrequests_violated;
    std::copy(w.wasted_gpu.begin(), w.wasted_gpu.end(), sums.begin() + kSpillSums);
    if (std::fwrite(sums.data(), sizeof(double), sums.size(), spill_file_.get()) != sums.size() ||
        std::fwrite(counts.data(), sizeof(uint64_t), counts.size(), spill_file_.get()) !=
            counts.size()) {
      throw std::runtime_error("metrics: cannot write the time series' temporary file");
    }
  }
  windows_.erase(windows_.begin(), windows_.begin() + static_cast<std::ptrdiff_t>(count));
  spilled_ += count;
}

void MetricsCollector::for_each_window(
    const std::function<void(std::size_t, const WindowStats&)>& fn) const {
  if (spilled_ > 0) {
    std::FILE* f = spill_file_.get();
    std::fflush(f);
    std::rewind(f);
    WindowStats w;
    std::vector<uint64_t> counts(kSpillCounts + 2 * task_count_);
    std::vector<double> sums(kSpillSums + task_count_);
    for (std::size_t i = 0; i < spilled_; ++i) {
      if (std::fread(sums.data(), sizeof(double), sums.size(), f) != sums.size() ||
          std::fread(counts.data(), sizeof(uint64_t), counts.size(), f) != counts.size()) {
        throw std::runtime_error("metrics: cannot read the time series' temporary file");
      }
      w.gpu_busy = sums[0];
      w.accuracy_sum = sums[1];
      w.subrequests = sums[2];
      w.subrequests_violated = sums[3];
      w.arrivals = counts[0];
      w.ok = counts[1];
      w.late = counts[2];
      w.dropped = counts[3];
      w.failed = counts[4];
      w.accuracy_count = counts[5];
      const auto drops = counts.begin() + static_cast<std::ptrdiff_t>(kSpillCounts + task_count_);
      w.queue_length.assign(counts.begin() + kSpillCounts, drops);
      w.dropped_at.assign(drops, counts.end());
      w.wasted_gpu.assign(sums.begin() + kSpillSums, sums.end());
      fn(i, w);
    }
    std::fseek(f, 0, SEEK_END);  // later spills append
  }
  for (std::size_t i = 0; i < windows_.size(); ++i) fn(spilled_ + i, windows_[i]);
}

void MetricsCollector::on_arrival(Time now) {
  ++submitted_;
  if (first_arrival_ < 0) first_arrival_ = now;
  last_arrival_ = now;
  window_at(now).arrivals++;
}

void MetricsCollector::advance(Time now, const DeploymentView& deployment) {
  queues_sampled_ = true;
  const std::size_t current = window_index(now);
  while (closed_windows_ < current) {
    WindowStats& w = window_at(static_cast<double>(closed_windows_) * window_);
    for (std::size_t t = 0; t < task_count_; ++t) {
      w.queue_length[t] = deployment.queued_at(static_cast<TaskId>(t));
    }
    ++closed_windows_;
  }
  // Closed windows go out in groups, so the vector's front is rarely moved; the last closed
  // one stays (closing window k looks it up at k x window, which may round into k - 1).
  if (spill_file_ && closed_windows_ > spilled_ + 256) spill(closed_windows_ - 1 - spilled_);
}

uint64_t MetricsCollector::finished() const {
  uint64_t n = 0;
  for (uint64_t c : outcomes_) n += c;
  return n;
}

void MetricsCollector::add_wasted(WindowStats& w, const RequestRecord& r) {
  const std::size_t n = std::min({r.gpu_by_task.size(), w.wasted_gpu.size(), tasks_.size()});
  for (std::size_t t = 0; t < n; ++t) {
    w.wasted_gpu[t] += r.gpu_by_task[t];
    tasks_[t].wasted_gpu += r.gpu_by_task[t];
  }
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
      add_wasted(w, r);
      break;
    case Outcome::kDropped:
      w.dropped++;
      tasks_[r.drop_task].dropped++;
      if (r.drop_task < w.dropped_at.size()) w.dropped_at[r.drop_task]++;
      add_wasted(w, r);
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
