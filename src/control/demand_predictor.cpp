#include "control/demand_predictor.hpp"

#include <numeric>
#include <stdexcept>

namespace tessera::control {

DemandPredictor::DemandPredictor(int history) : history_(static_cast<std::size_t>(history)) {
  if (history < 1) throw std::invalid_argument("demand history must be at least one bin");
}

void DemandPredictor::observe(double rate_rps) {
  recent_.push_back(rate_rps);
  if (recent_.size() > history_) recent_.pop_front();
}

double DemandPredictor::predict() const {
  if (recent_.empty()) return 0.0;
  return std::accumulate(recent_.begin(), recent_.end(), 0.0) / static_cast<double>(recent_.size());
}

}  // namespace tessera::control
