#pragma once

#include <memory>
#include <vector>

#include "engine/policies.hpp"

namespace tessera {

// Cycles through the live workers.
class RoundRobinDispatcher final : public Dispatcher {
 public:
  int pick(const std::vector<Worker*>& workers, const Item& item) override;

 private:
  std::size_t next_ = 0;
};

// The live worker with the fewest queued, forming and running items; ties go round-robin.
class LeastLoadedDispatcher final : public Dispatcher {
 public:
  int pick(const std::vector<Worker*>& workers, const Item& item) override;

 private:
  std::size_t next_ = 0;
};

// For a task-wide queue: the next idle live worker (round-robin among the idle ones),
// else any live worker; the item waits in the shared queue for the first worker to free up.
class IdleFirstDispatcher final : public Dispatcher {
 public:
  int pick(const std::vector<Worker*>& workers, const Item& item) override;

 private:
  std::size_t next_ = 0;
};

}  // namespace tessera
