#include "workload/onoff_source.hpp"

#include <cmath>
#include <stdexcept>

#include "workload/number_text.hpp"

namespace tessera {

OnOffFit fit_on_off(double mean_rps, double cv, double burst_s, std::optional<double> peak) {
  const double min_peak = 1.0 + cv * cv;
  const double p_peak = peak.value_or(min_peak);
  if (p_peak < min_peak * (1.0 - 1e-12)) {
    throw std::invalid_argument(
        "peak_x " + number_text(p_peak) + " is too low for cv " + number_text(cv) +
        ": a burst must reach at least 1 + cv² = " + number_text(min_peak) + " times the mean");
  }
  const double x = (cv / (p_peak - 1.0)) * (cv / (p_peak - 1.0));
  OnOffFit f;
  f.on_fraction = x / (1.0 + x);
  f.on_rps = p_peak * mean_rps;
  f.off_rps = std::max(0.0, mean_rps * (1.0 - f.on_fraction * p_peak) / (1.0 - f.on_fraction));
  f.on_s = burst_s;
  f.off_s = burst_s * (1.0 - f.on_fraction) / f.on_fraction;
  return f;
}

OnOffSource::OnOffSource(const OnOffFit& fit, double cv, uint64_t seed)
    : fit_(fit), cv_(cv), rng_(seed) {
  // Start in the stationary distribution, so the first seconds look like the rest.
  enter(std::bernoulli_distribution(fit_.on_fraction)(rng_));
}

void OnOffSource::enter(bool on) {
  on_ = on;
  const double mean = on ? fit_.on_s : fit_.off_s;
  state_end_ = time_ + std::exponential_distribution<double>(1.0 / mean)(rng_);
}

bool OnOffSource::next(Arrival& out) {
  // Exponential gaps are memoryless, so a gap that crosses a switch is redrawn from the
  // switch at the new rate.
  for (;;) {
    const double rate = on_ ? fit_.on_rps : fit_.off_rps;
    if (rate > 0.0) {
      const double t = time_ + std::exponential_distribution<double>(rate)(rng_);
      if (t < state_end_) {
        time_ = t;
        break;
      }
    }
    time_ = state_end_;
    enter(!on_);
  }
  out = Arrival{};
  out.time = time_;
  return true;
}

std::string OnOffSource::describe() const {
  return "onoff(rate=" +
         number_text(fit_.on_fraction * fit_.on_rps + (1.0 - fit_.on_fraction) * fit_.off_rps) +
         "/s, cv=" + number_text(cv_) + ", bursts of " + number_text(fit_.on_s) + " s at " +
         number_text(fit_.on_rps) + "/s, quiet " + number_text(fit_.off_s) + " s at " +
         number_text(fit_.off_rps) + "/s)";
}

}  // namespace tessera
