#include "serve/runtime/event_loop.hpp"

#include <pthread.h>
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
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "tessera-loop");  // for top, perf and gdb
    run();
  });
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
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return !busy_; });  // a post_or_run() caller's round ends
    inbox.swap(inbox_);
    timers.swap(timers_);
  }
  // Destroyed here, outside the lock: a run_sync caller waiting on one sees a broken promise.
}

void EventLoop::post(std::function<void()> task) {
  bool wake;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    inbox_.push_back(std::move(task));
    wake = !busy_;  // a thread running a round runs it (or hands it over when it ends)
  }
  if (wake) wake_.notify_one();
}

void EventLoop::post_or_run(std::function<void()> task) {
  std::unique_lock lock(mutex_);
  if (stopped_) return;
  inbox_.push_back(std::move(task));
  if (!running_ || busy_) {
    const bool wake = !busy_;
    lock.unlock();
    if (wake) wake_.notify_one();
    return;
  }
  busy_ = true;
  owner_ = std::this_thread::get_id();
  for (int round = 0; round < kStealRounds && running_ && ready(clock_.now()); ++round) {
    run_round(lock);
  }
  owner_ = std::thread::id();
  busy_ = false;
  // Whatever is left (or a timer earlier than the one the loop thread waits for) is the
  // loop thread's; stop() may be waiting for this round to end.
  const bool left = !inbox_.empty() || (!timers_.empty() && timers_.front().at < wait_at_);
  lock.unlock();
  if (left) wake_.notify_one();
  idle_.notify_all();
}

void EventLoop::post_at(Time at, std::function<void()> task) {
  bool wake;
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    timers_.push_back(Timer{at, timer_seq_++, std::move(task)});
    std::push_heap(timers_.begin(), timers_.end(),
                   [](const Timer& a, const Timer& b) { return later(a, b); });
    wake = !busy_ && at < wait_at_;  // else whoever runs or waits is on time
  }
  if (wake) wake_.notify_one();
}

bool EventLoop::run_sync(const std::function<void()>& task) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  bool wake;
  {
    std::lock_guard lock(mutex_);
    if (!running_) return false;
    inbox_.push_back([done, &task] {
      task();
      done->set_value();
    });
    wake = !busy_;
  }
  if (wake) wake_.notify_one();
  done.reset();  // the loop's copy is now the only owner: dropping it breaks the promise
  try {
    finished.get();
    return true;
  } catch (const std::future_error&) {
    return false;
  }
}

bool EventLoop::ready(Time now) const {
  return !inbox_.empty() || (!timers_.empty() && timers_.front().at <= now);
}

void EventLoop::run_round(std::unique_lock<std::mutex>& lock) {
  const auto cmp = [](const Timer& a, const Timer& b) { return later(a, b); };
  batch_.swap(inbox_);
  const Time now = clock_.now();
  while (!timers_.empty() && timers_.front().at <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), cmp);
    batch_.push_back(std::move(timers_.back().task));
    timers_.pop_back();
  }
  lock.unlock();
  for (auto& task : batch_) {
    try {
      task();
    } catch (const std::exception& e) {
      spdlog::error("event loop task failed: {}", e.what());
    }
  }
  batch_.clear();
  lock.lock();
}

void EventLoop::run() {
  std::unique_lock lock(mutex_);
  while (running_) {
    if (busy_ || !ready(clock_.now())) {
      // Idle, or a post_or_run() caller is running a round: it wakes this thread if it
      // leaves a task, or a timer earlier than wait_at_.
      if (busy_ || timers_.empty()) {
        wait_at_ = kNever;
        wake_.wait(lock);
      } else {
        wait_at_ = timers_.front().at;
        wake_.wait_until(lock, clock_.time_point(wait_at_));
      }
      continue;
    }
    busy_ = true;
    owner_ = std::this_thread::get_id();
    run_round(lock);
    owner_ = std::thread::id();
    busy_ = false;
  }
  idle_.notify_all();
}

}  // namespace tessera
