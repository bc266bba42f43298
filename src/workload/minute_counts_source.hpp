#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "workload/arrival.hpp"

namespace tessera {

// How the arrivals of one minute are placed inside it.
enum class WithinMinute {
  kUniform,  // a seeded Poisson process conditioned on the count: sorted uniform times
  kEven,     // evenly spaced, at the middle of n equal slots
};

// Turns per-minute arrival counts into arrivals, compressing (or stretching) time
// shape-preservingly: minute m covers [m * seconds_per_minute, (m + 1) * seconds_per_minute)
// and receives exactly per_minute[m] arrivals, so the rate scales by
// 60 / seconds_per_minute and every minute keeps its count. Streams in O(1) memory per
// minute, however large the counts.
class MinuteCountsSource final : public ArrivalSource {
 public:
  MinuteCountsSource(std::vector<uint64_t> per_minute, double seconds_per_minute,
                     WithinMinute within, uint64_t seed, std::string label);

  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  std::vector<uint64_t> counts_;
  double seconds_per_minute_;
  WithinMinute within_;
  std::mt19937_64 rng_;
  std::string label_;
  std::size_t minute_ = 0;
  uint64_t emitted_ = 0;  // arrivals already placed in the current minute
  double position_ = 0;   // last position in the current minute, as a fraction in [0, 1)
};

}  // namespace tessera
