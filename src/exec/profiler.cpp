#include "exec/profiler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

namespace tessera {
namespace {

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto idx = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(idx, v.size() - 1)];
}

}  // namespace

ModelProfile profile_model(Model& model, const ModelSpec& spec, const ProfileOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int largest = *std::max_element(options.batches.begin(), options.batches.end());
  std::vector<FloatTensor> inputs(static_cast<std::size_t>(largest));
  for (FloatTensor& t : inputs) {
    t.shape = model.info().input_shape;
    t.data.resize(static_cast<std::size_t>(shape_numel(t.shape)));
    for (float& v : t.data) v = normal(rng);
  }
  ModelProfile profile;
  double fanout_sum = 0.0;
  std::size_t fanout_n = 0;
  const auto batch_of = [&](int batch) {
    std::vector<const FloatTensor*> ptrs;
    for (int i = 0; i < batch; ++i) ptrs.push_back(&inputs[static_cast<std::size_t>(i)]);
    return ptrs;
  };
  for (int batch : options.batches) model.run(batch_of(batch));
  for (int batch : options.batches) {
    const std::vector<const FloatTensor*> ptrs = batch_of(batch);
    for (int i = 0; i < options.warmup; ++i) model.run(ptrs);
    std::vector<double> ms;
    for (int i = 0; i < options.reps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const std::vector<FloatTensor> out = model.run(ptrs);
      const auto end = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
      if (spec.fanout && i == 0) {
        for (const FloatTensor& o : out) {
          fanout_sum += apply_fanout_rule(*spec.fanout, o.data);
          ++fanout_n;
        }
      }
    }
    profile.timings.push_back(BatchTiming{batch, quantile(ms, 0.5), quantile(ms, 0.9)});
  }
  if (spec.fanout && fanout_n > 0) profile.fanout_mean = fanout_sum / static_cast<double>(fanout_n);
  return profile;
}

void add_profile(ProfileTable& table, const ModelSpec& spec, const std::string& segment,
                 const ModelProfile& profile, const std::string& source) {
  ProfileCurve curve;
  curve.variant = spec.variant;
  curve.segment = segment;
  curve.origin = ProfileOrigin::kMeasured;
  curve.source = source;
  for (const BatchTiming& t : profile.timings) {
    curve.points.push_back(ProfilePoint{t.batch, std::max(t.median_ms, 1e-3)});
  }
  std::sort(curve.points.begin(), curve.points.end(),
            [](const ProfilePoint& a, const ProfilePoint& b) { return a.batch < b.batch; });
  table.set_curve(std::move(curve));
}

}  // namespace tessera
