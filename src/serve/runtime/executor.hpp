#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace tessera {

// One worker's execution thread: runs its jobs (model batches) one at a time, in order,
// off the event loop. `on_start` runs first on every thread it starts (libtorch thread
// settings).
//
// With timeout_s > 0, a supervisor thread watches the running job: one that runs longer
// is abandoned. Its thread is detached and left to finish the call alone (a model call
// cannot be interrupted), `on_abandon` of that job runs on the supervisor thread, and a
// fresh thread takes the queue. The job must then not touch its owner: it shares a flag
// with its on_abandon and delivers its result only if it wins it (see Endpoint).
//
// Threads: post() and replaced() from any thread; stop() from the owner, once.
class Executor {
 public:
  explicit Executor(std::function<void()> on_start = {}, double timeout_s = 0.0);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void post(std::function<void()> job, std::function<void()> on_abandon = {});
  // Stops taking jobs and drops queued ones; the running job may finish.
  void request_stop();
  // request_stop(), then joins the thread if its job finishes before `deadline`, else
  // leaves it detached. Idempotent.
  void stop(std::chrono::steady_clock::time_point deadline);
  void stop() { stop(std::chrono::steady_clock::time_point::max()); }
  // Threads abandoned and replaced so far.
  int replaced() const;

  struct State;
  struct Runner;

 private:
  std::shared_ptr<State> state_;
  std::thread supervisor_;
};

}  // namespace tessera
