// The server's event loop (src/server/event_loop.hpp): tasks run one at a time in the
// order posted, and post_or_run() runs an idle loop on the caller's thread instead of
// waking the loop thread, handing over to it when the loop is busy. No test sleeps to wait:
// they wait on futures with generous timeouts.

#include "serve/runtime/event_loop.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace tessera {
namespace {

constexpr auto kPatience = std::chrono::seconds(10);

// Returns once the loop is idle: the loop thread clears its busy mark just after a task
// (a run_sync's) returns, so probe until a post_or_run() runs on this thread.
void settle(EventLoop& loop) {
  for (int i = 0; i < 1000000; ++i) {
    auto here = std::make_shared<std::atomic<bool>>(false);
    const auto me = std::this_thread::get_id();
    loop.post_or_run([here, me] { *here = std::this_thread::get_id() == me; });
    if (here->load()) return;
    std::this_thread::yield();
  }
  FAIL() << "the loop never became idle";
}

TEST(ServeEventLoop, PostOrRunOnAnIdleLoopRunsOnTheCallerInOrder) {
  SteadyClock clock;
  EventLoop loop(clock);
  loop.start();
  settle(loop);
  std::vector<int> order;
  std::thread::id ran_on;
  bool owned = false;
  loop.post_or_run([&] {
    ran_on = std::this_thread::get_id();
    owned = loop.in_loop_thread();
    order.push_back(1);
    // What a task posts (an inline model's result) runs in a later round, here too.
    loop.post([&] {
      order.push_back(3);
      loop.post([&] { order.push_back(4); });
    });
    order.push_back(2);
  });
  // Returned only after running the task and the two rounds it started.
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(owned);
  EXPECT_FALSE(loop.in_loop_thread());  // not after the round
  loop.stop();
}

TEST(ServeEventLoop, PostOrRunOnABusyLoopQueuesBehindTheRunningTask) {
  SteadyClock clock;
  EventLoop loop(clock);
  loop.start();
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::vector<int> order;
  loop.post([&] {
    entered.set_value();
    released.wait();
    order.push_back(1);
  });
  ASSERT_EQ(entered.get_future().wait_for(kPatience), std::future_status::ready);
  std::promise<std::thread::id> second;
  auto second_ran = second.get_future();
  // The loop thread is inside a task: this must neither run the task nor wait for it.
  loop.post_or_run([&] {
    order.push_back(2);
    second.set_value(std::this_thread::get_id());
  });
  EXPECT_EQ(second_ran.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  release.set_value();
  ASSERT_EQ(second_ran.wait_for(kPatience), std::future_status::ready);
  EXPECT_NE(second_ran.get(), std::this_thread::get_id());  // the loop thread ran it
  ASSERT_TRUE(loop.run_sync([] {}));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  loop.stop();
}

TEST(ServeEventLoop, WorkLeftAfterTheStolenRoundsGoesToTheLoopThread) {
  SteadyClock clock;
  EventLoop loop(clock);
  loop.start();
  ASSERT_TRUE(loop.run_sync([] {}));
  // A chain of tasks longer than the rounds a caller runs: the rest is the loop thread's.
  std::promise<std::thread::id> last;
  auto last_ran = last.get_future();
  int ran = 0;
  std::function<void()> step = [&] {
    if (++ran == EventLoop::kStealRounds + 3) return last.set_value(std::this_thread::get_id());
    loop.post(step);
  };
  loop.post_or_run(step);
  ASSERT_EQ(last_ran.wait_for(kPatience), std::future_status::ready);
  EXPECT_NE(last_ran.get(), std::this_thread::get_id());
  EXPECT_EQ(ran, EventLoop::kStealRounds + 3);
  loop.stop();
}

TEST(ServeEventLoop, TimersStillFireWhileCallersRunTheLoop) {
  SteadyClock clock;
  EventLoop loop(clock);
  loop.start();
  std::promise<void> fired;
  auto fired_future = fired.get_future();
  loop.post_or_run([&] { loop.post_at(clock.now() + 0.05, [&] { fired.set_value(); }); });
  // No one posts again: the loop thread itself must wake for the timer.
  EXPECT_EQ(fired_future.wait_for(kPatience), std::future_status::ready);
  loop.stop();
}

TEST(ServeEventLoop, BeforeStartAndAfterStopNothingRunsOnTheCaller) {
  SteadyClock clock;
  EventLoop loop(clock);
  bool ran = false;
  loop.post_or_run([&] { ran = true; });  // not started: queued
  EXPECT_FALSE(ran);
  loop.start();
  ASSERT_TRUE(loop.run_sync([] {}));
  EXPECT_TRUE(ran);
  loop.stop();
  bool after = false;
  loop.post_or_run([&] { after = true; });  // stopped: dropped
  EXPECT_FALSE(after);
  EXPECT_FALSE(loop.run_sync([] {}));
}

}  // namespace
}  // namespace tessera
