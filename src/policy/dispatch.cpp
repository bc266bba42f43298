#include "policy/dispatch.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

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

namespace {

// The least of v[0..n), n > 0, four at a time (the compiler's own vectorisation at -O2 leaves
// this reduction scalar).
uint32_t least_of(const uint32_t* v, std::size_t n) {
  using Four = uint32_t __attribute__((vector_size(16)));
  std::size_t j = 0;
  uint32_t least = v[0];
  if (n >= 8) {
    Four m;
    std::memcpy(&m, v, sizeof m);
    for (j = 4; j + 4 <= n; j += 4) {
      Four x;
      std::memcpy(&x, v + j, sizeof x);
      m = x < m ? x : m;
    }
    least = std::min(std::min(m[0], m[1]), std::min(m[2], m[3]));
  }
  for (; j < n; ++j) least = std::min(least, v[j]);
  return least;
}

}  // namespace

int LeastLoadedDispatcher::scan(const std::vector<Worker*>& workers, std::size_t start) {
  const std::size_t n = workers.size();
  int best = -1;
  std::size_t best_load = 0;
  std::size_t i = start;
  for (std::size_t k = 0; k < n; ++k, i = i + 1 == n ? 0 : i + 1) {
    if (!workers[i]->alive) continue;
    const Worker& w = *workers[i];
    const std::size_t load = w.queue->size() + w.forming.size() + w.running.size();
    if (best < 0 || load < best_load) {
      best = static_cast<int>(i);
      best_load = load;
      if (load == 0) break;  // nothing can beat an empty worker; ties keep the first
    }
  }
  return best;
}

int LeastLoadedDispatcher::pick(const std::vector<Worker*>& workers, const Item&) {
  const std::size_t n = workers.size();
  if (n == 0) return -1;
  // start = next_++ % n, without a division while n stays the same.
  if (n != start_n_) {
    start_n_ = n;
    start_ = next_ % n;
  }
  const std::size_t start = start_;
  ++next_;
  start_ = start + 1 == n ? 0 : start + 1;
  if (!loads_.follows(workers)) return scan(workers, start);
  // The engine's list holds live workers only. The least load, then its first worker from
  // `start` on, else from 0: the scan's choice.
  const uint32_t* load = loads_.loads().data();
  const uint32_t least = least_of(load, n);
  std::size_t at = start;
  while (at < n && load[at] != least) ++at;
  if (at == n) {
    at = 0;
    while (load[at] != least) ++at;
  }
  assert(static_cast<int>(at) == scan(workers, start));  // the loads are up to date
  return static_cast<int>(at);
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
