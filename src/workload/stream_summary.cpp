#include "workload/stream_summary.hpp"

namespace tessera {

double StreamSummary::mean_rate() const {
  if (count < 2 || !(last > first)) return 0.0;
  return static_cast<double>(count - 1) / (last - first);
}

StreamSummary summarize(ArrivalSource& source) {
  StreamSummary out;
  Arrival a;
  while (source.next(a)) {
    if (out.count == 0) out.first = a.time;
    out.last = a.time;
    ++out.count;
  }
  return out;
}

}  // namespace tessera
