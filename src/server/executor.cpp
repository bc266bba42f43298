#include "server/executor.hpp"

#include <spdlog/spdlog.h>

namespace tessera {

Executor::Executor(std::function<void()> on_start)
    : thread_([this, start = std::move(on_start)] { run(start); }) {}

void Executor::post(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void Executor::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::deque<std::function<void()>> dropped;
  std::lock_guard lock(mutex_);
  dropped.swap(jobs_);
}

void Executor::run(const std::function<void()>& on_start) {
  if (on_start) on_start();
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    try {
      job();
    } catch (const std::exception& e) {
      spdlog::error("executor job failed: {}", e.what());
    }
    lock.lock();
  }
}

}  // namespace tessera
