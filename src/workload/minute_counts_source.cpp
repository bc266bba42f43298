#include "workload/minute_counts_source.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "workload/number_text.hpp"

namespace tessera {

MinuteCountsSource::MinuteCountsSource(std::vector<uint64_t> per_minute, double seconds_per_minute,
                                       WithinMinute within, uint64_t seed, std::string label)
    : counts_(std::move(per_minute)),
      seconds_per_minute_(seconds_per_minute),
      within_(within),
      rng_(seed),
      label_(std::move(label)) {}

bool MinuteCountsSource::next(Arrival& out) {
  while (minute_ < counts_.size() && emitted_ >= counts_[minute_]) {
    ++minute_;
    emitted_ = 0;
    position_ = 0;
  }
  if (minute_ >= counts_.size()) return false;
  const uint64_t count = counts_[minute_];
  if (within_ == WithinMinute::kEven) {
    position_ = (static_cast<double>(emitted_) + 0.5) / static_cast<double>(count);
  } else {
    // The smallest of the k uniforms still to place on [position_, 1) is
    // position_ + (1 - position_) * (1 - V^(1/k)) with V uniform on (0, 1]; drawing them in
    // turn yields the sorted uniform sample without storing it.
    const double remaining = static_cast<double>(count - emitted_);
    const double v = 1.0 - std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    const double step = -std::expm1(std::log(v) / remaining);
    position_ = std::min(position_ + (1.0 - position_) * step, std::nextafter(1.0, 0.0));
  }
  ++emitted_;
  const double start = static_cast<double>(minute_) * seconds_per_minute_;
  const double end = static_cast<double>(minute_ + 1) * seconds_per_minute_;
  out = Arrival{};
  out.time = std::min(start + position_ * seconds_per_minute_, std::nextafter(end, start));
  return true;
}

std::string MinuteCountsSource::describe() const {
  const uint64_t total = std::accumulate(counts_.begin(), counts_.end(), uint64_t{0});
  return "minute-counts(" + label_ + ", " + std::to_string(counts_.size()) + " minutes, " +
         std::to_string(total) + " arrivals, " + number_text(seconds_per_minute_) + " s/minute, " +
         (within_ == WithinMinute::kEven ? "even" : "uniform") + ")";
}

}  // namespace tessera
