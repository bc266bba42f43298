#pragma once

// Time in tessera is a plain double of seconds. The simulator's clock is virtual and the
// server's is real; policies only ever see the value the driver hands them.

namespace tessera {

using Time = double;  // seconds

inline constexpr Time kMillisecond = 1e-3;
inline constexpr Time kMicrosecond = 1e-6;

inline constexpr double to_ms(Time t) { return t * 1e3; }
inline constexpr Time from_ms(double ms) { return ms * 1e-3; }

// The one source of "now" for an engine. The simulator advances it by events, the
// server reads a steady clock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual Time now() const = 0;
};

// A clock that only moves when told to: the simulator's, and the tests'.
class ManualClock final : public Clock {
 public:
  Time now() const override { return now_; }
  void set(Time t) { now_ = t; }

 private:
  Time now_ = 0.0;
};

}  // namespace tessera
