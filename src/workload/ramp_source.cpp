#include "workload/ramp_source.hpp"

#include <algorithm>
#include <cmath>

#include "workload/number_text.hpp"

namespace tessera {

double RampShape::rate_at(double t) const {
  if (t < hold_s) return from_rps;
  if (t >= hold_s + ramp_s) return to_rps;
  return from_rps + (to_rps - from_rps) * (t - hold_s) / ramp_s;
}

double RampShape::expected_count(double t) const {
  if (t <= 0) return 0;
  if (t <= hold_s) return from_rps * t;
  const double held = from_rps * hold_s;
  if (t <= hold_s + ramp_s) {
    const double u = t - hold_s;
    return held + from_rps * u + (to_rps - from_rps) * u * u / (2 * ramp_s);
  }
  return held + (from_rps + to_rps) * ramp_s / 2 + to_rps * (t - hold_s - ramp_s);
}

RampSource::RampSource(RampShape shape, uint64_t seed) : shape_(shape), rng_(seed) {}

bool RampSource::next(Arrival& out) {
  if (done_) return false;
  cumulative_ += unit_gap_(rng_);
  const double s = cumulative_;
  const double end_of_hold = shape_.from_rps * shape_.hold_s;
  const double end_of_ramp = end_of_hold + (shape_.from_rps + shape_.to_rps) * shape_.ramp_s / 2;
  double t = 0;
  if (s <= end_of_hold) {
    t = s / shape_.from_rps;
  } else if (s <= end_of_ramp) {
    // Solve from * u + slope / 2 * u^2 = c for u in [0, ramp_s], in the form that stays
    // accurate when the slope is tiny or negative.
    const double c = s - end_of_hold;
    const double half_slope = (shape_.to_rps - shape_.from_rps) / (2 * shape_.ramp_s);
    const double disc = std::max(0.0, shape_.from_rps * shape_.from_rps + 4 * half_slope * c);
    const double u = 2 * c / (shape_.from_rps + std::sqrt(disc));
    t = shape_.hold_s + std::min(u, shape_.ramp_s);
  } else if (shape_.to_rps > 0) {
    t = shape_.hold_s + shape_.ramp_s + (s - end_of_ramp) / shape_.to_rps;
  } else {
    done_ = true;  // the rate has fallen to zero for good
    return false;
  }
  out = Arrival{};
  out.time = t;
  return true;
}

std::string RampSource::describe() const {
  std::string out = "ramp(" + number_text(shape_.from_rps) + "/s -> " + number_text(shape_.to_rps) +
                    "/s over " + number_text(shape_.ramp_s) + " s";
  if (shape_.hold_s > 0) out += " after " + number_text(shape_.hold_s) + " s hold";
  return out + ")";
}

}  // namespace tessera
