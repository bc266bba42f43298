#pragma once

// RingBuffer<T>: a FIFO on one contiguous buffer whose capacity doubles when full and never
// shrinks, so a queue that rises and falls allocates nothing once it has reached its peak
// (std::deque allocates and frees a block whenever it crosses a block boundary). For small
// trivially copyable values such as the engine's Item. Not thread-safe.

#include <cstddef>
#include <vector>

namespace tessera {

template <typename T>
class RingBuffer {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  const T& front() const { return slots_[head_]; }
  // The i-th value from the front, i < size().
  const T& operator[](std::size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }

  void push_back(const T& value) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = value;
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 16 : 2 * slots_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = (*this)[i];
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;  // capacity: 0 or a power of two
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace tessera
