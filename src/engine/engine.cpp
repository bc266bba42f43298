#include "engine/engine.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "engine/batch_scheduler.hpp"
#include "engine/outcome_rule.hpp"

namespace tessera {
namespace {

// Expected final results one item at each task yields: 1 at a leaf; elsewhere the mean
// fan-out (over the task's variants) times what its children yield, at least 1 (an item
// that derives nothing is itself a final result).
std::vector<double> expected_results(const App& app) {
  std::vector<double> weight(app.tasks.size(), 1.0);
  std::vector<TaskId> order = app.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Task& task = app.tasks[*it];
    if (task.is_leaf() || task.variants.empty()) continue;
    double total = 0.0;
    for (std::size_t v = 0; v < task.variants.size(); ++v) {
      double per_child = 0.0;
      for (uint32_t e : task.out_edges) {
        const Edge& edge = app.edges[e];
        const double share = edge.mode == EdgeMode::kAll ? 1.0 : edge.share_by_variant[v];
        per_child += share * weight[edge.to];
      }
      total += task.variants[v].fanout_mean * per_child;
    }
    weight[*it] = std::max(1.0, total / static_cast<double>(task.variants.size()));
  }
  return weight;
}

}  // namespace

Engine::Engine(const App& app, const Deployment& deployment, const ProfileTable& profiles,
               EnginePolicies policies, const Clock& clock, EngineDriver& driver,
               EngineObserver& observer, uint64_t seed, EngineOptions options)
    : app_(app),
      clock_(clock),
      driver_(driver),
      observer_(observer),
      policies_(std::move(policies)),
      dropping_(*policies_.dropping),
      max_queue_(policies_.max_queue),
      cancel_siblings_(options.cancel_siblings_on_drop),
      cost_model_(options.cost_model ? std::move(options.cost_model)
                                     : std::make_shared<ProfileCostModel>()),
      task_workers_(app.tasks.size()),
      task_queues_(app.tasks.size()),
      loads_(app.tasks.size(), nullptr),
      parked_(app.tasks.size()),
      rng_(seed) {
  add_links(deployment.links);
  for (const WorkerGroup& group : deployment.groups) add_workers(group, profiles);
  std::size_t max_out = 0;
  for (const Task& task : app.tasks) {
    const auto id = static_cast<TaskId>(dispatchers_.size());
    dispatchers_.push_back(policies_.make_dispatcher(id));
    loads_[id] = dispatchers_.back()->loads();
    reset_loads(id);
    std::vector<FanoutSampler> per_variant;
    for (const Variant& v : task.variants) per_variant.emplace_back(task.fanout, v.fanout_mean);
    fanout_.push_back(std::move(per_variant));
    max_out = std::max(max_out, task.out_edges.size());
  }
  for (const Edge& e : app.edges) has_link_edges_ |= e.bytes_per_item > 0 && links_.size() > 0;
  scratch_out_.resize(max_out);
  scratch_link_.resize(max_out);
  scratch_share_counts_.resize(max_out);
  subrequest_weight_ = expected_results(app);
  track_tasks_ = app.has_joins();
}

Engine::~Engine() = default;

void Engine::add_links(const std::vector<LinkSpec>& links) {
  for (const LinkSpec& l : links) links_.add(l);
}

std::vector<WorkerId> Engine::add_workers(const WorkerGroup& group, const ProfileTable& profiles) {
  if (group.task >= app_.tasks.size())
    throw std::invalid_argument("worker group task out of range");
  const Task& task = app_.tasks[group.task];
  auto link_of = [&](const std::string& name) {
    if (name.empty()) return kNoLink;
    const LinkId id = links_.find(name);
    if (id == kNoLink) {
      throw std::invalid_argument("task '" + task.name + "': no link named '" + name + "'");
    }
    return id;
  };
  const LinkId uplink = link_of(group.uplink);
  const LinkId downlink = link_of(group.downlink);
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
    w->uplink = uplink;
    w->downlink = downlink;
    if (policies_.shared_queue) {
      auto& shared = task_queues_[group.task];
      if (!shared) shared = policies_.make_queue(group.task);
      w->queue = shared;
    } else {
      w->queue = policies_.make_queue(group.task);
    }
    // Reserve the batch buffers once, so that steps never grow them.
    w->running.reserve(static_cast<std::size_t>(group.max_batch));
    w->forming.reserve(static_cast<std::size_t>(group.max_batch));
    SchedulerHost& host = *this;
    // The data plane's or the run's scheduler (PPipe, LLM instances), else the batching loop.
    if (policies_.make_scheduler) {
      schedulers_.push_back(policies_.make_scheduler(*w, host, *cost_model_));
    } else {
      schedulers_.push_back(std::make_unique<BatchInstanceScheduler>(
          *policies_.batching, *policies_.variant, *policies_.dropping, host));
    }
    task_workers_[group.task].push_back(w.get());
    ids.push_back(w->id);
    workers_.push_back(std::move(w));
  }
  reset_loads(group.task);
  scratch_batch_.reserve(static_cast<std::size_t>(group.max_batch));
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

