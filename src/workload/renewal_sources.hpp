#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "workload/arrival.hpp"

namespace tessera {

// Renewal processes: independent, identically distributed gaps between arrivals. All are
// unbounded; wrap them in Bounded (transforms.hpp) to end them. Arrivals carry no tokens
// and no SLO (use Overridden to set them).

// Poisson arrivals: exponential gaps with mean 1 / rate_rps, starting from time 0.
class PoissonSource final : public ArrivalSource {
 public:
  PoissonSource(double rate_rps, uint64_t seed);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  double rate_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> gap_;
  double time_ = 0;
};

// Gamma-distributed gaps with mean 1 / rate_rps and squared coefficient of variation cv2
// (shape 1 / cv2, scale cv2 / rate_rps): cv2 = 1 is Poisson, cv2 > 1 burstier, cv2 < 1
// more regular.
class GammaSource final : public ArrivalSource {
 public:
  GammaSource(double rate_rps, double cv2, uint64_t seed);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  double rate_;
  double cv2_;
  std::mt19937_64 rng_;
  std::gamma_distribution<double> gap_;
  double time_ = 0;
};

// Evenly spaced arrivals at times 0, 1 / rate_rps, 2 / rate_rps, ...
class DeterministicSource final : public ArrivalSource {
 public:
  explicit DeterministicSource(double rate_rps);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  double rate_;
  uint64_t index_ = 0;
};

}  // namespace tessera
