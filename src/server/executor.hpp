#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tessera {

// One worker's execution thread: runs its jobs (model batches) one at a time, in order,
// off the event loop. `on_start` runs first on the thread (libtorch thread settings).
class Executor {
 public:
  explicit Executor(std::function<void()> on_start = {});
  ~Executor() { stop(); }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void post(std::function<void()> job);
  // Finishes the running job, drops queued ones, joins. Idempotent.
  void stop();

 private:
  void run(const std::function<void()>& on_start);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tessera