std::vector<WorkerId> Engine::apply(const DeploymentEdit& edit, const ProfileTable& profiles) {
  // Check everything first, so that a bad edit changes nothing.
  for (WorkerId id : edit.stop) {
    if (id >= workers_.size()) {
      throw std::invalid_argument("reconfiguration stops instance " + std::to_string(id) +
                                  ", but only " + std::to_string(workers_.size()) + " exist");
    }
  }
  for (const WorkerGroup& g : edit.start) {
    if (g.task >= app_.tasks.size()) throw std::invalid_argument("worker group task out of range");
    const Task& task = app_.tasks[g.task];
    for (int v : g.variants) {
      if (v < 0 || static_cast<std::size_t>(v) >= task.variants.size() ||
          !profiles.has(task.variants[static_cast<std::size_t>(v)].name, g.segment)) {
        throw std::invalid_argument("reconfiguration starts task '" + task.name +
                                    "' with a variant that has no profile on segment '" +
                                    g.segment + "'");
      }
    }
    for (const std::string* link : {&g.uplink, &g.downlink}) {
      if (!link->empty() && links_.find(*link) == kNoLink) {
        throw std::invalid_argument("reconfiguration names an unknown link '" + *link + "'");
      }
    }
  }
  for (const auto& [task, timeout] : edit.batch_timeouts) {
    if (task >= app_.tasks.size()) throw std::invalid_argument("batch timeout task out of range");
    (void)timeout;
  }

  if (edit.reconfiguring && *edit.reconfiguring) set_reconfiguring(true);
  std::vector<WorkerId> started;
  for (const WorkerGroup& g : edit.start) {
    std::vector<WorkerId> ids = add_workers(g, profiles);
    started.insert(started.end(), ids.begin(), ids.end());
  }
  for (WorkerId id : edit.stop) kill_worker(id);
  for (const auto& [task, timeout] : edit.batch_timeouts) set_batch_timeout(task, timeout);
  if (edit.reconfiguring && !*edit.reconfiguring) set_reconfiguring(false);
  return started;
}

