#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "workload/arrival.hpp"

namespace tessera {

// Scales a stream's rate by `factor` (> 0) while keeping its time span and shape.
// factor < 1 keeps each arrival with probability `factor`; factor > 1 turns each arrival
// into floor(factor) or floor(factor) + 1 copies (the latter with probability equal to the
// fractional part), the original at its own time and the extra copies at seeded uniform
// times in the gap up to the next original arrival (the last arrival's copies share its
// time). Copies keep the tokens and SLO of their original.
class RateScaled final : public ArrivalSource {
 public:
  RateScaled(std::unique_ptr<ArrivalSource> inner, double factor, uint64_t seed);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  bool refill();

  std::unique_ptr<ArrivalSource> inner_;
  double factor_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
  Arrival lookahead_;
  bool have_lookahead_ = false;
  bool started_ = false;
  std::vector<Arrival> queue_;  // copies of one original, in time order
  std::size_t queue_pos_ = 0;
};

}  // namespace tessera
