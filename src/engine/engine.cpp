#include "engine/engine.hpp"

#include <algorithm>
#include <stdexcept>

#include "policy/work_queue.hpp"

namespace tessera {

Engine::Engine(const App& app, const Deployment& deployment, const ProfileTable& profiles,
               const PolicySet& policies, const Clock& clock, EngineDriver& driver,
               EngineObserver& observer, uint64_t seed)
    : app_(app),
      clock_(clock),
      driver_(driver),
      observer_(observer),
      policies_(policies.instantiate(app, seed)),
      batching_(*policies_.batching),
      dropping_(*policies_.dropping),
      variant_(*policies_.variant),
      max_queue_(policies.config().max_queue),
      task_workers_(app.tasks.size()),
      task_queues_(app.tasks.size()),
      parked_(app.tasks.size()),
      rng_(seed) {
  for (const WorkerGroup& group : deployment.groups) add_workers(group, profiles);
  std::size_t max_out = 0;
  for (const Task& task : app.tasks) {
    dispatchers_.push_back(policies_.make_dispatcher(static_cast<TaskId>(dispatchers_.size())));
    std::vector<FanoutSampler> per_variant;
    for (const Variant& v : task.variants) per_variant.emplace_back(task.fanout, v.fanout_mean);
    fanout_.push_back(std::move(per_variant));
    max_out = std::max(max_out, task.out_edges.size());
  }
  scratch_out_.resize(max_out);
  track_tasks_ = app.has_joins();
}

Engine::~Engine() = default;

std::vector<WorkerId> Engine::add_workers(const WorkerGroup& group, const ProfileTable& profiles) {
  if (group.task >= app_.tasks.size())
    throw std::invalid_argument("worker group task out of range");
  const Task& task = app_.tasks[group.task];
  std::vector<std::vector<Time>> latency;
  for (int v : group.variants) {
    const std::string& name = task.variants.at(static_cast<std::size_t>(v)).name;
    if (!profiles.has(name, group.segment)) {
      throw std::invalid_argument("task '" + task.name + "': no profile for variant '" + name +
                                  "' on segment '" + group.segment + "'");
    }
    std::vector<Time> row(static_cast<std::size_t>(group.max_batch) + 1, 0.0);
    for (int b = 1; b <= group.max_batch; ++b) {
      row[static_cast<std::size_t>(b)] = profiles.latency(name, group.segment, b);
    }
    latency.push_back(std::move(row));
  }
  std::vector<WorkerId> ids;
  for (int copy = 0; copy < group.count; ++copy) {
    auto w = std::make_unique<Worker>();
    w->id = static_cast<WorkerId>(workers_.size());
    w->task = group.task;
    w->segment = group.segment;
    w->max_batch = group.max_batch;
    w->batch_timeout = group.batch_timeout;
    w->variants = group.variants;
    w->latency = latency;
    if (policies_.shared_queue) {
      auto& shared = task_queues_[group.task];
      if (!shared) shared = policies_.make_queue(group.task);
      w->queue = shared;
    } else {
      w->queue = policies_.make_queue(group.task);
    }
    task_workers_[group.task].push_back(w.get());
    ids.push_back(w->id);
    workers_.push_back(std::move(w));
  }
  ++deployment_version_;
  // Items held for this task during a reconfiguration go to the new workers.
  if (!ids.empty() && !parked_[group.task].empty()) {
    std::vector<Item> held;
    held.swap(parked_[group.task]);
    deliver(held);
  }
  // A task-wide queue that outlived its workers is served again.
  if (!ids.empty() && policies_.shared_queue && !task_queues_[group.task]->empty()) {
    kick(*workers_[ids.front()]);
  }
  return ids;
}

void Engine::set_batch_timeout(TaskId task, Time timeout) {
  for (Worker* w : task_workers_[task]) {
    if (w->batch_timeout == timeout) continue;
    w->batch_timeout = timeout;
    if (!w->busy) try_start(*w);  // a shorter wait may already be over
  }
}

void Engine::set_reconfiguring(bool on) {
  reconfiguring_ = on;
  if (on) return;
  // Nothing more is coming: items still held have no worker to go to.
  for (auto& held : parked_) {
    std::vector<Item> items;
    items.swap(held);
    for (const Item& item : items) terminate(item, Outcome::kFailed, DropReason::kNone);
  }
}

std::size_t Engine::queued_at(TaskId task) const {
  std::size_t n = 0;
  for (const Worker* w : task_workers_[task]) n += w->forming.size();
  if (task_queues_[task]) return n + task_queues_[task]->size();
  for (const Worker* w : task_workers_[task]) n += w->queue->size();
  return n;
}

RequestSlot Engine::allocate_request() {
  if (!free_slots_.empty()) {
    RequestSlot slot = free_slots_.back();
    free_slots_.pop_back();
    requests_[slot] = RequestState{};
    if (track_tasks_) {
      const std::size_t base = std::size_t{slot} * app_.tasks.size();
      std::fill_n(task_live_.begin() + static_cast<std::ptrdiff_t>(base), app_.tasks.size(), 0u);
      std::fill_n(join_inputs_.begin() + static_cast<std::ptrdiff_t>(base), app_.tasks.size(), 0u);
      std::fill_n(join_released_.begin() + static_cast<std::ptrdiff_t>(base), app_.tasks.size(),
                  uint8_t{0});
    }
    return slot;
  }
  requests_.emplace_back();
  if (track_tasks_) {
    task_live_.resize(task_live_.size() + app_.tasks.size(), 0);
    join_inputs_.resize(join_inputs_.size() + app_.tasks.size(), 0);
    join_accuracy_.resize(join_accuracy_.size() + app_.tasks.size(), 1.0);
    join_released_.resize(join_released_.size() + app_.tasks.size(), 0);
  }
  return static_cast<RequestSlot>(requests_.size() - 1);
}

uint64_t Engine::submit(const Arrival& arrival) {
  const Time now = clock_.now();
  const RequestSlot slot = allocate_request();
  RequestState& r = requests_[slot];
  r.id = next_id_++;
  r.arrival = now;
  r.deadline = now + (arrival.slo_s > 0 ? arrival.slo_s : app_.slo);
  ++in_flight_;

  std::vector<Item> entering;
  entering.reserve(app_.roots.size());
  for (TaskId root : app_.roots) {
    entering.push_back(Item{slot, root, 1.0, now, r.deadline, now});
    ++r.live;
    if (track_tasks_) ++task_live_[std::size_t{slot} * app_.tasks.size() + root];
  }
  const uint64_t id = r.id;
  emit(entering, app_.ingress_delay);
  return id;
}

void Engine::emit(std::vector<Item>& items, Time delay) {
  if (items.empty()) return;
  if (delay > 0) {
    driver_.deliver_later(std::move(items), clock_.now() + delay);
    items.clear();
    return;
  }
  deliver(items);
  items.clear();
}

// Items that arrive together are all queued before any worker forms a batch, so that
// queue-order policies choose among all of them.
void Engine::deliver(const std::vector<Item>& items) {
  std::vector<Worker*> touched;
  touched.reserve(items.size() < 8 ? items.size() : 8);
  for (const Item& item : items) {
    if (Worker* w = arrive(item)) {
      if (std::find(touched.begin(), touched.end(), w) == touched.end()) touched.push_back(w);
    }
  }
  for (Worker* w : touched) kick(*w);
}

void Engine::kick(Worker& worker) {
  if (worker.alive) {
    if (!worker.busy) {
      try_start(worker);
    } else if (batching_.forms_while_busy()) {
      fill_forming(worker);
    }
  }
  // A task-wide queue is served by every idle worker while it holds anything.
  if (policies_.shared_queue) {
    for (Worker* other : task_workers_[worker.task]) {
      if (worker.queue->empty()) break;
      if (other != &worker && other->alive && !other->busy) try_start(*other);
    }
  }
}

Worker* Engine::arrive(Item item) {
  if (requests_[item.request].terminated) {
    retire_item(item);
    return nullptr;
  }
  item.enqueued = clock_.now();
  const auto& candidates = task_workers_[item.task];
  const int pick = candidates.empty() ? -1 : dispatchers_[item.task]->pick(candidates, item);
  if (pick < 0 && reconfiguring_) {
    parked_[item.task].push_back(item);  // its new workers are on their way
    return nullptr;
  }
  if (pick < 0) {
    terminate(item, Outcome::kFailed, DropReason::kNone);
    return nullptr;
  }
  Worker& worker = *candidates[static_cast<std::size_t>(pick)];
  return enqueue(worker, item) ? &worker : nullptr;
}

bool Engine::enqueue(Worker& worker, const Item& item) {
  DropContext ctx{clock_.now(), worker.busy ? worker.running_expected_end : clock_.now(), 0.0,
                  &worker, this};
  DropReason reason = dropping_.on_enqueue(item, ctx);
  if (reason == DropReason::kNone && max_queue_ > 0 && worker.queue->size() >= max_queue_) {
    reason = DropReason::kQueueFull;
  }
  if (reason != DropReason::kNone) {
    terminate(item, Outcome::kDropped, reason);
    return false;
  }
  worker.queue->push(item);
  dropping_.on_arrival(item, worker, *this, clock_.now());
  return true;
}

bool Engine::admit_to_batch(Worker& worker, const Item& item, Time batch_start, Time exec_time) {
  if (requests_[item.request].terminated) {
    retire_item(item);
    return false;
  }
  DropContext ctx{clock_.now(), batch_start, exec_time, &worker, this};
  const DropReason reason = dropping_.on_batch(item, ctx);
  if (reason != DropReason::kNone) {
    terminate(item, Outcome::kDropped, reason);
    return false;
  }
  return true;
}

void Engine::try_start(Worker& worker) {
  const Time now = clock_.now();
  while (!worker.busy && worker.alive && !worker.queue->empty()) {
    const BatchPlan plan = batching_.plan(worker, now);
    if (!plan.start) {
      if (worker.timer_at != plan.wake_at) {
        worker.timer_at = plan.wake_at;
        driver_.set_timer(worker.id, ++worker.timer_generation, plan.wake_at);
      }
      return;
    }
    const BatchChoice choice = variant_.choose(worker, now);
    const int target =
        static_cast<int>(std::min<std::size_t>(worker.queue->size(), std::size_t(choice.max_size)));
    const Time exec = worker.profiled_latency(choice.variant_slot, target);
    while (worker.running.size() < static_cast<std::size_t>(choice.max_size) &&
           !worker.queue->empty()) {
      Item item = worker.queue->pop();
      if (admit_to_batch(worker, item, now, exec)) worker.running.push_back(item);
    }
    if (!worker.running.empty()) start_running(worker, worker.running, choice.variant_slot);
  }
}

void Engine::start_running(Worker& worker, std::vector<Item>& batch, int variant_slot) {
  const Time now = clock_.now();
  if (&batch != &worker.running) worker.running.swap(batch);
  worker.running_variant = variant_slot;
  worker.busy = true;
  worker.timer_at = -1.0;
  worker.running_start = now;
  worker.running_expected_end =
      now + worker.profiled_latency(variant_slot, static_cast<int>(worker.running.size()));
  ++worker.batches;
  dropping_.on_batch_start(worker, static_cast<int>(worker.running.size()), *this, now);
  observer_.on_batch_start(worker, now);
  driver_.start_batch(worker);
  if (batching_.forms_while_busy()) fill_forming(worker);
}

void Engine::fill_forming(Worker& worker) {
  if (worker.queue->empty()) return;
  if (worker.forming.empty()) {
    const BatchChoice choice = variant_.choose(worker, clock_.now());
    worker.forming_variant = choice.variant_slot;
    worker.forming_cap = choice.max_size;
  }
  const auto cap = static_cast<std::size_t>(worker.forming_cap);
  const int target = static_cast<int>(std::min(cap, worker.forming.size() + worker.queue->size()));
  const Time exec = worker.profiled_latency(worker.forming_variant, target);
  while (worker.forming.size() < cap && !worker.queue->empty()) {
    Item item = worker.queue->pop();
    if (admit_to_batch(worker, item, worker.running_expected_end, exec)) {
      worker.forming.push_back(item);
    }
  }
}

void Engine::on_batch_done(WorkerId id) { on_batch_done(id, {}); }

void Engine::on_batch_done(WorkerId id, std::span<const int> fanout) {
  // Copied first: starting the next batch below may reuse the driver's buffer.
  scratch_fanout_.assign(fanout.begin(), fanout.end());
  Worker& worker = *workers_.at(id);
  const Time now = clock_.now();
  const Time duration = now - worker.running_start;
  const int variant = worker.variants[static_cast<std::size_t>(worker.running_variant)];
  worker.busy_time += duration;
  worker.items_done += worker.running.size();
  observer_.on_batch_done(worker, duration, now);

  // Start the next batch before routing results so the device never idles on bookkeeping.
  std::vector<Item> done;
  done.swap(scratch_batch_);
  done.swap(worker.running);
  worker.busy = false;
  worker.last_batch_end = now;
  if (worker.alive) {
    if (!worker.forming.empty()) {
      start_running(worker, worker.forming, worker.forming_variant);
    } else {
      try_start(worker);
    }
  }
  const Time share = done.empty() ? 0.0 : duration / static_cast<double>(done.size());
  for (std::size_t i = 0; i < done.size(); ++i) {
    const Item& item = done[i];
    requests_[item.request].gpu_time += share;
    finish_item(item, variant, i < scratch_fanout_.size() ? scratch_fanout_[i] : -1);
  }
  done.clear();
  scratch_batch_.swap(done);
}

void Engine::on_timer(WorkerId id, uint64_t generation) {
  Worker& worker = *workers_.at(id);
  if (generation != worker.timer_generation || worker.busy) return;
  worker.timer_at = -1.0;
  try_start(worker);
}

void Engine::kill_worker(WorkerId id) {
  Worker& worker = *workers_.at(id);
  if (!worker.alive) return;
  worker.alive = false;
  ++worker.timer_generation;
  ++deployment_version_;
  // Out of the task's list, so dispatch and policies see only live workers; its running
  // batch still finishes through workers_.
  auto& list = task_workers_[worker.task];
  list.erase(std::find(list.begin(), list.end(), &worker));
  std::vector<Item> orphans;
  const bool others_alive = !list.empty();
  // A task-wide queue stays with the task's other workers (or, during a reconfiguration,
  // waits for new ones); a private one is re-dispatched.
  if (!policies_.shared_queue || (!others_alive && !reconfiguring_)) worker.queue->drain(orphans);
  orphans.insert(orphans.end(), worker.forming.begin(), worker.forming.end());
  worker.forming.clear();
  deliver(orphans);
}

void Engine::finish_item(const Item& item, int task_variant, int fanout) {
  if (!requests_[item.request].terminated) {
    const Task& task = app_.tasks[item.task];
    const double accuracy =
        item.accuracy * task.variants[static_cast<std::size_t>(task_variant)].accuracy;
    route(item, task_variant, accuracy, fanout);
  }
  retire_item(item);
}

void Engine::route(const Item& item, int task_variant, double accuracy, int fanout) {
  RequestState& r = requests_[item.request];
  const Task& task = app_.tasks[item.task];
  const std::size_t tasks = app_.tasks.size();
  int derived = 0;
  if (!task.is_leaf()) {
    derived = fanout >= 0 ? fanout
                          : fanout_[item.task][static_cast<std::size_t>(task_variant)].draw(rng_);
  }

  // Split the derived sub-requests over the out-edges: every kAll edge gets all of them;
  // each one picks at most one kShare edge by the edge shares.
  std::size_t created = 0;
  std::size_t joined = 0;
  auto give = [&](std::size_t edge_slot, int count) {
    const Edge& edge = app_.edges[task.out_edges[edge_slot]];
    if (count <= 0) return;
    if (app_.tasks[edge.to].is_join()) {
      const std::size_t k = std::size_t{item.request} * tasks + edge.to;
      join_accuracy_[k] = join_inputs_[k] == 0 ? accuracy : std::min(join_accuracy_[k], accuracy);
      join_inputs_[k] += static_cast<uint32_t>(count);
      joined += static_cast<std::size_t>(count);
      return;
    }
    for (int i = 0; i < count; ++i) {
      scratch_out_[edge_slot].push_back(
          Item{item.request, edge.to, accuracy, item.origin, item.deadline, 0.0});
    }
    r.live += static_cast<uint32_t>(count);
    if (track_tasks_)
      task_live_[std::size_t{item.request} * tasks + edge.to] += static_cast<uint32_t>(count);
    created += static_cast<std::size_t>(count);
  };

  bool has_share = false;
  for (std::size_t e = 0; e < task.out_edges.size(); ++e) {
    const Edge& edge = app_.edges[task.out_edges[e]];
    if (edge.mode == EdgeMode::kAll) {
      give(e, derived);
    } else {
      has_share = true;
    }
  }
  if (has_share && derived > 0) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    // Count per share edge first so each edge's items are emitted together.
    std::vector<int> counts(task.out_edges.size(), 0);
    for (int i = 0; i < derived; ++i) {
      double u = unit(rng_);
      for (std::size_t e = 0; e < task.out_edges.size(); ++e) {
        const Edge& edge = app_.edges[task.out_edges[e]];
        if (edge.mode != EdgeMode::kShare) continue;
        u -= edge.share_by_variant[static_cast<std::size_t>(task_variant)];
        if (u < 0) {
          counts[e]++;
          break;
        }
      }
    }
    for (std::size_t e = 0; e < counts.size(); ++e) give(e, counts[e]);
  }
  if (created == 0 && joined == 0) {
    // A leaf, or an item that derived nothing (a frame with no objects): its result is final.
    r.accuracy_sum += accuracy;
    r.accuracy_count++;
  }
  for (std::size_t e = 0; e < task.out_edges.size(); ++e) {
    emit(scratch_out_[e], app_.edges[task.out_edges[e]].delay);
  }
}

