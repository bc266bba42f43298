#include "serve/runtime/llm_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

#include "llm_torch/decoder.hpp"
#include "policy/fifo_queue.hpp"

namespace tessera {

std::string_view gen_end_name(GenEnd end) {
  switch (end) {
    case GenEnd::kOk:
      return "ok";
    case GenEnd::kLate:
      return "late";
    case GenEnd::kDropped:
      return "dropped";
    case GenEnd::kFailed:
      return "failed";
    case GenEnd::kCancelled:
      return "cancelled";
  }
  return "?";
}

struct LlmRuntime::Req {
  GenCallbacks callbacks;
  std::vector<int64_t> tokens;  // the prompt, then every token generated
  uint32_t prompt = 0;
  std::unique_ptr<Decoder::Sequence> seq;
  TokenTimes times;
  bool has_times = false;
  bool ended = false;
  Time arrival = 0.0;
  int64_t stop_token = -1;
  Time first_token = -1.0;  // when its first token was emitted (EOS stop's TTFT)
};

LlmRuntime::LlmRuntime(std::shared_ptr<const Decoder> decoder, const LlmSchedulerConfig& config,
                       std::shared_ptr<const CostModel> cost, LlmServeSlos slos,
                       LlmRuntimeObserver* observer)
    : decoder_(std::move(decoder)), cost_(std::move(cost)), slos_(slos), observer_(observer) {
  worker_.id = 0;
  worker_.segment = "cpu";
  worker_.variants = {0};
  worker_.latency = {{0.0, 0.0}};
  worker_.queue = std::make_shared<FifoQueue>();
  LlmSchedulerConfig c = config;
  c.ttft_slo = slos.ttft_slo;
  c.tpot_slo = slos.tpot_slo;
  SchedulerHost& host = *this;
  scheduler_ = std::make_unique<LlmInstanceScheduler>(c, host, *cost_);
  stats_.kv_total = scheduler_->kv().total();
}

LlmRuntime::~LlmRuntime() { stop(); }

void LlmRuntime::start() {
  std::lock_guard lock(mutex_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

void LlmRuntime::stop() {
  {
    std::lock_guard lock(mutex_);
    if (joined_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Whatever was never taken by the thread (or everything, if it never started).
  std::vector<Incoming> left;
  {
    std::lock_guard lock(mutex_);
    joined_ = true;
    left.swap(inbox_);
  }
  for (Incoming& in : left) {
    GenResult r;
    r.end = GenEnd::kFailed;
    r.error = "the server is shutting down";
    r.prompt_tokens = static_cast<uint32_t>(in.request.prompt.size());
    if (in.callbacks.on_end) in.callbacks.on_end(r);
    if (observer_ != nullptr) observer_->on_llm_end(r);
    std::lock_guard lock(mutex_);
    --in_flight_;
  }
  for (auto& [slot, req] : reqs_) {
    if (req->ended) continue;
    GenResult r;
    r.end = GenEnd::kFailed;
    r.error = "the server is shutting down";
    end(slot, r);
  }
  reqs_.clear();
}

uint64_t LlmRuntime::submit(GenRequest request, GenCallbacks callbacks) {
  uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    ++in_flight_;
    inbox_.push_back(Incoming{id, std::move(request), std::move(callbacks), clock_.now()});
    if (joined_) {
      // Stopped already: stop() will not run again, so end it here.
      Incoming in = std::move(inbox_.back());
      inbox_.pop_back();
      --in_flight_;
      GenResult r;
      r.end = GenEnd::kFailed;
      r.error = "the server is shutting down";
      if (in.callbacks.on_end) in.callbacks.on_end(r);
      return id;
    }
  }
  wake_.notify_all();
  return id;
}

void LlmRuntime::cancel(uint64_t id) {
  {
    std::lock_guard lock(mutex_);
    cancels_.push_back(id);
  }
  wake_.notify_all();
}

LlmRuntimeStats LlmRuntime::stats() const {
  std::lock_guard lock(mutex_);
  LlmRuntimeStats s = stats_;
  s.waiting += inbox_.size();
  return s;
}

std::size_t LlmRuntime::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

void LlmRuntime::take_inbox(std::unique_lock<std::mutex>& lock) {
  std::vector<Incoming> in;
  in.swap(inbox_);
  std::vector<uint64_t> cancels;
  cancels.swap(cancels_);
  lock.unlock();
  for (Incoming& inc : in) {
    const auto slot = static_cast<uint32_t>(inc.id);
    auto req = std::make_unique<Req>();
    req->callbacks = std::move(inc.callbacks);
    req->prompt = static_cast<uint32_t>(inc.request.prompt.size());
    req->tokens = std::move(inc.request.prompt);
    req->tokens.reserve(req->tokens.size() + inc.request.max_tokens);
    req->arrival = inc.arrival;
    req->stop_token = inc.request.stop_token;
    Item item;
    item.request = slot;
    item.origin = inc.arrival;
    item.deadline = inc.arrival + slos_.slo;
    item.enqueued = clock_.now();
    item.tokens_in = req->prompt;
    item.tokens_out = std::max<uint32_t>(1, inc.request.max_tokens);
    reqs_[slot] = std::move(req);
    worker_.queue->push(item);
  }
  if (!in.empty()) scheduler_->on_queue_grew(worker_);
  for (uint64_t id : cancels) {
    const auto slot = static_cast<uint32_t>(id);
    auto it = reqs_.find(slot);
    if (it == reqs_.end() || it->second->ended) continue;
    GenResult r;
    r.end = GenEnd::kCancelled;
    end(slot, r);
    // The scheduler lets go of it (its KV blocks back now, or when the running step ends),
    // unless its item ends with that step anyway.
    if (scheduler_->cancel(worker_, slot)) reqs_.erase(slot);
  }
  lock.lock();
}

void LlmRuntime::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (stopping_) break;
    if (!inbox_.empty() || !cancels_.empty()) {
      take_inbox(lock);
      continue;
    }
    if (step_pending_) {
      lock.unlock();
      execute_step();
      publish_stats();
      lock.lock();
      continue;
    }
    if (worker_.timer_at >= 0) {
      const Time at = worker_.timer_at;
      if (clock_.now() >= at) {
        lock.unlock();
        scheduler_->on_timer(worker_);
        publish_stats();
        lock.lock();
        continue;
      }
      wake_.wait_until(lock, clock_.time_point(at));
    } else {
      wake_.wait(lock);
    }
  }
}

void LlmRuntime::start_step(Worker& worker) { start_step(worker, StepContents{}); }

void LlmRuntime::start_step(Worker& worker, const StepContents& contents) {
  const Time now = clock_.now();
  worker.busy = true;
  worker.timer_at = -1.0;
  worker.running_start = now;
  worker.running_duration = cost_->step_time(worker, contents);
  worker.running_expected_end = now + worker.running_duration;
  ++worker.batches;
  step_pending_ = true;
}

void LlmRuntime::set_timer(Worker& worker, Time at) { worker.timer_at = at; }

void LlmRuntime::drop_queued(Worker& /*worker*/, const Item& item, DropReason reason) {
  auto it = reqs_.find(item.request);
  if (it == reqs_.end()) return;
  if (!it->second->ended) {
    GenResult r;
    r.end = GenEnd::kDropped;
    r.reason = reason;
    end(item.request, r);
  }
  reqs_.erase(it);
}

void LlmRuntime::record_tokens(const Item& item, const TokenTimes& times) {
  auto it = reqs_.find(item.request);
  if (it == reqs_.end()) return;
  it->second->times = times;
  it->second->has_times = true;
}

void LlmRuntime::report_llm_step(const Worker& /*worker*/, const LlmStepStats& stats) {
  last_stats_ = stats;
}

void LlmRuntime::execute_step() {
  step_pending_ = false;
  const Time started = clock_.now();
  scheduler_->step_entries(entries_);
  std::vector<uint32_t> left;     // cancelled by their client during this step
  std::vector<uint32_t> stopped;  // emitted their stop token (EOS) in this step
  for (const auto& e : entries_) {
    auto it = reqs_.find(e.request);
    if (it == reqs_.end()) continue;
    Req& r = *it->second;
    if (r.ended) continue;  // cancelled or failed: nothing to compute
    try {
      std::vector<float> logits;
      if (e.prefill > 0) {
        if (e.prefill_from == 0 || r.seq == nullptr) {
          // A new request, or a recompute after a preemption: a fresh cache.
          r.seq = decoder_->start(static_cast<int64_t>(r.tokens.capacity()) + 1);
        }
        const auto from = static_cast<std::ptrdiff_t>(e.prefill_from);
        const auto to = std::min<std::ptrdiff_t>(from + e.prefill,
                                                 static_cast<std::ptrdiff_t>(r.tokens.size()));
        logits = decoder_->step(
            *r.seq, std::vector<int64_t>(r.tokens.begin() + from, r.tokens.begin() + to));
      } else if (e.decode) {
        logits = decoder_->step(*r.seq, {r.tokens.back()});
      }
      if (e.emits && !logits.empty()) {
        const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
        r.tokens.push_back(best);
        if (r.first_token < 0) r.first_token = clock_.now();
        if (r.stop_token >= 0 && best == r.stop_token) {
          stopped.push_back(e.request);  // ends after the step, as ok (or late)
        } else if (r.callbacks.on_token && !r.callbacks.on_token(best)) {
          GenResult res;
          res.end = GenEnd::kCancelled;
          end(e.request, res);
          left.push_back(e.request);
        }
      }
    } catch (const std::exception& ex) {
      GenResult res;
      res.end = GenEnd::kFailed;
      res.error = std::string("the model failed: ") + ex.what();
      end(e.request, res);
    }
  }
  const Time measured = clock_.now() - started;
  // Requests that emitted their EOS end now, judged against the SLOs as a finished one;
  // the scheduler lets go of them (their tokens are not the trace's any more).
  for (uint32_t slot : stopped) {
    auto it = reqs_.find(slot);
    if (it == reqs_.end() || it->second->ended) continue;
    const Req& r = *it->second;
    const Time now = clock_.now();
    const auto n = static_cast<double>(r.tokens.size() - r.prompt);
    GenResult res;
    res.stopped = true;
    res.ttft = r.first_token - r.arrival;
    res.tpot = n > 1 ? (now - r.first_token) / (n - 1.0) : 0.0;
    res.end = now <= r.arrival + slos_.slo + 1e-12 ? GenEnd::kOk : GenEnd::kLate;
    if ((slos_.ttft_slo > 0 && res.ttft > slos_.ttft_slo + 1e-12) ||
        (slos_.tpot_slo > 0 && res.tpot > slos_.tpot_slo + 1e-12)) {
      res.end = GenEnd::kLate;
    }
    end(slot, res);
    left.push_back(slot);
  }
  // Clients that left during the step: the scheduler frees their blocks when it is done.
  for (uint32_t slot : left) {
    if (scheduler_->cancel(worker_, slot)) reqs_.erase(slot);
  }
  if (observer_ != nullptr) observer_->on_llm_step(last_stats_, measured);
  // The step is done: as the engine does, take the finishing items, let the scheduler
  // account the step (it reports their token times), then end them.
  std::vector<Item> done;
  done.swap(worker_.running);
  worker_.busy = false;
  worker_.last_batch_end = clock_.now();
  worker_.busy_time += measured;
  scheduler_->on_step_done(worker_);
  publish_stats();  // before the answers go out, so a client sees the step's state
  for (const Item& item : done) {
    auto it = reqs_.find(item.request);
    if (it == reqs_.end()) continue;
    Req& r = *it->second;
    if (!r.ended) {
      GenResult res;
      const Time finish = clock_.now();
      res.end = finish <= r.arrival + slos_.slo + 1e-12 ? GenEnd::kOk : GenEnd::kLate;
      if (r.has_times) {
        if ((slos_.ttft_slo > 0 && r.times.ttft > slos_.ttft_slo + 1e-12) ||
            (slos_.tpot_slo > 0 && r.times.tpot > slos_.tpot_slo + 1e-12)) {
          res.end = GenEnd::kLate;
        }
      }
      end(item.request, res);
    }
    reqs_.erase(it);
  }
}

void LlmRuntime::end(uint32_t slot, GenResult result) {
  auto it = reqs_.find(slot);
  if (it == reqs_.end() || it->second->ended) return;
  Req& r = *it->second;
  r.ended = true;
  r.seq.reset();
  result.prompt_tokens = r.prompt;
  result.output_tokens = static_cast<uint32_t>(r.tokens.size() - r.prompt);
  if (r.has_times) {
    result.ttft = r.times.ttft;
    result.tpot = r.times.tpot;
    result.preemptions = r.times.preemptions;
  }
  if (observer_ != nullptr) observer_->on_llm_end(result);  // before the client hears
  if (r.callbacks.on_end) r.callbacks.on_end(result);
  r.callbacks = {};
  std::lock_guard lock(mutex_);
  --in_flight_;
}

void LlmRuntime::publish_stats() {
  std::lock_guard lock(mutex_);
  stats_.kv_used = scheduler_->kv().used();
  stats_.kv_total = scheduler_->kv().total();
  stats_.waiting = scheduler_->waiting() + worker_.queue->size();
  stats_.running = scheduler_->admitted();
  stats_.preemptions = scheduler_->preemptions();
  stats_.steps = worker_.batches;
}

}  // namespace tessera
