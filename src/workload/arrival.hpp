#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/time.hpp"

namespace tessera {

// One request as it arrives at the front end. Token counts are carried for LLM
// workloads (0 when the trace has none); slo_s <= 0 means "use the application's SLO".
struct Arrival {
  Time time = 0.0;
  uint32_t input_tokens = 0;
  uint32_t output_tokens = 0;
  double slo_s = 0.0;
  // LLM prompts: the first shared_prefix_tokens of the prompt are those of every request of
  // prefix_group (a shared system prompt; 0: none), for prefix caching.
  uint32_t shared_prefix_tokens = 0;
  uint32_t prefix_group = 0;
};

// A stream of arrivals in non-decreasing time order. Sources are pulled one arrival at a
// time so that synthetic streams of any length use constant memory.
class ArrivalSource {
 public:
  virtual ~ArrivalSource() = default;
  // Writes the next arrival and returns true, or returns false at the end of the stream.
  virtual bool next(Arrival& out) = 0;
  // One line for logs and reports, e.g. "gamma(rate=100/s, cv2=4)".
  virtual std::string describe() const = 0;
};

}  // namespace tessera
