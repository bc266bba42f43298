#include "policy/pard/state_planner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "engine/deployment_view.hpp"
#include "engine/policies.hpp"
#include "policy/pard/batch_wait.hpp"

namespace tessera {
namespace {

// All paths from the children of `task` down to a leaf.
void collect_paths(const App& app, TaskId task, std::vector<TaskId>& prefix,
                   std::vector<std::vector<TaskId>>& out) {
  const Task& t = app.tasks[task];
  if (t.is_leaf()) {
    out.push_back(prefix);
    return;
  }
  for (uint32_t e : t.out_edges) {
    prefix.push_back(app.edges[e].to);
    collect_paths(app, app.edges[e].to, prefix, out);
    prefix.pop_back();
  }
}

// Mean profiled latency over the task's live workers at a batch size.
Time mean_latency(const std::vector<Worker*>& workers, int batch) {
  Time sum = 0.0;
  int n = 0;
  for (const Worker* w : workers) {
    if (!w->alive) continue;
    sum += w->profiled_latency(0, std::min(batch, w->max_batch));
    ++n;
  }
  return n ? sum / n : 0.0;
}

}  // namespace

StatePlanner::StatePlanner(const App& app, PardSettings settings, uint64_t seed)
    : app_(app),
      settings_(settings),
      tasks_(app.tasks.size()),
      paths_(app.tasks.size()),
      rng_(seed) {
  path_edges_.resize(app.tasks.size());
  for (std::size_t t = 0; t < app.tasks.size(); ++t) {
    std::vector<TaskId> prefix;
    collect_paths(app, static_cast<TaskId>(t), prefix, paths_[t]);
    for (const auto& path : paths_[t]) {
      std::vector<uint32_t> edges;
      auto from = static_cast<TaskId>(t);
      for (TaskId to : path) {
        for (uint32_t e : app.tasks[from].out_edges) {
          if (app.edges[e].to == to) {
            edges.push_back(e);
            break;
          }
        }
        from = to;
      }
      // The prefix of the path every request certainly takes.
      std::size_t certain = 0;
      for (uint32_t e : edges) {
        const Task& parent = app.tasks[app.edges[e].from];
        bool sure =
            app.edges[e].mode == EdgeMode::kAll && parent.fanout == FanoutDistribution::kFixed;
        for (const Variant& v : parent.variants) sure = sure && std::lround(v.fanout_mean) >= 1;
        if (!sure) break;
        ++certain;
      }
      certain_.resize(app.tasks.size());
      certain_[t].push_back(certain);
      path_edges_[t].push_back(std::move(edges));
    }
  }
  order_ = app.topological_order();
  finish_.assign(app.tasks.size(), 0.0);
}

Time StatePlanner::join_wait(uint32_t edge) const {
  const Edge& in = app_.edges[edge];
  const Time own = finish_[in.from] + in.delay;
  Time slowest = own;
  for (uint32_t e : app_.tasks[in.to].in_edges) {
    slowest = std::max(slowest, finish_[app_.edges[e].from] + app_.edges[e].delay);
  }
  return slowest - own;
}

void StatePlanner::on_arrival(TaskId task, Time) {
  tasks_[task].arrivals_since_sync++;
  tasks_[task].arrivals_since_mode++;
}

void StatePlanner::on_queue_delay(TaskId task, Time delay, Time now) {
  tasks_[task].delays.emplace_back(now, delay);
}

void StatePlanner::on_batch_start(TaskId task, int size, Time now) {
  tasks_[task].batches.emplace_back(now, size);
}

void StatePlanner::prune(TaskState& t, Time now) const {
  while (!t.delays.empty() && t.delays.front().first < now - settings_.queue_window) {
    t.delays.pop_front();
  }
  while (!t.batches.empty() && t.batches.front().first < now - settings_.queue_window) {
    t.batches.pop_front();
  }
}

void StatePlanner::maybe_sync(const DeploymentView& view, Time now) {
  if (!synced_once_ || now >= next_sync_) {
    sync(view, now);
  } else if (settings_.mode_period > 0 && now >= next_mode_) {
    update_modes(view, now);
  }
}

namespace {

// A task's load: T_m at the configured batch sizes and the items queued at its live workers.
std::pair<double, std::size_t> capacity_and_queued(const std::vector<Worker*>& workers) {
  double capacity = 0.0;
  std::size_t queued = 0;
  for (const Worker* w : workers) {
    if (!w->alive || w->max_batch < 1) continue;
    capacity += w->max_batch / w->profiled_latency(0, w->max_batch);
    if (w->queue != nullptr) queued += w->queue->size();
  }
  return {capacity, queued};
}

}  // namespace

void StatePlanner::update_modes(const DeploymentView& view, Time now) {
  const Time period = std::max(now - last_mode_, 1e-9);
  bool changed = false;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    TaskState& t = tasks_[i];
    const auto [capacity, queued] = capacity_and_queued(view.workers_of(static_cast<TaskId>(i)));
    double load = static_cast<double>(t.arrivals_since_mode) / period;
    if (settings_.backlog_load) load += static_cast<double>(queued) / period;
    t.arrivals_since_mode = 0;
    t.mu = capacity > 0 ? load / capacity : 0.0;
    const PriorityMode mode = next_mode(t.mode, t.mu, t.epsilon, settings_.hysteresis);
    changed = changed || mode != t.mode;
    t.mode = mode;
  }
  last_mode_ = now;
  next_mode_ = now + settings_.mode_period;
  if (changed) ++syncs_;
}

