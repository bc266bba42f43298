#pragma once

// Per-model inference statistics in the shape of the statistics extension of the Open
// Inference Protocol (Triton's GET /v2/models/{m}/stats): request successes and failures
// with their cumulative durations, and the success durations split into queue, compute
// input (parse), compute infer and compute output (encode). Threads: every member
// function may be called from any thread (one mutex).

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/metrics/prometheus.hpp"

namespace tessera {

struct StatDuration {
  uint64_t count = 0;
  uint64_t ns = 0;
  void add(double seconds) {
    ++count;
    ns += seconds > 0 ? static_cast<uint64_t>(seconds * 1e9) : 0;
  }
};

// Buckets of the duration histograms, seconds (100 us to 10 s).
inline const std::vector<double> kStatBounds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                             1,      2.5,     5,      10};

struct ModelStats {
  uint64_t last_inference_ms = 0;  // Unix time of the last answered request, ms
  uint64_t inference_count = 0;    // items answered 200 (a batch of N counts N)
  StatDuration success, fail, queue, compute_input, compute_infer, compute_output;
  // The same durations of successful requests as histograms (seconds).
  PromHistogram queue_h{kStatBounds}, compute_input_h{kStatBounds}, compute_infer_h{kStatBounds},
      compute_output_h{kStatBounds};
};

// What one answered request took, in seconds.
struct RequestTiming {
  double total = 0, queue = 0, input = 0, infer = 0;
};

class ModelStatsTable {
 public:
  void succeeded(const std::string& model, uint64_t items, const RequestTiming& t) {
    std::lock_guard lock(mutex_);
    ModelStats& s = stats_[model];
    touch(s);
    s.inference_count += items;
    s.success.add(t.total);
    s.queue.add(t.queue);
    s.compute_input.add(t.input);
    s.compute_infer.add(t.infer);
    s.queue_h.add(t.queue);
    s.compute_input_h.add(t.input);
    s.compute_infer_h.add(t.infer);
  }
  // The time to encode and hand over an answered request's response.
  void output_written(const std::string& model, double seconds) {
    std::lock_guard lock(mutex_);
    stats_[model].compute_output.add(seconds);
    stats_[model].compute_output_h.add(seconds);
  }
  void failed(const std::string& model, double seconds) {
    std::lock_guard lock(mutex_);
    ModelStats& s = stats_[model];
    touch(s);
    s.fail.add(seconds);
  }
  ModelStats get(const std::string& model) const {
    std::lock_guard lock(mutex_);
    auto it = stats_.find(model);
    return it == stats_.end() ? ModelStats{} : it->second;
  }

 private:
  static void touch(ModelStats& s) {
    s.last_inference_ms =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
  }
  mutable std::mutex mutex_;
  std::map<std::string, ModelStats> stats_;
};

}  // namespace tessera
