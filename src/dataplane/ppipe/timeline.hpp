#pragma once

// Timeline: the reservation table of one resource of PPipe's data plane (a vGPU, or one
// direction of a server's NIC; PPipe §5.4, Algorithm 2): the intervals [start, end) for
// which the resource is reserved, each under the id of the batch that holds it. Intervals
// may overlap only after feedback correction recorded an overrun (a step that ran longer
// than planned); earliest_fit treats the union as busy.
//
// Feedback: correct() moves an interval to what was actually used; release() removes it
// once it lies in the past (or was given up), so a table holds only current and future
// reservations and stays short.
//
// A summary is kept with every change (the latest end, the earliest start, whether the
// intervals' union is one run), so earliest_fit answers without a scan when the union is
// one run [a, F): t if [t, t + len) lies before a or t >= F, else F (what the scan gives:
// the probe's common case). A union with gaps is scanned.
//
// A plain value owned by its ReservationBook; not thread-safe.

#include <cstdint>
#include <limits>
#include <vector>

#include "core/time.hpp"

namespace tessera::reservation {

using ReservationId = uint64_t;

struct Interval {
  Time start = 0.0;
  Time end = 0.0;
  ReservationId id = 0;
};

class Timeline {
 public:
  // The earliest s >= t such that [s, s + len) overlaps no reserved interval. Inline: the
  // probe's common cases (past the latest end; one run) answer from the summary.
  Time earliest_fit(Time t, Time len) const {
    if (t >= free_from_) return t;  // the scan would skip every interval
    // One run [first_start_, free_from_): the scan stops at once (t) or runs to its end.
    if (one_run_) return first_start_ >= t + len ? t : free_from_;
    return scan_fit(t, len);
  }
  // Reserves [start, start + len) for `id`. The caller found it free (earliest_fit).
  void reserve(ReservationId id, Time start, Time len);
  // Feedback: `id`'s interval becomes [start, end). Returns false if `id` holds none.
  bool correct(ReservationId id, Time start, Time end);
  // Removes `id`'s interval; false if it holds none.
  bool release(ReservationId id);
  // Whether any two intervals overlap by more than `tolerance` (for tests and checks).
  bool overbooked(Time tolerance = 1e-12) const;

  const std::vector<Interval>& intervals() const { return intervals_; }  // sorted by start
  bool empty() const { return intervals_.empty(); }
  // The resource is free from here on: the latest end of an interval (-infinity if none).
  Time free_from() const { return free_from_; }
  // The earliest start of an interval (+infinity if none), whether the intervals' union
  // is one run [first_start(), free_from()) (true when empty), and the longest gap in the
  // union (0 for one run): no slot longer than that fits between first_start() and
  // free_from().
  Time first_start() const { return first_start_; }
  bool one_run() const { return one_run_; }
  Time max_gap() const { return max_gap_; }

 private:
  Time scan_fit(Time t, Time len) const;  // earliest_fit over a union with gaps
  void insert(const Interval& iv);
  void summarize();
  std::vector<Interval> intervals_;
  Time free_from_ = -std::numeric_limits<Time>::infinity();
  Time first_start_ = std::numeric_limits<Time>::infinity();
  bool one_run_ = true;  // the union of the intervals has no gap
  Time max_gap_ = 0.0;
};

// The earliest s >= t at which both timelines are free for `len` (a transfer needs the
// sender's uplink and the receiver's downlink at once).
Time earliest_common_fit(const Timeline& a, const Timeline& b, Time t, Time len);

}  // namespace tessera::reservation
