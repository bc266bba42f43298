// RequestThreads (src/serve/server/request_threads.*): the LLM gateway's cache of request
// threads. Waits are on the tasks' own signals (latches), bounded; no sleeps.

#include "serve/server/request_threads.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <thread>

namespace tessera {
namespace {

using std::chrono::seconds;

// Spins (yielding) until `done` holds, at most 10 s; false if it never did.
template <typename Pred>
bool eventually(Pred done) {
  const auto until = std::chrono::steady_clock::now() + seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(RequestThreads, AFinishedThreadTakesTheNextRequestInsteadOfANewOne) {
  RequestThreads pool(seconds(60));
  std::thread::id first, second;
  std::latch one(1), two(1);
  pool.run([&] {
    first = std::this_thread::get_id();
    one.count_down();
  });
  one.wait();
  ASSERT_TRUE(eventually([&] { return pool.idle() == 1; }));
  pool.run([&] {
    second = std::this_thread::get_id();
    two.count_down();
  });
  two.wait();
  EXPECT_EQ(first, second);
  EXPECT_EQ(pool.threads(), 1);
}

TEST(RequestThreads, ConcurrentRequestsEachGetAThreadAndNoneWaitsForAnother) {
  RequestThreads pool(seconds(60));
  constexpr int kRequests = 16;
  std::latch all_running(kRequests);
  std::latch release(1);
  std::atomic<int> finished{0};
  for (int i = 0; i < kRequests; ++i) {
    pool.run([&] {
      all_running.count_down();
      release.wait();  // every request blocks until all 16 run at once
      ++finished;
    });
  }
  all_running.wait();
  EXPECT_EQ(pool.threads(), kRequests);
  release.count_down();
  ASSERT_TRUE(eventually([&] { return finished == kRequests && pool.idle() == kRequests; }));
  pool.stop();
  EXPECT_TRUE(eventually([&] { return pool.threads() == 0; }));
}

TEST(RequestThreads, IdleThreadsExitAfterTheirKeepTimeAndQueuedWorkStillRunsAfterStop) {
  RequestThreads pool(std::chrono::milliseconds(0));
  std::latch ran(1);
  pool.run([&] { ran.count_down(); });
  ran.wait();
  EXPECT_TRUE(eventually([&] { return pool.threads() == 0; }));  // idle for 0 ms: gone
  pool.stop();
  std::latch after(1);
  pool.run([&] { after.count_down(); });  // the owner's choice: it still runs
  after.wait();
  EXPECT_TRUE(eventually([&] { return pool.threads() == 0; }));
}

}  // namespace
}  // namespace tessera
