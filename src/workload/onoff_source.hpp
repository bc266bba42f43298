#pragma once

// OnOffSource: a two-state Markov-modulated Poisson process (MMPP-2), the bursty arrival
// source of PARD's regime (issue 11): the rate switches between a burst level and a
// quiet level, each held for an exponentially distributed time. It is fitted to three
// stated numbers: the mean rate, the coefficient of variation of the arrival rate and the
// mean burst length (optionally the burst's peak as a multiple of the mean). Owns its
// random generator (seeded); unbounded (wrap in Bounded). Not thread-safe.

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "workload/arrival.hpp"

namespace tessera {

// The two levels and holding times that give a mean rate, a rate CV and a burst length.
struct OnOffFit {
  double on_rps = 0.0;   // rate during a burst
  double off_rps = 0.0;  // rate between bursts
  double on_s = 0.0;     // mean burst length
  double off_s = 0.0;    // mean quiet length
  double on_fraction = 0.0;
};

// With p the fraction of time in bursts and P = on_rps / mean:
//   mean = p·on + (1 − p)·off,  rate CV = (P − 1)·sqrt(p / (1 − p)),
// so p = x / (1 + x) with x = (cv / (P − 1))², and off ≥ 0 needs P ≥ 1 + cv². Without a
// peak, off = 0 and P = 1 + cv² (p = 1 / (1 + cv²)). off_s = on_s · (1 − p) / p.
// Throws std::invalid_argument when peak < 1 + cv² (naming both).
OnOffFit fit_on_off(double mean_rps, double cv, double burst_s, std::optional<double> peak);

class OnOffSource final : public ArrivalSource {
 public:
  OnOffSource(const OnOffFit& fit, double cv, uint64_t seed);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  void enter(bool on);

  OnOffFit fit_;
  double cv_;
  std::mt19937_64 rng_;
  bool on_ = false;
  double time_ = 0.0;
  double state_end_ = 0.0;
};

}  // namespace tessera
