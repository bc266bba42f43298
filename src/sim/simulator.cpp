#include "sim/simulator.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

namespace tessera {
namespace {

double wall_seconds() {
  // Progress reporting only: the simulation itself never reads this clock.
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Simulator::Simulator(const App& app, const Deployment& deployment, const ProfileTable& profiles,
                     const PolicySet& policies, SimOptions options)
    : Simulator(app, deployment, profiles, policies.instantiate(app, options.seed), options,
                EngineOptions{policies.config().cancel_siblings, nullptr}) {}

Simulator::Simulator(const App& app, const Deployment& deployment, const ProfileTable& profiles,
                     EnginePolicies policies, SimOptions options, EngineOptions engine_options)
    : options_(std::move(options)),
      metrics_(app, options_.window),
      noise_(options_.noise_cv, options_.seed ^ 0x9e3779b97f4a7c15ULL) {
  if (!engine_options.cost_model) engine_options.cost_model = options_.cost_model;
  if (!policies.make_scheduler) policies.make_scheduler = options_.make_scheduler;
  if (options_.make_dispatcher) policies.make_dispatcher = options_.make_dispatcher;
  if (options_.spill_windows) metrics_.spill_closed_windows();
  engine_ = std::make_unique<Engine>(app, deployment, profiles, std::move(policies), clock_, *this,
                                     metrics_, options_.seed, std::move(engine_options));
  for (const auto& [at, worker] : options_.worker_losses) {
    if (worker >= engine_->workers().size()) {
      throw std::invalid_argument("worker loss names worker " + std::to_string(worker) +
                                  " but the deployment has " +
                                  std::to_string(engine_->workers().size()));
    }
    events_queue_.push(at, EventKind::kWorkerLoss, worker);
  }
}

void Simulator::start_batch(const Worker& worker) {
  events_queue_.push(clock_.now() + noise_.apply(worker.running_duration), EventKind::kBatchDone,
                     worker.id);
}

void Simulator::set_timer(WorkerId worker, uint64_t generation, Time at) {
  // The worker's earlier timer is replaced: the engine would have ignored it when it fired
  // (its generation is old). The run's last event time still counts it.
  if (const auto replaced = events_queue_.set_timer(worker, at, generation)) {
    replaced_until_ = std::max(replaced_until_, *replaced);
  }
}

void Simulator::deliver_later(std::span<const Item> items, Time at) {
  // Deliveries pushed one after another for the same time (the items of one finished
  // batch, item by item) ride in one event as consecutive groups, delivered group by group
  // exactly as separate events would have been: nothing can come between them.
  if (open_delivery_ && open_delivery_seq_ + 1 == events_queue_.next_seq() &&
      open_delivery_time_ == at) {
    DeliverySlot& d = deliveries_[open_delivery_slot_];
    d.items.insert(d.items.end(), items.begin(), items.end());
    d.ends.push_back(static_cast<uint32_t>(d.items.size()));
    return;
  }
  // Delivery buffers are pooled and keep their capacity, so hops allocate nothing.
  uint32_t slot;
  if (!free_deliveries_.empty()) {
    slot = free_deliveries_.back();
    free_deliveries_.pop_back();
  } else {
    slot = static_cast<uint32_t>(deliveries_.size());
    deliveries_.emplace_back();
  }
  DeliverySlot& d = deliveries_[slot];
  d.items.assign(items.begin(), items.end());
  d.ends.assign(1, static_cast<uint32_t>(d.items.size()));
  open_delivery_ = true;
  open_delivery_seq_ = events_queue_.next_seq();
  open_delivery_time_ = at;
  open_delivery_slot_ = slot;
  events_queue_.push(at, EventKind::kDelivery, slot);
}

void Simulator::schedule(Time at, std::function<void()> action) {
  events_queue_.push(at, EventKind::kControl, static_cast<uint32_t>(actions_.size()));
  actions_.push_back(std::move(action));
}

void Simulator::process(const Event& event) {
  switch (event.kind) {
    case EventKind::kBatchDone:
      engine_->on_batch_done(event.target);
      break;
    case EventKind::kTimer:
      engine_->on_timer(event.target, event.payload);
      break;
    case EventKind::kDelivery: {
      // The slot is freed only after delivering, which may schedule further deliveries
      // (and grow the pool); its buffer goes back to it, capacity kept.
      std::swap(delivering_, deliveries_[event.target]);
      uint32_t begin = 0;
      for (uint32_t end : delivering_.ends) {
        engine_->deliver(std::span<const Item>(delivering_.items.data() + begin, end - begin));
        begin = end;
      }
      delivering_.items.clear();
      delivering_.ends.clear();
      std::swap(delivering_, deliveries_[event.target]);
      free_deliveries_.push_back(event.target);
      break;
    }
    case EventKind::kWorkerLoss:
      engine_->kill_worker(event.target);
      break;
    case EventKind::kControl: {
      std::function<void()> action = std::move(actions_[event.target]);
      actions_[event.target] = nullptr;
      action();
      break;
    }
  }
}

bool Simulator::exceeds_context(const Arrival& a) const {
  return options_.max_positions > 0 &&
         uint64_t{a.input_tokens} + a.output_tokens > options_.max_positions;
}

void Simulator::refuse(const Arrival& a) {
  // The live LLM server answers such a request 400 before it reaches an instance; here it
  // ends failed at the front door, with the reason, and never enters the engine.
  const TaskId root = engine_->app().roots.empty() ? 0 : engine_->app().roots.front();
  RequestRecord rec;
  rec.id = refused_++;
  rec.arrival = a.time;
  rec.finish = a.time;
  rec.outcome = Outcome::kFailed;
  rec.drop_task = root;
  rec.subrequests = engine_->subrequest_weight(root);
  rec.subrequests_violated = rec.subrequests;
  metrics_.on_context_refusal();
  metrics_.on_request_done(rec);
}

void Simulator::report_progress(const Arrival& next, bool force) {
  const double wall = wall_seconds();
  if (!force && wall - wall_last_report_ < 2.0) return;
  wall_last_report_ = wall;
  spdlog::info("sim t={:.1f}s  submitted={}  finished={}  in flight={}  ({:.1f}s wall)", next.time,
               metrics_.submitted(), metrics_.finished(), engine_->requests_in_flight(),
               wall - wall_start_);
}

void Simulator::run(ArrivalSource& arrivals) {
  begin(arrivals);
  while (has_next_ || !events_queue_.empty()) step();
  finish();
}

void Simulator::begin(ArrivalSource& arrivals) {
  wall_start_ = wall_last_report_ = wall_seconds();
  arrivals_ = &arrivals;
  has_next_ = arrivals.next(next_);
  last_time_ = 0.0;
}

Time Simulator::next_time() const {
  Time t = std::numeric_limits<Time>::infinity();
  if (has_next_) t = next_.time;
  if (!events_queue_.empty()) t = std::min(t, events_queue_.top_time());
  return t;
}

void Simulator::step() {
  if (!has_next_ && events_queue_.empty()) return;
  // Arrivals go first on ties: a request arriving as a batch ends can join the next one.
  open_delivery_ = false;  // what this step delivers later goes into new events
  if (has_next_ && (events_queue_.empty() || next_.time <= events_queue_.top_time())) {
    if (next_.time < last_time_) {
      throw std::invalid_argument("arrivals out of order at t=" + std::to_string(next_.time));
    }
    last_time_ = next_.time;
    clock_.set(next_.time);
    metrics_.advance(next_.time, *engine_);
    metrics_.on_arrival(next_.time);
    if (exceeds_context(next_)) {
      refuse(next_);
    } else {
      engine_->submit(next_);
    }
    has_next_ = arrivals_->next(next_);
  } else {
    const Event event = events_queue_.pop();
    last_time_ = event.time;
    clock_.set(event.time);
    metrics_.advance(event.time, *engine_);
    process(event);
  }
  if ((++events_ & 0xFFFF) == 0 && options_.progress) report_progress(next_, false);
}

void Simulator::finish() {
  // A replaced timer later than every event that fired would have been the last event.
  if (replaced_until_ > clock_.now()) clock_.set(replaced_until_);
  metrics_.advance(clock_.now() + metrics_.window(), *engine_);
  if (options_.progress) report_progress(next_, true);
  arrivals_ = nullptr;

  if (engine_->requests_in_flight() != 0 || metrics_.finished() != metrics_.submitted()) {
    throw std::logic_error("accounting invariant broken: submitted " +
                           std::to_string(metrics_.submitted()) + ", finished " +
                           std::to_string(metrics_.finished()) + ", in flight " +
                           std::to_string(engine_->requests_in_flight()));
  }
}

}  // namespace tessera
