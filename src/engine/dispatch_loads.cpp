#include "engine/dispatch_loads.hpp"

#include <algorithm>

namespace tessera {

void DispatchLoads::reset(const std::vector<Worker*>& workers) {
  list_ = &workers;
  shared_queue_ = workers.size() > 1;
  for (const Worker* w : workers) shared_queue_ &= w->queue == workers.front()->queue;
  std::fill(position_.begin(), position_.end(), -1);
  load_.assign(workers.size(), 0);
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const Worker& w = *workers[i];
    if (position_.size() <= w.id) position_.resize(std::size_t{w.id} + 1, -1);
    position_[w.id] = static_cast<int32_t>(i);
    load_[i] = load_of(w);
  }
}

}  // namespace tessera
