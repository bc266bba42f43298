#include "server/event_loop.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <memory>

namespace tessera {
namespace {

bool later(const auto& a, const auto& b) { return a.at != b.at ? a.at > b.at : a.seq > b.seq; }

}  // namespace

void EventLoop::start() {
  std::lock_guard lock(mutex_);
  if (running_ || stopped_) return;
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void EventLoop::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    running_ = false;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<std::function<void()>> inbox;
  std::vector<Timer> timers;
  {
    std::lock_guard lock(mutex_);
    inbox.swap(inbox_);
    timers.swap(timers_);
  }
  // Destroyed here, outside the lock: a run_sync caller waiting on one sees a broken promise.
}

void EventLoop::post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    inbox_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void EventLoop::post_at(Time at, std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    timers_.push_back(Timer{at, timer_seq_++, std::move(task)});
    std::push_heap(timers_.begin(), timers_.end(),
                   [](const Timer& a, const Timer& b) { return later(a, b); });
  }
  wake_.notify_one();
}

bool EventLoop::run_sync(const std::function<void()>& task) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  {
    std::lock_guard lock(mutex_);
    if (!running_) return false;
    inbox_.push_back([done, &task] {
      task();
      done->set_value();
    });
  }
  wake_.notify_one();
  done.reset();  // the loop's copy is now the only owner: dropping it breaks the promise
  try {
    finished.get();
    return true;
  } catch (const std::future_error&) {
    return false;
  }
}

void EventLoop::run() {
  std::vector<std::function<void()>> batch;
  const auto cmp = [](const Timer& a, const Timer& b) { return later(a, b); };
  std::unique_lock lock(mutex_);
  while (running_) {
    if (inbox_.empty()) {
      if (timers_.empty()) {
        wake_.wait(lock);
      } else {
        const Time due = timers_.front().at;
        if (clock_.now() < due) wake_.wait_until(lock, clock_.time_point(due));
      }
      if (!running_) break;
    }
    batch.swap(inbox_);
    const Time now = clock_.now();
    while (!timers_.empty() && timers_.front().at <= now) {
      std::pop_heap(timers_.begin(), timers_.end(), cmp);
      batch.push_back(std::move(timers_.back().task));
      timers_.pop_back();
    }
    lock.unlock();
    for (auto& task : batch) {
      try {
        task();
      } catch (const std::exception& e) {
        spdlog::error("event loop task failed: {}", e.what());
      }
    }
    batch.clear();
    lock.lock();
  }
}

}  // namespace tessera
