#pragma once

#include <chrono>

#include "core/time.hpp"

namespace tessera {

// The server's clock: seconds of std::chrono::steady_clock since the clock was made.
class SteadyClock final : public Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  SteadyClock() : start_(std::chrono::steady_clock::now()) {}
  Time now() const override { return seconds_at(std::chrono::steady_clock::now()); }
  Time seconds_at(TimePoint t) const { return std::chrono::duration<double>(t - start_).count(); }
  TimePoint time_point(Time t) const {
    return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(t));
  }

 private:
  TimePoint start_;
};

}  // namespace tessera
