#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/time.hpp"

namespace tessera {

// Where a latency number came from: measured by a profiler, or derived by a model
// (e.g. scaled from a whole-GPU profile to a GPU slice). Reports say which.
enum class ProfileOrigin { kMeasured, kDerived };

// "measured" or "derived", the spelling used in profile files and reports.
std::string_view to_string(ProfileOrigin origin);

struct ProfilePoint {
  int batch = 1;
  double latency_ms = 0.0;
};

// Latency of one (model variant, hardware segment) pair as a function of batch size.
struct ProfileCurve {
  std::string variant;
  std::string segment;
  ProfileOrigin origin = ProfileOrigin::kMeasured;
  std::string source;                // file or importer it came from, for reports
  std::vector<ProfilePoint> points;  // sorted by batch, batch sizes unique
};

// Latency by (variant, segment, batch size). Batch sizes between measured points are
// interpolated linearly; beyond the largest measured batch the last two points are
// extrapolated linearly (never below the last measured latency).
//
// The edges, precisely:
//   - below the smallest measured batch the smallest batch's latency is used (a batch
//     never gets faster by shrinking it past what was measured);
//   - a curve with a single point scales in proportion to the batch beyond it
//     (latency * batch / measured_batch: no batching gain is assumed);
//   - batch < 1 is an error (std::invalid_argument);
//   - a missing pair is std::out_of_range "no profile for variant 'X' on segment 'Y'".
class ProfileTable {
 public:
  // Adds or replaces one point. Throws std::invalid_argument when batch < 1 or the
  // latency is not a finite number > 0. A curve turns kDerived as soon as one of its
  // points is derived; its source is the first non-empty source given.
  void add(const std::string& variant, const std::string& segment, int batch, double latency_ms,
           ProfileOrigin origin = ProfileOrigin::kMeasured, const std::string& source = "");
  // Adds or replaces a whole curve; its points are validated and sorted, and a batch size
  // given twice is an error (std::invalid_argument).
  void set_curve(ProfileCurve curve);
  void merge(const ProfileTable& other);  // other's curves replace ours on conflict

  bool has(const std::string& variant, const std::string& segment) const;
  const ProfileCurve& curve(const std::string& variant, const std::string& segment) const;

  // Latency in seconds. Throws std::out_of_range naming the pair if it has no profile.
  Time latency(const std::string& variant, const std::string& segment, int batch) const;
  double latency_ms(const std::string& variant, const std::string& segment, int batch) const;
  // Requests per second of one instance running back-to-back batches of `batch`.
  double throughput_rps(const std::string& variant, const std::string& segment, int batch) const;

  std::vector<std::string> segments_of(const std::string& variant) const;
  std::vector<std::string> variants() const;  // sorted, unique
  const std::map<std::pair<std::string, std::string>, ProfileCurve>& curves() const {
    return curves_;
  }
  bool empty() const { return curves_.empty(); }

 private:
  std::map<std::pair<std::string, std::string>, ProfileCurve> curves_;
};

// The latency of `points` (sorted, unique batches, non-empty) at `batch` >= 1, with the
// interpolation and extrapolation rules above.
double interpolate_latency_ms(const std::vector<ProfilePoint>& points, int batch);

}  // namespace tessera
