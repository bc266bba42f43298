#include "policy/batching.hpp"

#include "engine/policies.hpp"

namespace tessera {

BatchPlan TimeoutBatching::plan(const Worker& worker, Time now) const {
  if (worker.queue->size() >= static_cast<std::size_t>(worker.max_batch)) return {true};
  if (start_on_completion_ && worker.last_batch_end == now) return {true};
  Time due = worker.queue->oldest_enqueue() + timeout(worker);
  // A small tolerance keeps floating-point rounding of `due` from re-arming a timer at now.
  if (now + 1e-12 >= due) return {true};
  return {false, due};
}

}  // namespace tessera
