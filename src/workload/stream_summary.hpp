#pragma once

#include <cstdint>

#include "core/time.hpp"
#include "workload/arrival.hpp"

namespace tessera {

// Count and time span of a finite stream.
struct StreamSummary {
  uint64_t count = 0;
  Time first = 0;
  Time last = 0;

  // Arrivals per second, as the inverse of the mean gap: (count - 1) / (last - first).
  // 0 when there are fewer than two arrivals or they all share one time.
  double mean_rate() const;
};

// Reads `source` to its end (so it must be finite) and summarises it.
StreamSummary summarize(ArrivalSource& source);

}  // namespace tessera
