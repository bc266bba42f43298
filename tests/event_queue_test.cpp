// The simulator's event queue: events and per-worker timers come out in (time, insertion)
// order, exactly as one heap of everything would give them minus the timers a worker's
// later timer replaced; the replaced ones are reported with their times.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/event_queue.hpp"

namespace tessera {
namespace {

TEST(EventQueue, TimersReplaceTheWorkersPendingOne) {
  EventQueue q;
  q.push(2.0, EventKind::kBatchDone, 7);
  EXPECT_FALSE(q.set_timer(3, 5.0, 1).has_value());
  const auto replaced = q.set_timer(3, 1.0, 2);  // earlier than the one it replaces
  ASSERT_TRUE(replaced.has_value());
  EXPECT_EQ(*replaced, 5.0);
  q.set_timer(4, 2.0, 1);  // ties with the batch end: inserted later, so after it
  ASSERT_EQ(q.size(), 3u);
  Event e = q.pop();
  EXPECT_EQ(e.kind, EventKind::kTimer);
  EXPECT_EQ(e.target, 3u);
  EXPECT_EQ(e.payload, 2u);
  EXPECT_EQ(q.pop().kind, EventKind::kBatchDone);
  e = q.pop();
  EXPECT_EQ(e.target, 4u);
  EXPECT_EQ(e.time, 2.0);
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.set_timer(3, 9.0, 3).has_value());  // the fired one is no longer pending
}

// Against a plain list of everything pending, where setting a worker's timer removes its
// pending one and a pop takes the least (time, insertion number).
TEST(EventQueue, SameOrderAsAPlainListUnderRandomUse) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    EventQueue q;
    std::vector<Event> pending;  // the reference
    uint64_t seq = 0;
    Time now = 0.0;
    for (int step = 0; step < 3000; ++step) {
      const auto action = rng() % 4;
      // Times on a coarse grid, so that ties are common.
      const Time at = now + static_cast<double>(rng() % 8) * 0.5;
      if (action == 0) {
        const auto slot = static_cast<uint32_t>(rng() % 5);
        q.push(at, EventKind::kDelivery, slot);
        pending.push_back(Event{at, seq++, EventKind::kDelivery, slot, 0});
      } else if (action < 3) {
        const auto w = static_cast<uint32_t>(rng() % 6);
        const auto old = std::find_if(pending.begin(), pending.end(), [&](const Event& e) {
          return e.kind == EventKind::kTimer && e.target == w;
        });
        const auto replaced = q.set_timer(w, at, 1000 + seq);
        ASSERT_EQ(replaced.has_value(), old != pending.end());
        if (old != pending.end()) {
          EXPECT_EQ(*replaced, old->time);
          pending.erase(old);
        }
        pending.push_back(Event{at, seq++, EventKind::kTimer, w, 1000 + seq - 1});
      } else if (!pending.empty()) {
        ASSERT_FALSE(q.empty());
        const auto least =
            std::min_element(pending.begin(), pending.end(), [](const Event& a, const Event& b) {
              return a.time != b.time ? a.time < b.time : a.seq < b.seq;
            });
        EXPECT_EQ(q.top_time(), least->time);
        const Event e = q.pop();
        EXPECT_EQ(e.seq, least->seq);
        EXPECT_EQ(e.kind, least->kind);
        EXPECT_EQ(e.target, least->target);
        EXPECT_EQ(e.payload, least->payload);
        now = e.time;
        pending.erase(least);
      }
      ASSERT_EQ(q.size(), pending.size());
    }
  }
}

}  // namespace
}  // namespace tessera
