#include "workload/trace_fit.hpp"

#include <cmath>
#include <stdexcept>

namespace tessera {

std::vector<Arrival> fit_trace_to_rate(const std::vector<Arrival>& trace, double rate,
                                       double duration_s, const std::string& what,
                                       std::size_t max_arrivals) {
  if (!(rate > 0.0) || !std::isfinite(rate)) {
    throw std::invalid_argument(what + ": the target rate must be > 0 req/s");
  }
  if (!(duration_s > 0.0) || !std::isfinite(duration_s)) {
    throw std::invalid_argument(what + ": the duration must be > 0 s");
  }
  if (trace.size() < 2) {
    throw std::invalid_argument(what + ": a trace needs at least two arrivals to have a rate");
  }
  const double first = trace.front().time;
  const double span = trace.back().time - first;
  if (!(span > 0.0) || !std::isfinite(span)) {
    throw std::invalid_argument(what + ": the trace's arrivals span no time");
  }
  for (std::size_t i = 1; i < trace.size(); ++i) {
    if (trace[i].time < trace[i - 1].time) {
      throw std::invalid_argument(what + ": arrivals are not in time order (row " +
                                  std::to_string(i + 1) + ")");
    }
  }
  const double expected = std::ceil(rate * duration_s);
  if (expected > static_cast<double>(max_arrivals)) {
    throw std::invalid_argument(what + ": " + std::to_string(rate) + " req/s for " +
                                std::to_string(duration_s) + " s is more than " +
                                std::to_string(max_arrivals) + " arrivals");
  }
  const std::size_t n = trace.size();
  const auto k = static_cast<std::size_t>(expected);
  // The periodic trace: arrival j at (j / n) x period + (trace[j % n] - first).
  const double period = span * static_cast<double>(n) / static_cast<double>(n - 1);
  auto at = [&](std::size_t j) {
    return static_cast<double>(j / n) * period + (trace[j % n].time - first);
  };
  const double scale = duration_s / at(k);
  std::vector<Arrival> out;
  out.reserve(k);
  for (std::size_t j = 0; j < k; ++j) {
    Arrival b = trace[j % n];
    b.time = at(j) * scale;
    if (b.time >= duration_s) break;  // ties with arrival k
    out.push_back(b);
  }
  return out;
}

}  // namespace tessera
