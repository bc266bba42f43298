#include "engine/batch_scheduler.hpp"

#include <algorithm>
#include <limits>

namespace tessera {

void BatchInstanceScheduler::on_queue_grew(Worker& worker) {
  if (!worker.alive) return;
  purge_stale(worker);
  if (!worker.busy) {
    try_start(worker);
  } else if (batching_.forms_while_busy()) {
    fill_forming(worker);
  }
}

void BatchInstanceScheduler::on_step_done(Worker& worker) {
  if (!worker.alive) return;
  purge_stale(worker);
  if (!worker.forming.empty()) {
    worker.running.swap(worker.forming);
    worker.running_variant = worker.forming_variant;
    start(worker);
  } else {
    try_start(worker);
  }
}

void BatchInstanceScheduler::on_timer(Worker& worker) {
  if (!worker.alive) return;
  worker.timer_at = -1.0;
  purge_stale(worker);
  if (worker.busy) return;
  try_start(worker);
}

void BatchInstanceScheduler::purge_stale(Worker& worker) {
  if (!purges_stale_) return;
  const Time now = host_.now();
  while (!worker.queue->empty()) {
    const Item& least = worker.queue->least_budget();
    if (dropping_.stale_at(least, worker) > now) break;
    const Item item = worker.queue->pop_least_budget();
    host_.drop_queued(worker, item, dropping_.stale_reason());
  }
  // Busy: no batching timer is pending, so wake for the next item to go stale. (Idle, the
  // batching policy's own wake-up comes first: it starts a batch.)
  if (worker.busy && !worker.queue->empty()) {
    const Time next = dropping_.stale_at(worker.queue->least_budget(), worker);
    if (next < std::numeric_limits<Time>::infinity() && worker.timer_at != next) {
      host_.set_timer(worker, next);
    }
  }
}

void BatchInstanceScheduler::on_settings_changed(Worker& worker) {
  if (!worker.busy) try_start(worker);  // a shorter wait may already be over
}

void BatchInstanceScheduler::release(Worker& worker, std::vector<Item>& out) {
  out.insert(out.end(), worker.forming.begin(), worker.forming.end());
  worker.forming.clear();
}

void BatchInstanceScheduler::try_start(Worker& worker) {
  const Time now = host_.now();
  while (!worker.busy && worker.alive && !worker.queue->empty()) {
    const BatchPlan plan = batching_.plan(worker, now);
    if (!plan.start) {
      if (worker.timer_at != plan.wake_at) host_.set_timer(worker, plan.wake_at);
      return;
    }
    const BatchChoice choice = variant_.choose(worker, now);
    const int target =
        static_cast<int>(std::min<std::size_t>(worker.queue->size(), std::size_t(choice.max_size)));
    const Time exec = worker.profiled_latency(choice.variant_slot, target);
    while (worker.running.size() < static_cast<std::size_t>(choice.max_size) &&
           !worker.queue->empty()) {
      Item item = worker.queue->pop();
      if (host_.admit(worker, item, now, exec)) worker.running.push_back(item);
    }
    if (!worker.running.empty()) {
      worker.running_variant = choice.variant_slot;
      start(worker);
    }
  }
}

void BatchInstanceScheduler::start(Worker& worker) {
  host_.start_step(worker);
  if (batching_.forms_while_busy()) fill_forming(worker);
}

void BatchInstanceScheduler::fill_forming(Worker& worker) {
  if (worker.queue->empty()) return;
  if (worker.forming.empty()) {
    const BatchChoice choice = variant_.choose(worker, host_.now());
    worker.forming_variant = choice.variant_slot;
    worker.forming_cap = choice.max_size;
  }
  const auto cap = static_cast<std::size_t>(worker.forming_cap);
  // The forming batch may still grow to its cap before it starts, and it runs at its final
  // size: an item joining now is checked against the time at the cap, the most the batch
  // can take (issue 11: the time at the size when it joins let admitted items run late).
  const Time exec = worker.profiled_latency(worker.forming_variant, worker.forming_cap);
  while (worker.forming.size() < cap && !worker.queue->empty()) {
    Item item = worker.queue->pop();
    if (host_.admit(worker, item, worker.running_expected_end, exec)) {
      worker.forming.push_back(item);
    }
  }
}

}  // namespace tessera