void Engine::set_batch_timeout(TaskId task, Time timeout) {
  for (Worker* w : task_workers_[task]) {
    if (w->batch_timeout == timeout) continue;
    w->batch_timeout = timeout;
    scheduler(*w).on_settings_changed(*w);
    note_load(*w);
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
    std::fill_n(
        gpu_by_task_.begin() + static_cast<std::ptrdiff_t>(std::size_t{slot} * app_.tasks.size()),
        app_.tasks.size(), 0.0);
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
  gpu_by_task_.resize(gpu_by_task_.size() + app_.tasks.size(), 0.0);
  if (track_tasks_) {
    task_live_.resize(task_live_.size() + app_.tasks.size(), 0);
    join_inputs_.resize(join_inputs_.size() + app_.tasks.size(), 0);
    join_accuracy_.resize(join_accuracy_.size() + app_.tasks.size(), 1.0);
    join_released_.resize(join_released_.size() + app_.tasks.size(), 0);
  }
  return static_cast<RequestSlot>(requests_.size() - 1);
}

uint64_t Engine::submit(const Arrival& arrival) {
  std::vector<Item>& entering = scratch_entering_;
  entering.clear();
  const uint64_t id = enter(arrival, clock_.now(), entering);
  emit(entering, app_.ingress_delay);
  return id;
}

uint64_t Engine::submit_together(std::span<const Arrival> arrivals) {
  const uint64_t first = next_id_;
  std::vector<Item>& entering = scratch_entering_;
  entering.clear();
  const Time now = clock_.now();
  for (const Arrival& a : arrivals) enter(a, now, entering);
  emit(entering, app_.ingress_delay);
  return first;
}

uint64_t Engine::enter(const Arrival& arrival, Time now, std::vector<Item>& entering) {
  const RequestSlot slot = allocate_request();
  RequestState& r = requests_[slot];
  r.id = next_id_++;
  r.arrival = now;
  r.deadline = now + (arrival.slo_s > 0 ? arrival.slo_s : app_.slo);
  ++in_flight_;
  for (TaskId root : app_.roots) {
    Item item{slot, root, 1.0, now, r.deadline, now};
    item.tokens_in = arrival.input_tokens;
    item.tokens_out = arrival.output_tokens;
    item.shared_prefix_tokens = arrival.shared_prefix_tokens;
    item.prefix_group = arrival.prefix_group;
    entering.push_back(item);
    ++r.live;
    if (track_tasks_) ++task_live_[std::size_t{slot} * app_.tasks.size() + root];
  }
  return r.id;
}

void Engine::emit(std::vector<Item>& items, Time delay) {
  if (items.empty()) return;
  if (delay > 0) {
    driver_.deliver_later(items, clock_.now() + delay);
    items.clear();
    return;
  }
  deliver(items);
  items.clear();
}

// Items that arrive together are all queued before any worker forms a batch, so that
// queue-order policies choose among all of them.
void Engine::deliver(std::span<const Item> items) {
  // One item (most deliveries): its worker, if any, is the one to kick.
  if (items.size() == 1) {
    if (Worker* w = arrive(items[0])) kick(*w);
    return;
  }
  // The workers whose queues grew, without allocating for the usual few.
  std::array<Worker*, 16> few;
  std::size_t n_few = 0;
  std::vector<Worker*> many;
  for (const Item& item : items) {
    Worker* w = arrive(item);
    if (w == nullptr) continue;
    if (std::find(few.begin(), few.begin() + static_cast<std::ptrdiff_t>(n_few), w) !=
        few.begin() + static_cast<std::ptrdiff_t>(n_few))
      continue;
    if (n_few < few.size()) {
      few[n_few++] = w;
    } else if (std::find(many.begin(), many.end(), w) == many.end()) {
      many.push_back(w);
    }
  }
  for (std::size_t i = 0; i < n_few; ++i) kick(*few[i]);
  for (Worker* w : many) kick(*w);
}

void Engine::kick(Worker& worker) {
  scheduler(worker).on_queue_grew(worker);
  note_load(worker);
  // A task-wide queue is served by every idle worker while it holds anything.
  if (policies_.shared_queue) {
    for (Worker* other : task_workers_[worker.task]) {
      if (worker.queue->empty()) break;
      if (other != &worker && other->alive && !other->busy) {
        scheduler(*other).on_queue_grew(*other);
        note_load(*other);
      }
    }
  }
}

Worker* Engine::arrive(Item item) {
  if (cancelled(requests_[item.request])) {
    discard(item);
    return nullptr;
  }
  item.enqueued = clock_.now();
  // A link transfer already chose the receiving instance; it is used while it serves.
  if (item.target != kAnyWorker) {
    const WorkerId target = item.target;
    item.target = kAnyWorker;
    if (target < workers_.size() && workers_[target]->alive) {
      Worker& worker = *workers_[target];
      return enqueue(worker, item) ? &worker : nullptr;
    }
  }
  const auto& candidates = task_workers_[item.task];
  const int pick = candidates.empty() ? -1 : dispatchers_[item.task]->pick(candidates, item);
  if (pick < 0 && reconfiguring_) {
    parked_[item.task].push_back(item);  // its new workers are on their way
    return nullptr;
  }
  if (pick < 0) {
    const DropReason refusal =
        candidates.empty() ? DropReason::kNone : dispatchers_[item.task]->last_refusal();
    terminate(item, refusal == DropReason::kNone ? Outcome::kFailed : Outcome::kDropped, refusal);
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
  note_load(worker);
  dropping_.on_arrival(item, worker, *this, clock_.now());
  return true;
}

bool Engine::admit(Worker& worker, const Item& item, Time start, Time exec) {
  note_load(worker);  // the scheduler took `item` from the queue; what follows may dispatch
  if (cancelled(requests_[item.request])) {
    discard(item);
    return false;
  }
  DropContext ctx{clock_.now(), start, exec, &worker, this};
  const DropReason reason = dropping_.on_batch(item, ctx);
  if (reason != DropReason::kNone) {
    terminate(item, Outcome::kDropped, reason);
    return false;
  }
  return true;
}

void Engine::start_step(Worker& worker) {
  StepContents step;
  step.variant_slot = worker.running_variant;
  step.batch = static_cast<int>(worker.running.size());
  for (const Item& item : worker.running) {
    step.tokens_in += item.tokens_in;
    step.tokens_out += item.tokens_out;
  }
  start_step(worker, step);
}

void Engine::record_tokens(const Item& item, const TokenTimes& times) {
  requests_[item.request].tokens = times;
}

void Engine::report_llm_step(const Worker& worker, const LlmStepStats& stats) {
  note_load(worker);  // the observer hears of the step with the worker's load up to date
  observer_.on_llm_step(worker, stats);
}

void Engine::start_step(Worker& worker, const StepContents& step) {
  note_load(worker);
  const Time now = clock_.now();
  worker.busy = true;
  worker.timer_at = -1.0;
  worker.running_start = now;
  worker.running_duration = cost_model_->step_time(worker, step);
  worker.running_expected_end = now + worker.running_duration;
  ++worker.batches;
  dropping_.on_batch_start(worker, step.batch, *this, now);
  observer_.on_batch_start(worker, now);
  driver_.start_batch(worker);
}

void Engine::set_timer(Worker& worker, Time at) {
  worker.timer_at = at;
  driver_.set_timer(worker.id, ++worker.timer_generation, at);
}

void Engine::drop_queued(Worker& worker, const Item& item, DropReason reason) {
  note_load(worker);
  if (cancelled(requests_[item.request])) {
    discard(item);
    return;
  }
  terminate(item, Outcome::kDropped, reason);
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
  scheduler(worker).on_step_done(worker);
  note_load(worker);
  const Time share = done.empty() ? 0.0 : duration / static_cast<double>(done.size());
  routing_from_ = &worker;
  for (std::size_t i = 0; i < done.size(); ++i) {
    finish_item(done[i], variant, i < scratch_fanout_.size() ? scratch_fanout_[i] : -1, share);
  }
  routing_from_ = nullptr;
  // The batch's items for link edges travel together, one transfer per edge.
  if (has_link_edges_) {
    const Task& task = app_.tasks[worker.task];
    for (std::size_t e = 0; e < task.out_edges.size(); ++e) {
      if (!scratch_link_[e].empty()) {
        send_over_link(worker, app_.edges[task.out_edges[e]], scratch_link_[e]);
      }
    }
  }
  done.clear();
  scratch_batch_.swap(done);
}

void Engine::send_over_link(const Worker& from, const Edge& edge, std::vector<Item>& items) {
  // The receiving instance is chosen now, so that the transfer can occupy its downlink. With
  // a task-wide queue any instance serves the items, so the one whose downlink frees first
  // receives them (the dispatcher's pick on ties); otherwise the dispatcher decides.
  const auto& candidates = task_workers_[edge.to];
  int pick = candidates.empty() ? -1 : dispatchers_[edge.to]->pick(candidates, items[0]);
  if (pick >= 0 && policies_.shared_queue) {
    auto free_at = [&](int i) {
      const LinkId down = candidates[static_cast<std::size_t>(i)]->downlink;
      return down == kNoLink ? 0.0 : links_.free_at(down);
    };
    Time best = free_at(pick);
    for (std::size_t i = 0; i < candidates.size() && best > clock_.now(); ++i) {
      const Time t = free_at(static_cast<int>(i));
      if (t < best) {
        best = t;
        pick = static_cast<int>(i);
      }
    }
  }
  LinkId downlink = kNoLink;
  if (pick >= 0) {
    const Worker& to = *candidates[static_cast<std::size_t>(pick)];
    downlink = to.downlink;
    for (Item& item : items) item.target = to.id;
  }
  const double bytes = edge.bytes_per_item * static_cast<double>(items.size());
  const Time arrival = links_.transfer({from.uplink, downlink}, bytes, clock_.now()) + edge.delay;
  if (arrival > clock_.now()) {
    driver_.deliver_later(items, arrival);
  } else {
    deliver(items);
  }
  items.clear();
}

void Engine::on_timer(WorkerId id, uint64_t generation) {
  Worker& worker = *workers_.at(id);
  // A busy instance's scheduler may have asked for a timer too (stale purges).
  if (generation != worker.timer_generation) return;
  scheduler(worker).on_timer(worker);
  note_load(worker);
}

bool Engine::stop_request(uint64_t id, Outcome outcome, DropReason reason) {
  // Stopping a request is rare (a client that left): a scan of the live slots will do.
  RequestSlot slot = 0;
  for (; slot < requests_.size(); ++slot) {
    if (requests_[slot].live > 0 && requests_[slot].id == id) break;
  }
  if (slot == requests_.size()) return false;
  RequestState& r = requests_[slot];
  std::vector<Item> held;
  for (const auto& w : workers_) {
    if (!w->alive) continue;
    const bool let_go = scheduler(*w).cancel(*w, slot);
    note_load(*w);
    if (let_go) held.push_back(Item{slot, w->task, 1.0, r.arrival, r.deadline, 0.0});
  }
  if (!r.stopped) {
    r.stopped = true;
    r.outcome = outcome;
    r.stop_task = held.empty() ? app_.roots.front() : held.front().task;
    r.reason = reason;
    observer_.on_request_stopped(r.id, outcome, r.stop_task, reason);
  }
  for (const Item& item : held) discard(item);  // the last one finishes the request
  return true;
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
  reset_loads(worker.task);
  std::vector<Item> orphans;
  const bool others_alive = !list.empty();
  // A task-wide queue stays with the task's other workers (or, during a reconfiguration,
  // waits for new ones); a private one is re-dispatched.
  if (!policies_.shared_queue || (!others_alive && !reconfiguring_)) worker.queue->drain(orphans);
  scheduler(worker).release(worker, orphans);
  deliver(orphans);
}

void Engine::finish_item(const Item& item, int task_variant, int fanout, Time gpu_share) {
  RequestState& r = requests_[item.request];
  r.gpu_time += gpu_share;
  gpu_by_task_[std::size_t{item.request} * app_.tasks.size() + item.task] += gpu_share;
  if (cancelled(r)) {
    discard(item);  // it ran, but its request's answer is already decided
    return;
  }
  const Task& task = app_.tasks[item.task];
  const double accuracy =
      item.accuracy * task.variants[static_cast<std::size_t>(task_variant)].accuracy;
  route(item, task_variant, accuracy, fanout);
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
    const bool over_link = has_link_edges_ && edge.bytes_per_item > 0 && routing_from_ != nullptr;
    auto& out = over_link ? scratch_link_[edge_slot] : scratch_out_[edge_slot];
    Item child{item.request, edge.to, accuracy, item.origin, item.deadline, 0.0};
    child.tokens_in = item.tokens_in;
    child.tokens_out = item.tokens_out;
    child.shared_prefix_tokens = item.shared_prefix_tokens;
    child.prefix_group = item.prefix_group;
    for (int i = 0; i < count; ++i) out.push_back(child);
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
    std::vector<int>& counts = scratch_share_counts_;
    std::fill(counts.begin(), counts.end(), 0);
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
    for (std::size_t e = 0; e < task.out_edges.size(); ++e) give(e, counts[e]);
  }
  if (created == 0 && joined == 0) {
    // A leaf, or an item that derived nothing (a frame with no objects): its result is final.
    r.accuracy_sum += accuracy;
    r.accuracy_count++;
    r.sub_done += 1.0;
    if (clock_.now() > r.deadline + 1e-12) r.sub_late += 1.0;
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
  if (!r.stopped) {
    r.stopped = true;
    r.outcome = outcome;
    r.stop_task = item.task;
    r.reason = reason;
    observer_.on_request_stopped(r.id, outcome, item.task, reason);
  }
  r.sub_lost += subrequest_weight_[item.task];
  retire_item(item);
}

void Engine::discard(const Item& item) {
  requests_[item.request].sub_lost += subrequest_weight_[item.task];
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
  if (!cancelled(r)) {
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
  rec.gpu_by_task = std::span<const Time>(gpu_by_task_)
                        .subspan(std::size_t{slot} * app_.tasks.size(), app_.tasks.size());
  rec.subrequests = r.sub_done + r.sub_lost;
  rec.subrequests_violated = r.sub_late + r.sub_lost;
  rec.ttft = r.tokens.ttft;
  rec.tpot = r.tokens.tpot;
  rec.output_tokens = r.tokens.tokens;
  rec.preemptions = r.tokens.preemptions;
  if (r.stopped) {
    rec.outcome = r.outcome;
    rec.drop_task = r.stop_task;
    rec.reason = r.reason;
  } else {
    rec.outcome = completion_outcome(app_, rec.finish, r.deadline, r.tokens.ttft, r.tokens.tpot);
    rec.accuracy = r.accuracy_count ? r.accuracy_sum / r.accuracy_count : 0.0;
  }
  free_slots_.push_back(slot);
  --in_flight_;
  observer_.on_request_done(rec);
}

}  // namespace tessera
