#include "policy/dispatch.hpp"

#include "policy/work_queue.hpp"

namespace tessera {

std::size_t Worker::load() const { return queue->size() + forming.size() + running.size(); }

int RoundRobinDispatcher::pick(const std::vector<Worker*>& workers, const Item&) {
  const std::size_t n = workers.size();
  for (std::size_t tried = 0; tried < n; ++tried) {
    std::size_t i = next_++ % n;
    if (workers[i]->alive) return static_cast<int>(i);
  }
  return -1;
}

int LeastLoadedDispatcher::pick(const std::vector<Worker*>& workers, const Item&) {
  const std::size_t n = workers.size();
  int best = -1;
  std::size_t best_load = 0;
  const std::size_t start = next_++ % (n == 0 ? 1 : n);
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t i = (start + k) % n;
    if (!workers[i]->alive) continue;
    std::size_t load = workers[i]->load();
    if (best < 0 || load < best_load) {
      best = static_cast<int>(i);
      best_load = load;
    }
  }
  return best;
}

}  // namespace tessera
