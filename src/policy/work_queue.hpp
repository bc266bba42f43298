#pragma once

#include <cstddef>
#include <vector>

#include "engine/item.hpp"

namespace tessera {

// A worker's queue. The order it hands items out in is the queue-order policy.
class WorkQueue {
 public:
  virtual ~WorkQueue() = default;
  virtual void push(const Item& item) = 0;
  virtual bool empty() const = 0;
  virtual std::size_t size() const = 0;
  // The item the next batch should take first, and its removal.
  virtual const Item& front() const = 0;
  virtual Item pop() = 0;
  // Earliest enqueue time among queued items (timeout batching); +inf if empty.
  virtual Time oldest_enqueue() const = 0;
  // Removes everything (a worker was lost); order unspecified.
  virtual void drain(std::vector<Item>& out) = 0;
};

}  // namespace tessera
