#include "profile/profile_table.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

namespace tessera {
namespace {

std::string pair_name(const std::string& variant, const std::string& segment) {
  return "variant '" + variant + "' on segment '" + segment + "'";
}

void check_point(const std::string& variant, const std::string& segment, int batch,
                 double latency_ms) {
  if (batch < 1) {
    throw std::invalid_argument("profile for " + pair_name(variant, segment) +
                                ": batch size must be >= 1, got " + std::to_string(batch));
  }
  if (!std::isfinite(latency_ms) || latency_ms <= 0.0) {
    throw std::invalid_argument("profile for " + pair_name(variant, segment) + " at batch " +
                                std::to_string(batch) + ": latency must be a finite number > 0 ms");
  }
}

bool by_batch(const ProfilePoint& a, const ProfilePoint& b) { return a.batch < b.batch; }

}  // namespace

std::string_view to_string(ProfileOrigin origin) {
  return origin == ProfileOrigin::kDerived ? "derived" : "measured";
}

double interpolate_latency_ms(const std::vector<ProfilePoint>& points, int batch) {
  if (batch < 1) {
    throw std::invalid_argument("batch size must be >= 1, got " + std::to_string(batch));
  }
  if (points.empty()) throw std::invalid_argument("profile curve has no points");
  const ProfilePoint& first = points.front();
  const ProfilePoint& last = points.back();
  if (batch <= first.batch) return first.latency_ms;
  if (batch > last.batch) {
    if (points.size() == 1) {
      return last.latency_ms * static_cast<double>(batch) / static_cast<double>(last.batch);
    }
    const ProfilePoint& before = points[points.size() - 2];
    double slope =
        (last.latency_ms - before.latency_ms) / static_cast<double>(last.batch - before.batch);
    double value = last.latency_ms + slope * static_cast<double>(batch - last.batch);
    return std::max(value, last.latency_ms);
  }
  auto hi = std::lower_bound(points.begin(), points.end(), ProfilePoint{batch, 0.0}, by_batch);
  if (hi->batch == batch) return hi->latency_ms;
  auto lo = std::prev(hi);
  double t = static_cast<double>(batch - lo->batch) / static_cast<double>(hi->batch - lo->batch);
  return lo->latency_ms + t * (hi->latency_ms - lo->latency_ms);
}

void ProfileTable::add(const std::string& variant, const std::string& segment, int batch,
                       double latency_ms, ProfileOrigin origin, const std::string& source) {
  check_point(variant, segment, batch, latency_ms);
  ProfileCurve& c = curves_[{variant, segment}];
  if (c.points.empty()) {
    c.variant = variant;
    c.segment = segment;
    c.origin = origin;
  } else if (origin == ProfileOrigin::kDerived) {
    c.origin = ProfileOrigin::kDerived;
  }
  if (c.source.empty()) c.source = source;
  auto it = std::lower_bound(c.points.begin(), c.points.end(), ProfilePoint{batch, 0.0}, by_batch);
  if (it != c.points.end() && it->batch == batch) {
    it->latency_ms = latency_ms;
  } else {
    c.points.insert(it, ProfilePoint{batch, latency_ms});
  }
}

void ProfileTable::set_curve(ProfileCurve curve) {
  if (curve.points.empty()) {
    throw std::invalid_argument("profile for " + pair_name(curve.variant, curve.segment) +
                                " has no points");
  }
  std::set<int> seen;
  for (const ProfilePoint& p : curve.points) {
    check_point(curve.variant, curve.segment, p.batch, p.latency_ms);
    if (!seen.insert(p.batch).second) {
      throw std::invalid_argument("profile for " + pair_name(curve.variant, curve.segment) +
                                  ": batch size " + std::to_string(p.batch) + " given twice");
    }
  }
  std::sort(curve.points.begin(), curve.points.end(), by_batch);
  auto key = std::make_pair(curve.variant, curve.segment);
  curves_[key] = std::move(curve);
}

void ProfileTable::merge(const ProfileTable& other) {
  for (const auto& [key, c] : other.curves_) curves_[key] = c;
}

bool ProfileTable::has(const std::string& variant, const std::string& segment) const {
  return curves_.count({variant, segment}) > 0;
}

const ProfileCurve& ProfileTable::curve(const std::string& variant,
                                        const std::string& segment) const {
  auto it = curves_.find({variant, segment});
  if (it == curves_.end()) throw std::out_of_range("no profile for " + pair_name(variant, segment));
  return it->second;
}

double ProfileTable::latency_ms(const std::string& variant, const std::string& segment,
                                int batch) const {
  if (batch < 1) {
    throw std::invalid_argument("latency of " + pair_name(variant, segment) +
                                ": batch size must be >= 1, got " + std::to_string(batch));
  }
  return interpolate_latency_ms(curve(variant, segment).points, batch);
}

Time ProfileTable::latency(const std::string& variant, const std::string& segment,
                           int batch) const {
  return from_ms(latency_ms(variant, segment, batch));
}

double ProfileTable::throughput_rps(const std::string& variant, const std::string& segment,
                                    int batch) const {
  return static_cast<double>(batch) / latency(variant, segment, batch);
}

std::vector<std::string> ProfileTable::segments_of(const std::string& variant) const {
  std::vector<std::string> out;
  for (auto it = curves_.lower_bound({variant, ""});
       it != curves_.end() && it->first.first == variant; ++it) {
    out.push_back(it->first.second);
  }
  return out;
}

std::vector<std::string> ProfileTable::variants() const {
  std::vector<std::string> out;
  for (const auto& [key, c] : curves_) {
    if (out.empty() || out.back() != key.first) out.push_back(key.first);
  }
  return out;
}

}  // namespace tessera
