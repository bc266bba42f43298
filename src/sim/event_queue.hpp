#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "core/time.hpp"

namespace tessera {

// The simulator's pending events, in (time, insertion order) order so that runs are
// deterministic when events share a timestamp.
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
  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.top(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  std::size_t size() const { return heap_.size(); }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace tessera
