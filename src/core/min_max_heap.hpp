#pragma once

#include <bit>
#include <cstddef>
#include <utility>
#include <vector>

namespace tessera {

// A double-ended priority queue (Atkinson et al.'s min-max heap): both the smallest and
// the largest element are reachable in O(1) and removable in O(log n), in one array.
// Even levels (the root is level 0) are min levels, odd levels max levels.
template <typename T, typename Less>
class MinMaxHeap {
 public:
  explicit MinMaxHeap(Less less = Less()) : less_(std::move(less)) {}

  bool empty() const { return data_.empty(); }
  std::size_t size() const { return data_.size(); }
  const std::vector<T>& elements() const { return data_; }  // heap order
  void clear() { data_.clear(); }

  const T& min() const { return data_[0]; }
  const T& max() const { return data_[max_index()]; }

  void push(T value) {
    data_.push_back(std::move(value));
    bubble_up(data_.size() - 1);
  }

  T pop_min() { return remove_at(0); }
  T pop_max() { return remove_at(max_index()); }

 private:
  static bool on_min_level(std::size_t i) { return (std::bit_width(i + 1) - 1) % 2 == 0; }
  static std::size_t parent(std::size_t i) { return (i - 1) / 2; }

  std::size_t max_index() const {
    if (data_.size() <= 1) return 0;
    if (data_.size() == 2) return 1;
    return less_(data_[1], data_[2]) ? 2 : 1;
  }

  // "a before b" on a min level means a < b; on a max level it means b < a.
  bool before(std::size_t a, std::size_t b, bool min_level) const {
    return min_level ? less_(data_[a], data_[b]) : less_(data_[b], data_[a]);
  }

  T remove_at(std::size_t i) {
    T out = std::move(data_[i]);
    if (i + 1 == data_.size()) {
      data_.pop_back();
      return out;
    }
    data_[i] = std::move(data_.back());
    data_.pop_back();
    trickle_down(i);
    return out;
  }

  void bubble_up(std::size_t i) {
    if (i == 0) return;
    const std::size_t p = parent(i);
    const bool min_level = on_min_level(i);
    // If i sits on a min level but is larger than its (max-level) parent, it belongs to
    // the max levels, and vice versa.
    if (min_level ? less_(data_[p], data_[i]) : less_(data_[i], data_[p])) {
      std::swap(data_[i], data_[p]);
      bubble_up_same(p, !min_level);
    } else {
      bubble_up_same(i, min_level);
    }
  }

  void bubble_up_same(std::size_t i, bool min_level) {
    while (i > 2) {
      const std::size_t g = parent(parent(i));
      if (!before(i, g, min_level)) break;
      std::swap(data_[i], data_[g]);
      i = g;
    }
  }

  void trickle_down(std::size_t i) {
    const bool min_level = on_min_level(i);
    while (true) {
      const std::size_t first_child = 2 * i + 1;
      if (first_child >= data_.size()) return;
      // The best (smallest on a min level, largest on a max level) of children and
      // grandchildren.
      std::size_t m = first_child;
      for (std::size_t c = first_child; c < first_child + 2 && c < data_.size(); ++c) {
        if (before(c, m, min_level)) m = c;
        for (std::size_t g = 2 * c + 1; g < 2 * c + 3 && g < data_.size(); ++g) {
          if (before(g, m, min_level)) m = g;
        }
      }
      if (m <= first_child + 1) {  // a child
        if (before(m, i, min_level)) std::swap(data_[m], data_[i]);
        return;
      }
      // A grandchild.
      if (!before(m, i, min_level)) return;
      std::swap(data_[m], data_[i]);
      const std::size_t p = parent(m);
      if (before(p, m, min_level)) std::swap(data_[m], data_[p]);
      i = m;
    }
  }

  Less less_;
  std::vector<T> data_;
};

}  // namespace tessera
