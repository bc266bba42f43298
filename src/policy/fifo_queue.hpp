#pragma once

#include <deque>
#include <limits>

#include "engine/policies.hpp"

namespace tessera {

// First come, first served by arrival at this worker.
class FifoQueue final : public WorkQueue {
 public:
  void push(const Item& item) override { items_.push_back(item); }
  bool empty() const override { return items_.empty(); }
  std::size_t size() const override { return items_.size(); }
  const Item& front() const override { return items_.front(); }
  Item pop() override {
    Item out = items_.front();
    items_.pop_front();
    return out;
  }
  Time oldest_enqueue() const override {
    return items_.empty() ? std::numeric_limits<Time>::infinity() : items_.front().enqueued;
  }
  void drain(std::vector<Item>& out) override {
    out.insert(out.end(), items_.begin(), items_.end());
    items_.clear();
  }

 private:
  std::deque<Item> items_;
};

}  // namespace tessera
