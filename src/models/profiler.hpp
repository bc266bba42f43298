#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/model.hpp"
#include "models/model_spec.hpp"
#include "profile/profile_table.hpp"

namespace tessera {

struct ProfileOptions {
  std::vector<int> batches{1, 2, 4, 8};
  int warmup = 3;  // unmeasured runs per batch size (after one run of every size)
  int reps = 20;   // measured runs per batch size; the median is kept
  uint64_t seed = 1;
  // Instances running at once (`tessera profile --concurrent N`): N threads share the
  // model, as a server's workers do, and each keeps running it until every one has its
  // `reps` timings, so every timed run has N - 1 others beside it. The N x reps timings
  // of a batch size are pooled.
  int concurrent = 1;
  int torch_threads = 1;  // libtorch intra-op threads of each of those threads
};

struct BatchTiming {
  int batch = 0;
  double median_ms = 0.0;
  double p90_ms = 0.0;
};

struct ModelProfile {
  std::vector<BatchTiming> timings;
  // Mean fan-out of the variant's rule over the random inputs (absent without a rule).
  std::optional<double> fanout_mean;
  // The most model runs seen in progress at once (the load the timings were taken under).
  int max_overlap = 0;
};

// Times `model` on this machine: one unmeasured run of every batch size first (libtorch
// prepares kernels per shape), then for each batch size `warmup` more runs and `reps`
// timed runs of a batch of standard-normal random inputs (seeded); with `concurrent` > 1,
// on that many threads at once (above).
ModelProfile profile_model(Model& model, const ModelSpec& spec, const ProfileOptions& options);

// Adds the medians to `table` as a measured curve of (spec.variant, segment).
void add_profile(ProfileTable& table, const ModelSpec& spec, const std::string& segment,
                 const ModelProfile& profile, const std::string& source);

}  // namespace tessera
