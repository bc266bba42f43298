#include "workload/rate_scale.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "workload/number_text.hpp"

namespace tessera {

RateScaled::RateScaled(std::unique_ptr<ArrivalSource> inner, double factor, uint64_t seed)
    : inner_(std::move(inner)), factor_(factor), rng_(seed) {}

bool RateScaled::next(Arrival& out) {
  if (factor_ < 1.0) {
    // Thinning: keep each arrival with probability factor_.
    while (inner_->next(out)) {
      if (unit_(rng_) < factor_) return true;
    }
    return false;
  }
  if (queue_pos_ >= queue_.size() && !refill()) return false;
  out = queue_[queue_pos_++];
  return true;
}

bool RateScaled::refill() {
  if (!started_) {
    have_lookahead_ = inner_->next(lookahead_);
    started_ = true;
  }
  if (!have_lookahead_) return false;
  const Arrival original = lookahead_;
  have_lookahead_ = inner_->next(lookahead_);
  const double gap = have_lookahead_ ? lookahead_.time - original.time : 0.0;

  const double whole = std::floor(factor_);
  uint64_t copies = static_cast<uint64_t>(whole);
  if (unit_(rng_) < factor_ - whole) ++copies;

  queue_.assign(copies, original);
  queue_pos_ = 0;
  for (std::size_t i = 1; i < queue_.size(); ++i) {
    queue_[i].time = original.time + unit_(rng_) * gap;
  }
  std::sort(queue_.begin() + 1, queue_.end(),
            [](const Arrival& a, const Arrival& b) { return a.time < b.time; });
  return true;
}

std::string RateScaled::describe() const {
  return inner_->describe() + " | rate_scale(" + number_text(factor_) + ")";
}

}  // namespace tessera
