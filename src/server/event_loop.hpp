#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/steady_clock.hpp"

namespace tessera {

// The one thread that runs the engines. Other threads hand it work with post(); the
// engines' timers and network hops come back through post_at(). Tasks run in the order
// posted; a timer runs at or after its time, after the tasks posted before it came due.
class EventLoop {
 public:
  explicit EventLoop(const SteadyClock& clock) : clock_(clock) {}
  ~EventLoop() { stop(); }
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  void start();
  // Finishes the task being run and joins the thread; tasks still queued are destroyed
  // without running. Idempotent.
  void stop();

  // Any thread. After stop() the task is destroyed without running.
  void post(std::function<void()> task);
  // Runs `task` at clock time `at` (seconds on the loop's SteadyClock).
  void post_at(Time at, std::function<void()> task);
  // Runs `task` on the loop thread and waits for it. Returns false (and does not run it)
  // if the loop is not running or stops first. Never call it from the loop thread.
  bool run_sync(const std::function<void()>& task);

  bool in_loop_thread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  struct Timer {
    Time at;
    uint64_t seq;
    std::function<void()> task;
  };
  void run();

  const SteadyClock& clock_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::function<void()>> inbox_;
  std::vector<Timer> timers_;  // a min-heap on (at, seq)
  uint64_t timer_seq_ = 0;
  bool running_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace tessera
