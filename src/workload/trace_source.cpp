#include "workload/trace_source.hpp"

#include <utility>

#include "workload/number_text.hpp"

namespace tessera {

TraceSource::TraceSource(std::vector<Arrival> arrivals, std::string label)
    : arrivals_(std::move(arrivals)), label_(std::move(label)) {}

bool TraceSource::next(Arrival& out) {
  if (pos_ >= arrivals_.size()) return false;
  out = arrivals_[pos_++];
  return true;
}

std::string TraceSource::describe() const {
  std::string out = "trace(" + label_ + ", " + std::to_string(arrivals_.size()) + " arrivals";
  if (!arrivals_.empty()) {
    out += ", " + number_text(arrivals_.back().time - arrivals_.front().time) + " s";
  }
  return out + ")";
}

}  // namespace tessera
