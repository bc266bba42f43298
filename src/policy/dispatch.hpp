#pragma once

#include <memory>
#include <vector>

#include "engine/dispatch_loads.hpp"
#include "engine/policies.hpp"

namespace tessera {

// Cycles through the live workers.
class RoundRobinDispatcher final : public Dispatcher {
 public:
  int pick(const std::vector<Worker*>& workers, const Item& item) override;

 private:
  std::size_t next_ = 0;
};

// The live worker with the fewest queued, forming and running items; ties go round-robin
// (the first such worker from a start that moves by one each pick). Inside an engine it
// reads the loads the engine keeps for it (one small array); called on another list of
// workers it reads each worker.
class LeastLoadedDispatcher final : public Dispatcher {
 public:
  int pick(const std::vector<Worker*>& workers, const Item& item) override;
  DispatchLoads* loads() override { return &loads_; }

 private:
  // The first worker of least load from `start`, reading each worker.
  static int scan(const std::vector<Worker*>& workers, std::size_t start);
  std::size_t next_ = 0;   // picks made: this pick starts at next_ % n
  std::size_t start_ = 0;  // next_ % start_n_
  std::size_t start_n_ = 0;
  DispatchLoads loads_;
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
