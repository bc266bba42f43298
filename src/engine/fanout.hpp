#pragma once

#include <cmath>
#include <random>

#include "engine/app.hpp"

namespace tessera {

// Draws how many sub-requests one finished item derives. The mean of every distribution
// is the profiled multiplicative factor:
//  - fixed: floor(mean), plus one with probability frac(mean) (so 2.5 gives 2 or 3);
//  - poisson: Poisson(mean);
//  - geometric: failures before the first success with p = 1 / (1 + mean).
class FanoutSampler {
 public:
  FanoutSampler(FanoutDistribution kind, double mean)
      : kind_(kind),
        mean_(mean),
        whole_(static_cast<int>(std::floor(mean))),
        frac_(mean - std::floor(mean)),
        poisson_(mean > 0 ? mean : 1.0),
        geometric_(1.0 / (1.0 + mean)) {}

  int draw(std::mt19937_64& rng) {
    switch (kind_) {
      case FanoutDistribution::kFixed:
        if (frac_ <= 0.0) return whole_;
        return whole_ + (std::uniform_real_distribution<double>(0.0, 1.0)(rng) < frac_ ? 1 : 0);
      case FanoutDistribution::kPoisson:
        return mean_ > 0 ? poisson_(rng) : 0;
      case FanoutDistribution::kGeometric:
        return geometric_(rng);
    }
    return whole_;
  }
  double mean() const { return mean_; }

 private:
  FanoutDistribution kind_;
  double mean_;
  int whole_;
  double frac_;
  std::poisson_distribution<int> poisson_;
  std::geometric_distribution<int> geometric_;
};

}  // namespace tessera