bool Engine::release_join_if_ready(RequestSlot slot, TaskId join, std::vector<Item>& out,
                                   Time& delay) {
  const std::size_t tasks = app_.tasks.size();
  const std::size_t k = std::size_t{slot} * tasks + join;
  if (join_released_[k] || join_inputs_[k] == 0) return false;
  for (TaskId a : app_.tasks[join].ancestors) {
    if (task_live_[std::size_t{slot} * tasks + a] != 0) return false;
  }
  join_released_[k] = 1;
  RequestState& r = requests_[slot];
  ++r.live;
  ++task_live_[k];
  for (uint32_t e : app_.tasks[join].in_edges) delay = std::max(delay, app_.edges[e].delay);
  out.push_back(Item{slot, join, join_accuracy_[k], r.arrival, r.deadline, 0.0});
  return true;
}

void Engine::terminate(const Item& item, Outcome outcome, DropReason reason) {
  RequestState& r = requests_[item.request];
  if (!r.terminated) {
    r.terminated = true;
    r.outcome = outcome;
    r.stop_task = item.task;
    r.reason = reason;
    observer_.on_request_stopped(r.id, outcome, item.task, reason);
  }
  retire_item(item);
}

void Engine::retire_item(const Item& item) {
  RequestState& r = requests_[item.request];
  --r.live;
  if (!track_tasks_) {
    if (r.live == 0) finish_request(item.request);
    return;
  }
  --task_live_[std::size_t{item.request} * app_.tasks.size() + item.task];
  std::vector<Item> released;
  Time delay = 0.0;
  if (!r.terminated) {
    for (std::size_t t = 0; t < app_.tasks.size(); ++t) {
      if (app_.tasks[t].is_join()) {
        release_join_if_ready(item.request, static_cast<TaskId>(t), released, delay);
      }
    }
  }
  // Released join items hold the request alive; they are sent only after this check, since
  // sending may finish the request (a drop at the join) from inside emit().
  if (r.live == 0) {
    finish_request(item.request);
    return;
  }
  emit(released, delay);
}

void Engine::finish_request(RequestSlot slot) {
  const RequestState& r = requests_[slot];
  RequestRecord rec;
  rec.id = r.id;
  rec.arrival = r.arrival;
  rec.finish = clock_.now();
  rec.gpu_time = r.gpu_time;
  if (r.terminated) {
    rec.outcome = r.outcome;
    rec.drop_task = r.stop_task;
    rec.reason = r.reason;
  } else {
    rec.outcome = rec.finish <= r.deadline + 1e-12 ? Outcome::kOk : Outcome::kLate;
    rec.accuracy = r.accuracy_count ? r.accuracy_sum / r.accuracy_count : 0.0;
  }
  free_slots_.push_back(slot);
  --in_flight_;
  observer_.on_request_done(rec);
}

}  // namespace tessera
