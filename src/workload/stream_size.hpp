#pragma once

// An estimate of how much an arrival stream holds, computed from its spec without reading
// it, so that validation can refuse a workload whose size would make a run hang or exhaust
// memory (docs/reliability-specs.md#limits): the expected number of arrivals, the time of
// the last one and the mean rate. Estimates are upper-leaning (a trace's rate is unknown,
// so a duration never shortens its count) and infinite for streams that never end.

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

namespace tessera {

struct StreamSize {
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  double count = kInf;   // expected arrivals
  double span_s = kInf;  // expected time of the last arrival
  double rate = kInf;    // mean arrivals per second (an upper estimate)
  // Expected time by which `n` arrivals have come.
  std::function<double(double)> time_for = [](double) { return kInf; };

  // A stream at a constant mean rate that never ends.
  static StreamSize steady(double rate_rps) {
    StreamSize s;
    s.rate = rate_rps;
    s.time_for = [rate_rps](double n) { return n / rate_rps; };
    return s;
  }
  // A stream that is fully known: `count` arrivals, the last at `span_s`.
  static StreamSize known(double count, double span_s, double rate = kInf) {
    StreamSize s;
    s.count = count;
    s.span_s = span_s;
    s.rate = rate;
    s.time_for = [span_s](double) { return span_s; };
    return s;
  }

  // Ends at `duration` seconds and/or after `limit` arrivals.
  StreamSize bounded(std::optional<double> duration, std::optional<double> limit) const {
    StreamSize s = *this;
    if (duration) {
      s.count = std::min(s.count, rate * *duration);
      s.span_s = std::min(s.span_s, *duration);
    }
    if (limit && *limit < s.count) {
      s.count = *limit;
      s.span_s = std::min(s.span_s, time_for(*limit));
    }
    return s;
  }
  // Every time multiplied by `factor`.
  StreamSize time_scaled(double factor) const {
    StreamSize s = *this;
    s.span_s = span_s * factor;
    s.rate = rate / factor;
    s.time_for = [inner = time_for, factor](double n) { return inner(n) * factor; };
    return s;
  }
  // About `r` arrivals for each one, over the same time span.
  StreamSize rate_scaled(double r) const {
    StreamSize s = *this;
    s.count = count * r;
    s.rate = rate * r;
    s.time_for = [inner = time_for, r](double n) { return inner(n / r); };
    return s;
  }
  // The superposition of two streams.
  StreamSize plus(const StreamSize& other) const {
    StreamSize s;
    s.count = count + other.count;
    s.rate = rate + other.rate;
    s.span_s = std::max(span_s, other.span_s);
    s.time_for = [a = time_for, b = other.time_for](double n) { return std::min(a(n), b(n)); };
    return s;
  }
};

}  // namespace tessera
