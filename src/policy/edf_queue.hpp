#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "policy/work_queue.hpp"

namespace tessera {

// Earliest deadline first (ties by enqueue order): the "lowest budget first" order.
class EdfQueue final : public WorkQueue {
 public:
  void push(const Item& item) override {
    heap_.push_back({item, next_seq_++});
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  bool empty() const override { return heap_.empty(); }
  std::size_t size() const override { return heap_.size(); }
  const Item& front() const override { return heap_.front().item; }
  Item pop() override {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Item out = heap_.back().item;
    heap_.pop_back();
    return out;
  }
  Time oldest_enqueue() const override {
    Time oldest = std::numeric_limits<Time>::infinity();
    for (const auto& e : heap_) oldest = std::min(oldest, e.item.enqueued);
    return oldest;
  }
  void drain(std::vector<Item>& out) override {
    for (const auto& e : heap_) out.push_back(e.item);
    heap_.clear();
  }

 private:
  struct Entry {
    Item item;
    uint64_t seq;
  };
  static bool later(const Entry& a, const Entry& b) {
    if (a.item.deadline != b.item.deadline) return a.item.deadline > b.item.deadline;
    return a.seq > b.seq;
  }
  std::vector<Entry> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace tessera
