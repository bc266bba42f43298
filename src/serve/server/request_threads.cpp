#include "serve/server/request_threads.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace tessera {

struct RequestThreads::State {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> tasks;
  int threads = 0;  // alive
  int idle = 0;     // waiting in `wake`
  bool stopping = false;
  std::chrono::milliseconds idle_keep;
};

void RequestThreads::serve_tasks(const std::shared_ptr<State>& s) {
  std::unique_lock lock(s->mutex);
  for (;;) {
    if (!s->tasks.empty()) {
      std::function<void()> task = std::move(s->tasks.front());
      s->tasks.pop_front();
      lock.unlock();
      task();
      task = nullptr;  // its captures go before the thread takes the next task
      lock.lock();
      continue;
    }
    if (s->stopping) break;
    ++s->idle;
    const bool woken =
        s->wake.wait_for(lock, s->idle_keep, [&] { return !s->tasks.empty() || s->stopping; });
    --s->idle;
    if (!woken) break;  // idle for idle_keep: exit
  }
  --s->threads;
}

RequestThreads::RequestThreads(std::chrono::milliseconds idle_keep)
    : state_(std::make_shared<State>()) {
  state_->idle_keep = idle_keep;
}

RequestThreads::~RequestThreads() { stop(); }

void RequestThreads::run(std::function<void()> task) {
  bool start = false;
  {
    std::lock_guard lock(state_->mutex);
    state_->tasks.push_back(std::move(task));
    // Each queued task needs a thread: an idle one for each, else a new one.
    start = state_->idle < static_cast<int>(state_->tasks.size());
    if (start) ++state_->threads;
  }
  if (start) {
    std::thread([s = state_] { serve_tasks(s); }).detach();
  } else {
    state_->wake.notify_one();
  }
}

void RequestThreads::stop() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
}

int RequestThreads::threads() const {
  std::lock_guard lock(state_->mutex);
  return state_->threads;
}

int RequestThreads::idle() const {
  std::lock_guard lock(state_->mutex);
  return state_->idle;
}

}  // namespace tessera
