#pragma once

#include <limits>

#include "core/ring_buffer.hpp"
#include "engine/policies.hpp"

namespace tessera {

// First come, first served by arrival at this worker (or at the task, for a task-wide queue).
class FifoQueue final : public WorkQueue {
 public:
  const Item& front() const override { return items_.front(); }
  Time oldest_enqueue() const override {
    return items_.empty() ? std::numeric_limits<Time>::infinity() : items_.front().enqueued;
  }

 private:
  void do_push(const Item& item) override { items_.push_back(item); }
  Item do_pop() override {
    Item out = items_.front();
    items_.pop_front();
    return out;
  }
  void do_drain(std::vector<Item>& out) override {
    for (std::size_t i = 0; i < items_.size(); ++i) out.push_back(items_[i]);
    items_.clear();
  }

  RingBuffer<Item> items_;  // allocates only while growing to its peak
};

}  // namespace tessera
