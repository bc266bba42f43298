#pragma once

#include <cstdint>
#include <limits>

#include "core/min_max_heap.hpp"
#include "engine/policies.hpp"

namespace tessera {

// Which end of the remaining-budget order a queue serves first (PARD §4.3).
enum class PriorityMode : uint8_t {
  kLowBudgetFirst,   // LBF: earliest deadline first (EDF)
  kHighBudgetFirst,  // HBF: latest deadline first
};

// A worker queue ordered by remaining latency budget. Remaining budget is
// deadline − now, which falls at the same rate for every queued item, so the deadline
// is a static key. A min-max heap serves both ends; the mode it reads may be fixed or
// switched at run time by a controller (PARD's adaptive priority).
class BudgetQueue final : public WorkQueue {
 public:
  explicit BudgetQueue(const PriorityMode* mode) : mode_(mode) {}

  const Item& front() const override {
    return *mode_ == PriorityMode::kLowBudgetFirst ? heap_.min().item : heap_.max().item;
  }
  const Item& least_budget() const override { return heap_.min().item; }
  // O(n): only timeout batching asks, and it is rarely combined with budget order.
  Time oldest_enqueue() const override {
    Time oldest = std::numeric_limits<Time>::infinity();
    for (const Entry& e : heap_.elements())
      oldest = e.item.enqueued < oldest ? e.item.enqueued : oldest;
    return oldest;
  }
  static constexpr PriorityMode kAlwaysLbf = PriorityMode::kLowBudgetFirst;
  static constexpr PriorityMode kAlwaysHbf = PriorityMode::kHighBudgetFirst;

 private:
  void do_push(const Item& item) override { heap_.push(Entry{item, next_seq_++}); }
  Item do_pop() override {
    return *mode_ == PriorityMode::kLowBudgetFirst ? heap_.pop_min().item : heap_.pop_max().item;
  }
  Item do_pop_least_budget() override { return heap_.pop_min().item; }
  void do_drain(std::vector<Item>& out) override {
    for (const Entry& e : heap_.elements()) out.push_back(e.item);
    heap_.clear();
  }

  struct Entry {
    Item item;
    uint64_t seq;
  };
  // Earlier deadline = less budget; ties: the earlier arrival counts as less budget, so
  // LBF is FIFO among equal deadlines.
  struct Less {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.item.deadline != b.item.deadline ? a.item.deadline < b.item.deadline : a.seq < b.seq;
    }
  };
  const PriorityMode* mode_;
  MinMaxHeap<Entry, Less> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace tessera
