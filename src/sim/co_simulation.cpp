#include "sim/co_simulation.hpp"

#include <limits>
#include <stdexcept>

namespace tessera {

void run_together(const std::vector<Simulator*>& sims,
                  const std::vector<ArrivalSource*>& arrivals) {
  if (sims.size() != arrivals.size()) {
    throw std::invalid_argument("run_together: one arrival stream per simulator");
  }
  for (std::size_t i = 0; i < sims.size(); ++i) {
    if (sims[i] == nullptr || arrivals[i] == nullptr) {
      throw std::invalid_argument("run_together: simulator or arrival stream " + std::to_string(i) +
                                  " is missing");
    }
  }
  for (std::size_t i = 0; i < sims.size(); ++i) sims[i]->begin(*arrivals[i]);
  while (true) {
    Time best = std::numeric_limits<Time>::infinity();
    Simulator* next = nullptr;
    for (Simulator* s : sims) {
      const Time t = s->next_time();
      if (t < best) {
        best = t;
        next = s;
      }
    }
    if (next == nullptr) break;
    next->step();
  }
  for (Simulator* s : sims) s->finish();
}

}  // namespace tessera
