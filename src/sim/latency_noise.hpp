#pragma once

#include <cmath>
#include <random>
#include <string>

#include "core/time.hpp"

namespace tessera {

// Multiplicative noise on profiled batch latencies: the simulated duration is
// profile × factor, with factor log-normal of mean 1 and the given coefficient of
// variation. cv = 0 turns noise off (the default).
class LatencyNoise {
 public:
  LatencyNoise(double cv, uint64_t seed) : cv_(cv), rng_(seed) {
    const double sigma2 = std::log1p(cv * cv);
    dist_ = std::lognormal_distribution<double>(-sigma2 / 2.0, std::sqrt(sigma2));
  }
  Time apply(Time profiled) { return cv_ > 0 ? profiled * dist_(rng_) : profiled; }
  double cv() const { return cv_; }

 private:
  double cv_;
  std::mt19937_64 rng_;
  std::lognormal_distribution<double> dist_;
};

}  // namespace tessera
