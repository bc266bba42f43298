#include "serve/runtime/llm_endpoint.hpp"

#include <stdexcept>

namespace tessera {

LlmEndpoint::LlmEndpoint(const RunSpec& run, std::vector<std::shared_ptr<const Decoder>> decoders,
                         const SteadyClock& clock, EventLoop& loop, LlmObserver* observer)
    : app_(run.app),
      policies_(std::make_unique<PolicySet>(run.policies)),
      clock_(clock),
      loop_(loop),
      observer_(observer),
      decoders_(std::move(decoders)) {
  if (!run.llm) throw std::invalid_argument("an LLM endpoint needs the run spec's llm: section");
  if (decoders_.empty()) throw std::invalid_argument("an LLM endpoint needs a decoder");
  LlmSchedulerConfig config = run.llm->scheduler;
  config.ttft_slo = app_.ttft_slo;
  config.tpot_slo = app_.tpot_slo;
  EnginePolicies policies = policies_->instantiate(app_, run.sim.seed);
  policies.make_scheduler = [this, config](const Worker& worker, SchedulerHost& host,
                                           const CostModel& cost) {
    auto scheduler = std::make_unique<LlmInstanceScheduler>(config, host, cost);
    if (schedulers_.size() <= worker.id) schedulers_.resize(worker.id + 1, nullptr);
    if (cached_kv_.size() <= worker.id) cached_kv_.resize(worker.id + 1);
    schedulers_[worker.id] = scheduler.get();
    const WorkerId id = worker.id;
    scheduler->set_prompt_ids([this](const Item& item) {
      auto it = requests_.find(engine_->request_id(item.request));
      return it == requests_.end()
                 ? nullptr
                 : std::make_shared<const std::vector<int64_t>>(it->second->prompt());
    });
    scheduler->set_on_commit([this, id](RequestSlot slot, uint64_t serial) {
      auto it = requests_.find(engine_->request_id(slot));
      if (it != requests_.end() && it->second->sequence() != nullptr) {
        cached_kv_[id][serial] = it->second->shared_sequence();
      }
    });
    scheduler->kv().set_on_evict([this, id](uint64_t serial) { cached_kv_[id].erase(serial); });
    return scheduler;
  };
  EngineOptions options;
  options.cancel_siblings_on_drop = run.policies.cancel_siblings;
  options.cost_model = run.sim.cost_model ? run.sim.cost_model : llm_cost_model(*run.llm);
  engine_ = std::make_unique<Engine>(app_, run.deployment, run.profiles, std::move(policies),
                                     clock_, *this, *this, run.sim.seed, std::move(options));
  const std::size_t n = engine_->workers().size();
  if (decoders_.size() != 1 && decoders_.size() != n) {
    throw std::invalid_argument("an LLM endpoint of " + std::to_string(n) +
                                " instances needs one decoder, or one per instance (" +
                                std::to_string(decoders_.size()) + " given)");
  }
  for (std::size_t i = 0; i < n; ++i) executors_.push_back(std::make_unique<Executor>());
  step_stats_.resize(n);
  publish_stats();
}

LlmEndpoint::~LlmEndpoint() {
  for (auto& e : executors_) e->stop();
  // Requests still in the table end themselves as failed (LlmLiveRequest's destructor).
}

void LlmEndpoint::submit(LlmRequest request, LlmCallbacks callbacks) {
  auto r = std::make_shared<LlmLiveRequest>(std::move(request), std::move(callbacks));
  if (stopping_.load()) return;  // `r` ends as failed as it goes
  // A task the stopped loop drops ends its request the same way.
  loop_.post_or_run([this, r = std::move(r)]() mutable { admit(std::move(r)); });
}

void LlmEndpoint::admit(std::shared_ptr<LlmLiveRequest> request) {
  if (shut_down_) return;
  // The engine may end the request inside submit() (a drop at admission), so the side-table
  // entry goes in first under the id the engine will give (ids count up from 0).
  const uint64_t id = engine_->submitted();
  request->id = id;
  Arrival arrival;
  arrival.time = clock_.now();
  arrival.input_tokens = request->prompt_tokens();
  arrival.output_tokens = std::max<uint32_t>(1, request->max_tokens());
  requests_.emplace(id, std::move(request));
  if (engine_->submit(arrival) != id) throw std::logic_error("engine request ids out of step");
  publish_stats();
}

void LlmEndpoint::start_batch(const Worker& worker) {
  schedulers_.at(worker.id)->step_entries(entries_);
  std::vector<LlmStepItem> items;
  items.reserve(entries_.size());
  for (const auto& e : entries_) {
    auto it = requests_.find(engine_->request_id(e.request));
    if (it == requests_.end()) continue;
    LlmStepItem item{it->second, e, nullptr};
    if (e.fork_from != 0) {
      auto kv = cached_kv_[worker.id].find(e.fork_from);
      if (kv != cached_kv_[worker.id].end()) item.cached_prefix = kv->second;
    }
    items.push_back(std::move(item));
  }
  const WorkerId id = worker.id;
  std::shared_ptr<const Decoder> decoder = decoders_.size() == 1 ? decoders_[0] : decoders_[id];
  executors_[id]->post([this, id, decoder = std::move(decoder), items = std::move(items)] {
    LlmStepResult result = run_llm_step(*decoder, items, clock_);
    loop_.post([this, id, r = std::move(result)]() mutable { step_done(id, std::move(r)); });
  });
}

void LlmEndpoint::step_done(WorkerId id, LlmStepResult result) {
  Worker& worker = *engine_->workers()[id];
  // Before the engine hears that the step ended, so that the scheduler plans the next step
  // without them: failed requests and those whose client left end now (their KV blocks come
  // back when this step ends); those that emitted their stop token end with this step.
  for (uint64_t r : result.failed) engine_->stop_request(r, Outcome::kFailed, DropReason::kNone);
  for (uint64_t r : result.left) {
    engine_->stop_request(r, Outcome::kDropped, DropReason::kCancelled);
  }
  for (const auto& [r, slot] : result.stopped) {
    // Still live (ended at shutdown meanwhile, its slot may serve another request now).
    if (requests_.count(r) != 0) schedulers_[id]->finish_with_step(worker, slot);
  }
  engine_->note_worker_changed(id);  // finish_with_step added to worker.running
  if (observer_ != nullptr) observer_->on_llm_step(id, step_stats_[id], result.measured_s);
  engine_->on_batch_done(id);
  publish_stats();
}

void LlmEndpoint::set_timer(WorkerId worker, uint64_t generation, Time at) {
  loop_.post_at(at, [this, worker, generation] {
    engine_->on_timer(worker, generation);
    publish_stats();
  });
}

void LlmEndpoint::deliver_later(std::span<const Item> items, Time at) {
  loop_.post_at(at, [this, batch = std::vector<Item>(items.begin(), items.end())] {
    engine_->deliver(batch);
    publish_stats();
  });
}

void LlmEndpoint::on_llm_step(const Worker& worker, const LlmStepStats& stats) {
  step_stats_[worker.id] = stats;
}

void LlmEndpoint::on_request_done(const RequestRecord& record) {
  auto it = requests_.find(record.id);
  if (it == requests_.end()) return;
  std::shared_ptr<LlmLiveRequest> request = std::move(it->second);
  requests_.erase(it);
  const LlmRequestEnd end = request->end_of(record);
  publish_stats();  // before the client hears: it sees the state this end left
  if (observer_ != nullptr) observer_->on_llm_end(end);
  request->finish(end);
}

void LlmEndpoint::shutdown() {
  if (stopping_.exchange(true)) return;
  loop_.run_sync([this] {
    shut_down_ = true;
    std::vector<uint64_t> ids;
    ids.reserve(requests_.size());
    for (const auto& [id, request] : requests_) ids.push_back(id);
    for (uint64_t id : ids) {
      auto it = requests_.find(id);
      if (it == requests_.end()) continue;
      it->second->fail(kShuttingDown);
      engine_->stop_request(id, Outcome::kFailed, DropReason::kNone);
    }
    // Requests whose last step is running end with it, which the stopping loop will not
    // hear: they are answered now, as failed.
    for (auto& [id, request] : requests_) {
      RequestRecord record;
      record.id = id;
      record.outcome = Outcome::kFailed;
      const LlmRequestEnd end = request->end_of(record);
      if (observer_ != nullptr) observer_->on_llm_end(end);
      request->finish(end);
    }
    requests_.clear();
    publish_stats();
  });
  for (auto& e : executors_) e->request_stop();
}

LlmEndpointStats LlmEndpoint::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void LlmEndpoint::publish_stats() {
  LlmEndpointStats s;
  for (std::size_t i = 0; i < schedulers_.size(); ++i) {
    const Worker& w = *engine_->workers()[i];
    const LlmInstanceScheduler& scheduler = *schedulers_[i];
    LlmInstanceStats instance;
    instance.steps = w.batches;
    instance.finished = w.items_done;
    instance.kv_used = scheduler.kv().used();
    instance.held = w.held;
    s.kv_used += instance.kv_used;
    s.kv_total += scheduler.kv().total();
    s.waiting += scheduler.waiting() + w.queue->size();
    s.running += scheduler.admitted();
    s.preemptions += scheduler.preemptions();
    s.prefix_queries += scheduler.prefix_queries();
    s.prefix_hits += scheduler.prefix_hits();
    s.steps += w.batches;
    s.instances.push_back(instance);
  }
  s.submitted = engine_->submitted();
  s.in_flight = engine_->requests_in_flight();
  std::lock_guard lock(stats_mutex_);
  stats_ = std::move(s);
}

}  // namespace tessera
