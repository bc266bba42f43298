#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/runtime/steady_clock.hpp"

namespace tessera {

// Runs the engines' work one task at a time: other threads hand it work with post(); the
// engines' timers and network hops come back through post_at(). Tasks run in the order
// posted; a timer runs at or after its time, after the tasks posted before it came due.
//
// Threads: the loop has its own thread, but tasks are only ever run by one thread at a
// time, in order: the loop thread, or a thread calling post_or_run() while the loop was
// idle, which then runs the loop's work itself (at most kStealRounds rounds of it) instead
// of waking the loop thread, saving two thread hand-offs per request when the server is
// not saturated. Either way a task never runs concurrently with another, and everything
// one task writes is seen by the next (the hand-over is under the loop's mutex).
class EventLoop {
 public:
  // The rounds (each: every task queued, then every timer due) a post_or_run() caller
  // runs at most before it hands what is left to the loop thread.
  static constexpr int kStealRounds = 4;

  explicit EventLoop(const SteadyClock& clock) : clock_(clock) {}
  ~EventLoop() { stop(); }
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  void start();
  // Finishes the task being run (on whichever thread), joins the loop thread; tasks still
  // queued are destroyed without running. Idempotent.
  void stop();

  // Any thread. After stop() the task is destroyed without running.
  void post(std::function<void()> task);
  // Any thread but a task's own: as post(), but when the loop is running and idle (no
  // thread is running its tasks), runs the loop's work on the calling thread, this task
  // first among those posted after the ones already queued. Returns once done (or after
  // kStealRounds rounds, leaving the rest to the loop thread). It must not be called with
  // a lock held that a task takes.
  void post_or_run(std::function<void()> task);
  // Runs `task` at clock time `at` (seconds on the loop's SteadyClock).
  void post_at(Time at, std::function<void()> task);
  // Runs `task` on the loop and waits for it. Returns false (and does not run it) if the
  // loop is not running or stops first. Never call it from a task.
  bool run_sync(const std::function<void()>& task);

  // Whether the calling thread is the one running the loop's tasks now.
  bool in_loop_thread() const { return owner_.load() == std::this_thread::get_id(); }

 private:
  struct Timer {
    Time at;
    uint64_t seq;
    std::function<void()> task;
  };
  void run();
  // With `lock` held: whether a round would run anything at `now`.
  bool ready(Time now) const;
  // One round: takes every queued task and every due timer, runs them with the lock
  // released, and takes the lock again. The caller has set busy_.
  void run_round(std::unique_lock<std::mutex>& lock);

  const SteadyClock& clock_;
  std::mutex mutex_;
  std::condition_variable wake_;  // the loop thread waits here for work
  std::condition_variable idle_;  // stop() waits here for busy_ to clear
  std::vector<std::function<void()>> inbox_;
  std::vector<Timer> timers_;                 // a min-heap on (at, seq)
  std::vector<std::function<void()>> batch_;  // the round being run (owned by busy_)
  uint64_t timer_seq_ = 0;
  bool running_ = false;
  bool stopped_ = false;
  // When the loop thread, waiting, wakes by itself (kNever: only when notified).
  static constexpr Time kNever = std::numeric_limits<Time>::infinity();
  Time wait_at_ = kNever;
  bool busy_ = false;  // a thread is running a round (the loop thread or a stealer)
  std::atomic<std::thread::id> owner_{};
  std::thread thread_;
};

}  // namespace tessera
