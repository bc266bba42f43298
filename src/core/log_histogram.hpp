#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace tessera {

// Streaming histogram of positive values with log-spaced buckets (relative error below
// 1 % per bucket): constant memory however many values are recorded, so metrics of a
// billion-request simulation fit in a few kilobytes.
class LogHistogram {
 public:
  // Values are expected in [min_value, max_value]; those outside are clamped.
  explicit LogHistogram(double min_value = 1e-6, double max_value = 1e5,
                        double relative_precision = 0.01)
      : min_(min_value),
        log_min_(std::log(min_value)),
        log_step_(std::log1p(relative_precision)),
        buckets_(static_cast<std::size_t>(std::ceil((std::log(max_value) - log_min_) / log_step_)) +
                 1) {}

  void add(double value) {
    ++count_;
    sum_ += value;
    buckets_[bucket_of(value)]++;
  }

  void merge(const LogHistogram& other) {
    for (std::size_t i = 0; i < buckets_.size() && i < other.buckets_.size(); ++i) {
      buckets_[i] += other.buckets_[i];
    }
    count_ += other.count_;
    sum_ += other.sum_;
  }

  uint64_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }

  // The buckets, for exporting the distribution: bucket i holds values in
  // [bucket_lower(i), bucket_upper(i)); bucket 0 also holds everything below min_value and
  // the last one everything above max_value.
  std::size_t bucket_count() const { return buckets_.size(); }
  uint64_t bucket(std::size_t i) const { return buckets_[i]; }
  double bucket_lower(std::size_t i) const {
    return std::exp(log_min_ + static_cast<double>(i) * log_step_);
  }
  double bucket_upper(std::size_t i) const { return bucket_lower(i + 1); }

  // The q-quantile (q in [0, 1]), reported as the bucket's geometric midpoint.
  double quantile(double q) const {
    if (count_ == 0) return 0.0;
    auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= rank) return std::exp(log_min_ + (static_cast<double>(i) + 0.5) * log_step_);
    }
    return std::exp(log_min_ + static_cast<double>(buckets_.size()) * log_step_);
  }

 private:
  std::size_t bucket_of(double value) const {
    if (!(value > min_)) return 0;
    auto idx = static_cast<std::size_t>((std::log(value) - log_min_) / log_step_);
    return idx < buckets_.size() ? idx : buckets_.size() - 1;
  }

  double min_;
  double log_min_;
  double log_step_;
  std::vector<uint64_t> buckets_;
  uint64_t count_ = 0;
  double sum_ = 0.0;
};

}  // namespace tessera
