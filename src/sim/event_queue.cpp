#include "sim/event_queue.hpp"

namespace tessera {

std::optional<Time> EventQueue::set_timer(uint32_t worker, Time at, uint64_t generation) {
  if (timers_.size() <= worker) timers_.resize(std::size_t{worker} + 1);
  Timer& t = timers_[worker];
  std::optional<Time> replaced;
  if (t.pos >= 0) replaced = t.time;
  t.time = at;
  t.seq = next_seq_++;
  t.generation = generation;
  if (t.pos < 0) {
    timer_heap_.push_back(worker);
    t.pos = static_cast<int64_t>(timer_heap_.size() - 1);
  }
  // The new key is later in insertion order; its time may move either way.
  const auto pos = static_cast<std::size_t>(t.pos);
  sift_up(pos);
  sift_down(static_cast<std::size_t>(timers_[worker].pos));
  return replaced;
}

bool EventQueue::timer_first() const {
  if (timer_heap_.empty()) return false;
  if (heap_.empty()) return true;
  const Timer& t = timers_[timer_heap_[0]];
  const Event& e = heap_.top();
  return t.time != e.time ? t.time < e.time : t.seq < e.seq;
}

Event EventQueue::pop() {
  if (!timer_first()) {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }
  const uint32_t worker = timer_heap_[0];
  Timer& t = timers_[worker];
  const Event e{t.time, t.seq, EventKind::kTimer, worker, t.generation};
  t.pos = -1;
  const uint32_t tail = timer_heap_.back();
  timer_heap_.pop_back();
  if (!timer_heap_.empty()) {
    place(0, tail);
    sift_down(0);
  }
  return e;
}

void EventQueue::sift_up(std::size_t pos) {
  const uint32_t w = timer_heap_[pos];
  while (pos > 0) {
    const std::size_t parent = (pos - 1) / 2;
    if (!timer_before(w, timer_heap_[parent])) break;
    place(pos, timer_heap_[parent]);
    pos = parent;
  }
  place(pos, w);
}

void EventQueue::sift_down(std::size_t pos) {
  const uint32_t w = timer_heap_[pos];
  const std::size_t n = timer_heap_.size();
  for (;;) {
    std::size_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && timer_before(timer_heap_[child + 1], timer_heap_[child])) ++child;
    if (!timer_before(timer_heap_[child], w)) break;
    place(pos, timer_heap_[child]);
    pos = child;
  }
  place(pos, w);
}

}  // namespace tessera
