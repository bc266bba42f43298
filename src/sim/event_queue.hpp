#pragma once

// EventQueue: the simulator's pending events, in (time, insertion order) order so that runs
// are deterministic when events share a timestamp.
//
// Timers are kept apart, one per worker: a worker's new timer replaces its pending one (the
// engine ignores every timer but a worker's latest, by its generation), so superseded
// timers never reach the heap or the event loop. They sit in an indexed heap keyed by the
// same (time, insertion order) as the other events, and pop() takes the earlier of the two
// heads, so the order of the events that do fire is exactly what one heap of everything
// gave. set_timer() returns the time of the timer it replaced, for the caller's clock
// bookkeeping (the last event time of a run).
//
// A plain value owned by one Simulator; not thread-safe.

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

#include "core/time.hpp"

namespace tessera {

enum class EventKind : uint8_t { kBatchDone, kTimer, kDelivery, kWorkerLoss, kControl };

struct Event {
  Time time = 0.0;
  uint64_t seq = 0;
  EventKind kind = EventKind::kBatchDone;
  uint32_t target = 0;   // worker id, or delivery slot
  uint64_t payload = 0;  // timer generation
};

class EventQueue {
 public:
  void push(Time time, EventKind kind, uint32_t target, uint64_t payload = 0) {
    heap_.push(Event{time, next_seq_++, kind, target, payload});
  }
  // The worker's timer (kTimer, payload = generation) is now `at`, replacing any pending
  // one; returns the replaced timer's time.
  std::optional<Time> set_timer(uint32_t worker, Time at, uint64_t generation);
  bool empty() const { return heap_.empty() && timer_heap_.empty(); }
  std::size_t size() const { return heap_.size() + timer_heap_.size(); }
  // The next event's time; only when !empty().
  Time top_time() const { return timer_first() ? timers_[timer_heap_[0]].time : heap_.top().time; }
  Event pop();
  // The insertion number the next push or timer will get (the last one's is one less).
  uint64_t next_seq() const { return next_seq_; }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  struct Timer {
    Time time = 0.0;
    uint64_t seq = 0;
    uint64_t generation = 0;
    int64_t pos = -1;  // in timer_heap_, -1 when none is pending
  };
  bool timer_first() const;
  bool timer_before(uint32_t a, uint32_t b) const {
    const Timer& x = timers_[a];
    const Timer& y = timers_[b];
    return x.time != y.time ? x.time < y.time : x.seq < y.seq;
  }
  void place(std::size_t pos, uint32_t worker) {
    timer_heap_[pos] = worker;
    timers_[worker].pos = static_cast<int64_t>(pos);
  }
  void sift_up(std::size_t pos);
  void sift_down(std::size_t pos);

  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::vector<Timer> timers_;         // by worker
  std::vector<uint32_t> timer_heap_;  // workers with a pending timer, a binary min-heap
  uint64_t next_seq_ = 0;
};

}  // namespace tessera
