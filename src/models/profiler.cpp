#include "models/profiler.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include "models/model_factory.hpp"

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
  std::atomic<int> in_run{0};
  std::atomic<int> max_overlap{0};
  const auto timed_run = [&](const std::vector<const FloatTensor*>& ptrs, double& ms) {
    const int now = in_run.fetch_add(1) + 1;
    int seen = max_overlap.load();
    while (now > seen && !max_overlap.compare_exchange_weak(seen, now)) {
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<FloatTensor> out = model.run(ptrs);
    const auto end = std::chrono::steady_clock::now();
    in_run.fetch_sub(1);
    ms = std::chrono::duration<double, std::milli>(end - start).count();
    return out;
  };
  const int n = std::max(1, options.concurrent);
  for (int batch : options.batches) {
    const std::vector<const FloatTensor*> ptrs = batch_of(batch);
    std::vector<std::vector<double>> ms(static_cast<std::size_t>(n));
    std::vector<FloatTensor> first_out;
    // Instance i: warm-up, `reps` timed runs, then untimed runs until all have finished
    // theirs, so that the load stays at n while anyone is measuring.
    std::atomic<int> finished{0};
    const auto instance = [&](int i) {
      if (n > 1) configure_torch_threads(options.torch_threads);
      double t = 0.0;
      for (int k = 0; k < options.warmup; ++k) timed_run(ptrs, t);
      auto& mine = ms[static_cast<std::size_t>(i)];
      for (int k = 0; k < options.reps; ++k) {
        std::vector<FloatTensor> out = timed_run(ptrs, t);
        mine.push_back(t);
        if (i == 0 && k == 0) first_out = std::move(out);
      }
      finished.fetch_add(1);
      while (finished.load() < n) timed_run(ptrs, t);
    };
    if (n == 1) {
      instance(0);
    } else {
      // A model error on one thread ends the others' extra runs and is rethrown here.
      std::mutex error_mutex;
      std::exception_ptr error;
      std::vector<std::thread> threads;
      for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
          try {
            instance(i);
          } catch (...) {
            std::lock_guard lock(error_mutex);
            if (!error) error = std::current_exception();
            finished.store(n);
          }
        });
      }
      for (std::thread& th : threads) th.join();
      if (error) std::rethrow_exception(error);
    }
    if (spec.fanout) {
      for (const FloatTensor& o : first_out) {
        fanout_sum += apply_fanout_rule(*spec.fanout, o.data);
        ++fanout_n;
      }
    }
    std::vector<double> all;
    for (const auto& v : ms) all.insert(all.end(), v.begin(), v.end());
    profile.timings.push_back(BatchTiming{batch, quantile(all, 0.5), quantile(all, 0.9)});
  }
  profile.max_overlap = max_overlap.load();
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
