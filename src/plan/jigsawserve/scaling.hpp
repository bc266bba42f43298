#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "plan/jigsawserve/segments.hpp"
#include "profile/profile_table.hpp"

namespace tessera::plan {

// How a latency curve measured on a whole GPU is turned into one for a GPU segment
// (a MIG instance of g of the GPU's C compute slices, shared by m MPS processes) when no
// measured curve exists (docs/plan.md#profiles). With t(b) the whole-GPU latency at
// batch b and tau = min over measured b of t(b)/b (the per-item time at the GPU's best
// batch, i.e. its peak throughput):
//
//   one process on the MIG instance:  L_g(b)   = max(t(b) * (C/g)^gamma, b * tau * C/g)
//   each of m MPS processes:          L_g,m(b) = max(L_g(b) * m^delta,  m * b * tau * C/g)
//
// The first term is the latency-bound regime (small batches do not fill a big GPU, so a
// slice is less than C/g times slower); the second is the compute roofline (a slice can
// never exceed its share of the GPU's peak throughput, and m processes share it).
// gamma = 0 makes small batches as fast on a slice as on the GPU; gamma = 1 scales
// latency with the slice size. delta is fitted on PPipe's measured MPS 1-4 data
// (fit_mps_exponent): delta = 1 means MPS adds no throughput, delta = 0 perfect overlap.
struct ScalingModel {
  double mig_latency_exponent = 0.5;  // gamma
  double mps_exponent = 0.93;         // delta; see fit_mps_exponent
  bool roofline = true;
  std::string mps_source = "default";  // where delta came from, for reports
};

struct MpsFit {
  double exponent = 1.0;       // delta, least squares of log(L_m/L_1) = delta * log(m)
  double rms_log_error = 0.0;  // residual, in natural-log units
  int points = 0;              // (model, gpu, share >= 2, batch) points used
  std::string source;
};

// Fits delta on every MODEL-GPU-SHARE.csv in a PPipe block-timing folder (or PPipe's
// data/ folder): each (model, gpu, share m >= 2, batch b) with a share-1 point at the same
// batch gives one ratio L_m(b) / L_1(b). `max_batch` > 0 keeps only batches <= it.
MpsFit fit_mps_exponent(const std::filesystem::path& ppipe_dir, int max_batch = 0);

// One derived latency, ms (the formulas above).
double derived_latency_ms(const ProfileCurve& whole_gpu, int gpu_compute, int compute, int mps,
                          int batch, const ScalingModel& model);

// The planner's profile table for `variants` on every catalogue segment, at `batches`:
//  - a curve already in `input` under the segment's catalogue name is used as measured
//    (whatever its origin says is kept);
//  - the whole-GPU segment (mps 1) takes `input`'s curve on `whole_gpu_segment`, renamed;
//  - every other segment is derived from that curve with `model` (origin derived).
// A variant without a curve on `whole_gpu_segment` and without measured segment curves is
// skipped on the segments it lacks (the planner reports which are missing).
ProfileTable derive_segment_profiles(const ProfileTable& input,
                                     const std::string& whole_gpu_segment,
                                     const SegmentCatalogue& catalogue, const ScalingModel& model,
                                     const std::vector<int>& batches,
                                     const std::vector<std::string>& variants);

}  // namespace tessera::plan