PriorityMode StatePlanner::next_mode(PriorityMode current, double mu, double epsilon,
                                     bool hysteresis) {
  if (!hysteresis) return mu > 1.0 ? PriorityMode::kHighBudgetFirst : PriorityMode::kLowBudgetFirst;
  if (mu > 1.0 + epsilon) return PriorityMode::kHighBudgetFirst;
  if (mu < 1.0 - epsilon) return PriorityMode::kLowBudgetFirst;
  return current;
}

void StatePlanner::sync(const DeploymentView& view, Time now) {
  const Time period = synced_once_ ? std::max(now - last_sync_, 1e-9) : settings_.sync_period;
  const auto history = static_cast<std::size_t>(
      std::max(1.0, std::round(settings_.rate_window / settings_.sync_period)));

  // Per-task state: q_i, d_i, load factor and priority mode.
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    TaskState& t = tasks_[i];
    prune(t, now);
    double weighted = 0.0;
    double weights = 0.0;
    for (const auto& [when, delay] : t.delays) {
      const double w =
          std::max(0.0, settings_.queue_window - (now - when)) / settings_.queue_window;
      weighted += w * delay;
      weights += w;
    }
    t.q = weights > 0 ? weighted / weights : 0.0;

    const auto& workers = view.workers_of(static_cast<TaskId>(i));
    // The backlog: how long each live worker needs for its queued items at its configured
    // batch size, averaged over the task's workers.
    Time backlog = 0.0;
    int live = 0;
    std::size_t queued = 0;
    for (const Worker* w : workers) {
      if (!w->alive) continue;
      ++live;
      if (w->queue == nullptr || w->max_batch < 1) continue;
      queued += w->queue->size();
      const double per_item = w->profiled_latency(0, w->max_batch) / w->max_batch;
      backlog += static_cast<double>(w->queue->size()) * per_item;
    }
    t.backlog = live ? backlog / live : 0.0;
    if (settings_.backlog_queueing) {
      // Sampled once per sync into the same linearly weighted window as the delays.
      t.backlogs.emplace_back(now, t.backlog);
      while (!t.backlogs.empty() && t.backlogs.front().first < now - settings_.queue_window)
        t.backlogs.pop_front();
      double bw = 0.0;
      double bsum = 0.0;
      for (const auto& [when, b] : t.backlogs) {
        const double w =
            std::max(0.0, settings_.queue_window - (now - when)) / settings_.queue_window;
        bsum += w * b;
        bw += w;
      }
      if (bw > 0) t.q = std::max(t.q, bsum / bw);
    }
    double batch_sum = 0.0;
    for (const auto& b : t.batches) batch_sum += b.second;
    const int batch = t.batches.empty()
                          ? 1
                          : std::max(1, static_cast<int>(std::lround(
                                            batch_sum / static_cast<double>(t.batches.size()))));
    t.d = mean_latency(workers, batch);
    t.d_single = mean_latency(workers, 1);
    t.d_fastest = std::numeric_limits<Time>::infinity();
    for (const Worker* w : workers) {
      if (!w->alive) continue;
      for (std::size_t v = 0; v < w->latency.size(); ++v) {
        t.d_fastest = std::min(t.d_fastest, w->profiled_latency(static_cast<int>(v), 1));
      }
    }
    if (!std::isfinite(t.d_fastest)) t.d_fastest = 0.0;

    double capacity = 0.0;  // T_m: the task's throughput at its configured batch sizes
    for (const Worker* w : workers) {
      if (w->alive) capacity += w->max_batch / w->profiled_latency(0, w->max_batch);
    }
    const double rate = static_cast<double>(t.arrivals_since_sync) / period;  // T_in
    t.arrivals_since_sync = 0;
    double smoothed = rate;
    {
      double sum = rate;
      std::size_t n = 1;
      for (auto it = t.rates.rbegin(); it != t.rates.rend() && n < history; ++it, ++n)
        sum += it->first;
      smoothed = sum / static_cast<double>(n);
    }
    t.rates.emplace_back(rate, smoothed);
    while (t.rates.size() > history) t.rates.pop_front();
    double deviation = 0.0;
    double total = 0.0;
    for (const auto& [r, s] : t.rates) {
      deviation += std::abs(r - s);
      total += r;
    }
    t.epsilon = total > 0 ? deviation / total : 0.0;
    const double load = settings_.backlog_load ? rate + static_cast<double>(queued) / period : rate;
    t.mu = capacity > 0 ? load / capacity : 0.0;
    t.mode = next_mode(t.mode, t.mu, t.epsilon, settings_.hysteresis);
    t.arrivals_since_mode = 0;
  }
  last_mode_ = now;
  next_mode_ = now + settings_.mode_period;

  // Each task's expected finish after the request's start, for the joins' waits.
  for (TaskId t : order_) {
    Time start = 0.0;
    for (uint32_t e : app_.tasks[t].in_edges) {
      start = std::max(start, finish_[app_.edges[e].from] + app_.edges[e].delay);
    }
    finish_[t] = start + tasks_[t].q + 1.5 * tasks_[t].d;
  }

  // Downstream estimates per task, from the state just computed.
  for (std::size_t k = 0; k < tasks_.size(); ++k) {
    Time worst = 0.0;
    Time worst_service = 0.0;
    Time floor = 0.0;
    for (std::size_t p = 0; p < paths_[k].size(); ++p) {
      Time sure = 0.0;
      for (std::size_t j = 0; j < certain_[k][p]; ++j) {
        sure += app_.edges[path_edges_[k][p][j]].delay + tasks_[paths_[k][p][j]].d_fastest;
      }
      floor = std::max(floor, sure);
      const auto& path = paths_[k][p];
      Time hops = 0.0;   // edge delays
      Time joins = 0.0;  // the waits at joins for slower inputs
      for (uint32_t e : path_edges_[k][p]) {
        hops += app_.edges[e].delay;
        if (app_.tasks[app_.edges[e].to].is_join()) joins += join_wait(e);
      }
      Time q = 0.0;
      Time d = 0.0;
      Time d1 = 0.0;
      cycles_.clear();
      for (TaskId i : path) {
        q += tasks_[i].q;
        d += tasks_[i].d;
        d1 += tasks_[i].d_single;
        cycles_.push_back(tasks_[i].d);
      }
      const Time w =
          batch_wait_quantile(cycles_, settings_.lambda, settings_.samples, rng_, scratch_);
      worst = std::max(worst, q + d + w + hops + joins);
      worst_service = std::max(worst_service, d1 + hops);
    }
    tasks_[k].lsub = worst;
    tasks_[k].lsub_service = worst_service;
    tasks_[k].lsub_floor = floor;
  }

  last_sync_ = now;
  next_sync_ = (synced_once_ ? next_sync_ : now) + settings_.sync_period;
  while (next_sync_ <= now) next_sync_ += settings_.sync_period;
  synced_once_ = true;
  ++syncs_;
}

}  // namespace tessera
