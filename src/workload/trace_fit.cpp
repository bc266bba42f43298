#include "workload/trace_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera {

namespace {

// Throws unless the inputs are usable; returns the trace's span (last - first).
double check_inputs(const std::vector<Arrival>& trace, double rate, double duration_s,
                    const std::string& what, std::size_t max_arrivals) {
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
  return span;
}

}  // namespace

std::vector<Arrival> fit_trace_to_rate(const std::vector<Arrival>& trace, double rate,
                                       double duration_s, const std::string& what,
                                       std::size_t max_arrivals) {
  const double span = check_inputs(trace, rate, duration_s, what, max_arrivals);
  const double first = trace.front().time;
  const double expected = std::ceil(rate * duration_s);
  const std::size_t n = trace.size();
  const auto k = static_cast<std::size_t>(expected);
  // The periodic trace: arrival j at (j / n) x period + (trace[j % n] - first).
  const double period = span * static_cast<double>(n) / static_cast<double>(n - 1);
  auto at = [&](std::size_t j) {
    return static_cast<double>(j / n) * period + (trace[j % n].time - first);
  };
  const double end = at(k);
  if (!(end > 0.0)) {
    throw std::invalid_argument(what + ": the trace's first " + std::to_string(k + 1) +
                                " arrivals share one time");
  }
  const double scale = duration_s / end;
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

std::vector<Arrival> fold_trace_to_rate(const std::vector<Arrival>& trace, double rate,
                                        double duration_s, const std::string& what,
                                        std::size_t max_arrivals) {
  const double span = check_inputs(trace, rate, duration_s, what, max_arrivals);
  const double first = trace.front().time;
  const double trace_rate = static_cast<double>(trace.size() - 1) / span;
  const double fold = span / (rate / trace_rate);  // the period: n arrivals every `fold` s
  std::vector<Arrival> period;
  period.reserve(trace.size());
  for (const Arrival& a : trace) {
    Arrival b = a;
    b.time = std::fmod(a.time - first, fold);
    period.push_back(b);
  }
  std::stable_sort(period.begin(), period.end(),
                   [](const Arrival& x, const Arrival& y) { return x.time < y.time; });
  std::vector<Arrival> out;
  out.reserve(static_cast<std::size_t>(std::ceil(rate * duration_s)) + 1);
  for (std::size_t rep = 0;; ++rep) {
    const double offset = static_cast<double>(rep) * fold;
    if (offset >= duration_s) break;
    for (const Arrival& a : period) {
      Arrival b = a;
      b.time = offset + a.time;
      if (b.time >= duration_s) return out;
      out.push_back(b);
    }
  }
  return out;
}

}  // namespace tessera
