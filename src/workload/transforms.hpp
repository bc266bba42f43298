#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "workload/arrival.hpp"

namespace tessera {

// Decorators that reshape any ArrivalSource. Each owns the source it wraps and can be
// wrapped in turn. (RateScaled, which needs randomness, lives in rate_scale.hpp.)

// Multiplies every time by `factor` (> 0): factor < 1 compresses the stream (a higher
// rate), factor > 1 stretches it.
class TimeScaled final : public ArrivalSource {
 public:
  TimeScaled(std::unique_ptr<ArrivalSource> inner, double factor);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  std::unique_ptr<ArrivalSource> inner_;
  double factor_;
};

// Ends a stream at its first arrival at or after duration_s, or after `limit` arrivals,
// whichever comes first (either may be absent). This is how an unbounded synthetic source
// becomes finite.
class Bounded final : public ArrivalSource {
 public:
  Bounded(std::unique_ptr<ArrivalSource> inner, std::optional<double> duration_s,
          std::optional<uint64_t> limit);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  std::unique_ptr<ArrivalSource> inner_;
  std::optional<double> duration_;
  std::optional<uint64_t> limit_;
  uint64_t count_ = 0;
  bool done_ = false;
};

// Keeps the arrivals in [start_s, start_s + duration_s) (no end when duration_s is
// absent) and shifts them so that start_s becomes time 0. Stops reading the inner source
// at the end of the window.
class Windowed final : public ArrivalSource {
 public:
  Windowed(std::unique_ptr<ArrivalSource> inner, double start_s, std::optional<double> duration_s);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  std::unique_ptr<ArrivalSource> inner_;
  double start_;
  std::optional<double> duration_;
  bool done_ = false;
};

// Fields to force on every arrival; absent ones are left as the source made them.
struct ArrivalOverrides {
  std::optional<uint32_t> input_tokens;
  std::optional<uint32_t> output_tokens;
  std::optional<double> slo_s;

  bool empty() const { return !input_tokens && !output_tokens && !slo_s; }
};

// LLM prompts with a shared prefix (a system prompt): the first `tokens` of each prompt
// (at most its length) are those of its group; groups take turns, arrival by arrival.
class SharedPrefix final : public ArrivalSource {
 public:
  SharedPrefix(std::unique_ptr<ArrivalSource> inner, uint32_t tokens, uint32_t groups);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  std::unique_ptr<ArrivalSource> inner_;
  uint32_t tokens_;
  uint32_t groups_;
  uint64_t count_ = 0;
};

class Overridden final : public ArrivalSource {
 public:
  Overridden(std::unique_ptr<ArrivalSource> inner, ArrivalOverrides overrides);
  bool next(Arrival& out) override;
  std::string describe() const override;

 private:
  std::unique_ptr<ArrivalSource> inner_;
  ArrivalOverrides overrides_;
};

}  // namespace tessera
