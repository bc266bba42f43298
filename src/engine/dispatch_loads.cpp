#include "engine/dispatch_loads.hpp"

#include <algorithm>
#include <bit>

namespace tessera {

void DispatchLoads::reset(const std::vector<Worker*>& workers) {
  list_ = &workers;
  shared_queue_ = workers.size() > 1;
  for (const Worker* w : workers) shared_queue_ &= w->queue == workers.front()->queue;
  std::fill(position_.begin(), position_.end(), -1);
  words_ = std::max<std::size_t>(1, (workers.size() + 63) / 64);
  members_.assign(count_.size() * words_, 0);
  std::fill(count_.begin(), count_.end(), 0);
  load_.assign(workers.size(), 0);
  stale_.assign(workers.size(), 0);
  stale_list_.clear();
  stale_list_.reserve(workers.size());
  least_ = UINT32_MAX;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const Worker& w = *workers[i];
    if (position_.size() <= w.id) position_.resize(std::size_t{w.id} + 1, -1);
    position_[w.id] = static_cast<int32_t>(i);
    load_[i] = load_of(w);
    add_member(i, load_[i]);
    least_ = std::min(least_, load_[i]);
  }
  if (workers.empty()) least_ = 0;
}

void DispatchLoads::add_member(std::size_t pos, uint32_t load) {
  if (load >= count_.size()) {
    // Doubling, so that a load climbing one item at a time grows the sets rarely.
    const std::size_t values = std::max<std::size_t>({std::size_t{load} + 1, 2 * count_.size(), 8});
    count_.resize(values, 0);
    members_.resize(values * words_, 0);
  }
  members(load)[pos / 64] |= uint64_t{1} << (pos % 64);
  ++count_[load];
}

void DispatchLoads::set(std::size_t pos, uint32_t load) {
  const uint32_t old = load_[pos];
  if (old == load) return;
  members(old)[pos / 64] &= ~(uint64_t{1} << (pos % 64));
  --count_[old];
  add_member(pos, load);
  load_[pos] = load;
  if (load < least_) {
    least_ = load;
  } else if (old == least_ && count_[old] == 0) {
    while (count_[least_] == 0) ++least_;  // stops at `load` at the latest
  }
}

void DispatchLoads::read_stale() {
  for (const uint32_t pos : stale_list_) {
    stale_[pos] = 0;
    set(pos, load_of(*(*list_)[pos]));
  }
  stale_list_.clear();
}

int DispatchLoads::least_from(std::size_t start) {
  if (load_.empty()) return -1;
  if (!stale_list_.empty()) read_stale();
  const uint64_t* bits = members(least_);
  const std::size_t first = start / 64;
  // From `start` to the end of its word, then the words after it, then from 0 on.
  uint64_t word = bits[first] & (~uint64_t{0} << (start % 64));
  if (word != 0)
    return static_cast<int>(first * 64 + static_cast<std::size_t>(std::countr_zero(word)));
  for (std::size_t w = first + 1; w < words_; ++w) {
    if (bits[w] != 0)
      return static_cast<int>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits[w])));
  }
  for (std::size_t w = 0; w <= first; ++w) {
    if (bits[w] != 0)
      return static_cast<int>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits[w])));
  }
  return -1;  // not reached: some position holds the least load
}

}  // namespace tessera
