#include "policy/dispatch.hpp"

#include "engine/policies.hpp"

namespace tessera {

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
  if (n == 0) return -1;
  int best = -1;
  std::size_t best_load = 0;
  std::size_t i = next_++ % n;
  for (std::size_t k = 0; k < n; ++k, i = i + 1 == n ? 0 : i + 1) {
    if (!workers[i]->alive) continue;
    const Worker& w = *workers[i];
    const std::size_t load = w.queue->size() + w.forming.size() + w.running.size();  // load()
    if (best < 0 || load < best_load) {
      best = static_cast<int>(i);
      best_load = load;
      if (load == 0) break;  // nothing can beat an empty worker; ties keep the first
    }
  }
  return best;
}

int IdleFirstDispatcher::pick(const std::vector<Worker*>& workers, const Item&) {
  const std::size_t n = workers.size();
  int any_live = -1;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_ + k) % n;
    if (!workers[i]->alive) continue;
    if (!workers[i]->busy) {
      next_ = i + 1;
      return static_cast<int>(i);
    }
    if (any_live < 0) any_live = static_cast<int>(i);
  }
  return any_live;
}

}  // namespace tessera
