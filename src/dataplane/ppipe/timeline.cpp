#include "dataplane/ppipe/timeline.hpp"

#include <algorithm>

namespace tessera::reservation {

Time Timeline::scan_fit(Time t, Time len) const {
  Time s = t;
  for (const Interval& iv : intervals_) {
    if (iv.end <= s) continue;
    if (iv.start >= s + len) break;  // sorted by start: every later interval starts later
    s = iv.end;
  }
  return s;
}

void Timeline::insert(const Interval& iv) {
  if (intervals_.empty() || iv.start >= intervals_.back().start) {
    // After every start (the common case): the prefix's summary stands and the new
    // interval extends it exactly as summarize()'s loop would.
    if (!intervals_.empty() && iv.start > free_from_) {
      one_run_ = false;
      max_gap_ = std::max(max_gap_, iv.start - free_from_);
    }
    if (intervals_.empty()) first_start_ = iv.start;
    free_from_ = std::max(free_from_, iv.end);
    intervals_.push_back(iv);
    return;
  }
  auto at = std::upper_bound(intervals_.begin(), intervals_.end(), iv.start,
                             [](Time s, const Interval& x) { return s < x.start; });
  intervals_.insert(at, iv);
  summarize();
}

void Timeline::summarize() {
  free_from_ = -std::numeric_limits<Time>::infinity();
  first_start_ =
      intervals_.empty() ? std::numeric_limits<Time>::infinity() : intervals_.front().start;
  one_run_ = true;
  max_gap_ = 0.0;
  for (const Interval& iv : intervals_) {
    // Sorted by start: a start past every earlier end opens a gap.
    if (iv.start > free_from_ && &iv != &intervals_.front()) {
      one_run_ = false;
      max_gap_ = std::max(max_gap_, iv.start - free_from_);
    }
    free_from_ = std::max(free_from_, iv.end);
  }
}

void Timeline::reserve(ReservationId id, Time start, Time len) {
  insert(Interval{start, start + len, id});
}

bool Timeline::correct(ReservationId id, Time start, Time end) {
  auto it = std::find_if(intervals_.begin(), intervals_.end(),
                         [id](const Interval& x) { return x.id == id; });
  if (it == intervals_.end()) return false;
  const Interval iv{start, end, id};
  // Move the interval to its place by start (the order release() + insert() give: after
  // every interval with the same start), then summarize once.
  auto to = std::upper_bound(intervals_.begin(), intervals_.end(), start,
                             [](Time s, const Interval& x) { return s < x.start; });
  if (to <= it) {
    std::move_backward(to, it, it + 1);
    *to = iv;
  } else {
    std::move(it + 1, to, it);
    *(to - 1) = iv;
  }
  summarize();
  return true;
}

bool Timeline::release(ReservationId id) {
  auto it = std::find_if(intervals_.begin(), intervals_.end(),
                         [id](const Interval& x) { return x.id == id; });
  if (it == intervals_.end()) return false;
  if (it + 1 == intervals_.end() && it != intervals_.begin() && it->end < free_from_ &&
      it->start <= free_from_) {
    // The last by start, ending before some earlier interval: the prefix's summary stands.
    intervals_.pop_back();
    return true;
  }
  intervals_.erase(it);
  summarize();
  return true;
}

bool Timeline::overbooked(Time tolerance) const {
  Time reach = -1e300;
  for (const Interval& iv : intervals_) {
    if (iv.start < reach - tolerance) return true;
    reach = std::max(reach, iv.end);
  }
  return false;
}

Time earliest_common_fit(const Timeline& a, const Timeline& b, Time t, Time len) {
  Time s = t;
  for (;;) {
    const Time sa = a.earliest_fit(s, len);
    const Time sb = b.earliest_fit(sa, len);
    if (sb == sa) return sa;
    s = sb;
  }
}

}  // namespace tessera::reservation
