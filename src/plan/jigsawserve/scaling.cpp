#include "plan/jigsawserve/scaling.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "profile/ppipe_import.hpp"

namespace tessera::plan {

namespace {

// Per-item time at the best measured batch (ms per request at peak throughput).
double peak_item_ms(const ProfileCurve& curve) {
  double best = curve.points.front().latency_ms / curve.points.front().batch;
  for (const auto& p : curve.points) best = std::min(best, p.latency_ms / p.batch);
  return best;
}

std::filesystem::path block_timing_dir(const std::filesystem::path& dir) {
  const auto nested = dir / "models" / "block-timing-tf32";
  return std::filesystem::is_directory(nested) ? nested : dir;
}

}  // namespace

MpsFit fit_mps_exponent(const std::filesystem::path& ppipe_dir, int max_batch) {
  const auto dir = block_timing_dir(ppipe_dir);
  double sxy = 0.0, sxx = 0.0;
  std::vector<std::pair<double, double>> pts;  // (log m, log ratio)
  for (const auto& model : list_ppipe_models(dir)) {
    std::map<std::string, std::map<int, ProfileCurve>> by_gpu;  // gpu -> share -> curve
    for (const auto& p : load_ppipe_model(dir, model)) {
      by_gpu[p.gpu][p.mps_share] = ppipe_model_curve(p);
    }
    for (const auto& [gpu, shares] : by_gpu) {
      const auto base = shares.find(1);
      if (base == shares.end()) continue;
      for (const auto& [m, curve] : shares) {
        if (m < 2) continue;
        for (const auto& pt : curve.points) {
          if (max_batch > 0 && pt.batch > max_batch) continue;
          const double l1 = interpolate_latency_ms(base->second.points, pt.batch);
          const double x = std::log(static_cast<double>(m));
          const double y = std::log(pt.latency_ms / l1);
          pts.emplace_back(x, y);
          sxy += x * y;
          sxx += x * x;
        }
      }
    }
  }
  if (pts.empty() || sxx <= 0.0) {
    throw SpecError(ppipe_dir.string(), "", "no PPipe MPS share >= 2 profiles to fit on");
  }
  MpsFit fit;
  fit.exponent = sxy / sxx;
  double sse = 0.0;
  for (const auto& [x, y] : pts) sse += (y - fit.exponent * x) * (y - fit.exponent * x);
  fit.rms_log_error = std::sqrt(sse / static_cast<double>(pts.size()));
  fit.points = static_cast<int>(pts.size());
  std::ostringstream s;
  s << "fitted on " << fit.points << " PPipe MPS points in " << dir.string();
  fit.source = s.str();
  return fit;
}

double derived_latency_ms(const ProfileCurve& whole_gpu, int gpu_compute, int compute, int mps,
                          int batch, const ScalingModel& model) {
  const double t = interpolate_latency_ms(whole_gpu.points, batch);
  const double shrink = static_cast<double>(gpu_compute) / compute;  // C/g >= 1
  const double tau = peak_item_ms(whole_gpu);
  double l = t * std::pow(shrink, model.mig_latency_exponent);
  if (model.roofline) l = std::max(l, batch * tau * shrink);
  double lm = l * std::pow(static_cast<double>(mps), model.mps_exponent);
  if (model.roofline) lm = std::max(lm, mps * batch * tau * shrink);
  return lm;
}

ProfileTable derive_segment_profiles(const ProfileTable& input,
                                     const std::string& whole_gpu_segment,
                                     const SegmentCatalogue& catalogue, const ScalingModel& model,
                                     const std::vector<int>& batches,
                                     const std::vector<std::string>& variants) {
  ProfileTable out;
  const int whole = catalogue.whole_gpu_segment();
  for (const auto& v : variants) {
    const bool has_whole = input.has(v, whole_gpu_segment);
    for (int s = 0; s < static_cast<int>(catalogue.segments.size()); ++s) {
      const auto& seg = catalogue.segments[static_cast<size_t>(s)];
      if (input.has(v, seg.name)) {
        out.set_curve(input.curve(v, seg.name));
        continue;
      }
      if (!has_whole) continue;
      const auto& base = input.curve(v, whole_gpu_segment);
      if (s == whole) {
        ProfileCurve c = base;
        c.segment = seg.name;
        c.source = base.source + " (as " + seg.name + ")";
        out.set_curve(std::move(c));
        continue;
      }
      const auto& mig = catalogue.mig[static_cast<size_t>(seg.mig)];
      ProfileCurve c;
      c.variant = v;
      c.segment = seg.name;
      c.origin = ProfileOrigin::kDerived;
      std::ostringstream src;
      src << "derived from " << whole_gpu_segment << " (gamma " << model.mig_latency_exponent
          << ", delta " << model.mps_exponent << (model.roofline ? ", roofline" : "") << ")";
      c.source = src.str();
      for (int b : batches) {
        c.points.push_back(ProfilePoint{
            b, derived_latency_ms(base, catalogue.gpu_compute, mig.compute, seg.mps, b, model)});
      }
      out.set_curve(std::move(c));
    }
  }
  return out;
}

}  // namespace tessera::plan
