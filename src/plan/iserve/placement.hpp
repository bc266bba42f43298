#pragma once

// iServe's placement (§6, digest §3.3–3.4): the cluster's GPUs with their free memory and a
// busy-time load over a 120 s window sampled each second; the feasibility check of a
// configuration's per-layer memory blocks against the GPUs' free memory; the contiguous
// (possibly uneven) assignment of layers to pipeline stages; and the least-loaded, packing
// and hybrid(θ) policies that pick the GPUs.
// Plain values and pure functions, except GpuLoad which one owner (the simulator or the
// controller) updates; not thread-safe.

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "core/time.hpp"

namespace tessera::iserve {

// Busy time of one GPU over the last `window` seconds, sampled each second: load(t) is the
// busy seconds in [s − window, s] divided by window, with s = floor(t) (the last sample).
class GpuLoad {
 public:
  explicit GpuLoad(double window_s = 120.0) : window_(window_s) {}
  // Records that the GPU is busy over [start, end) (end >= start; intervals in any order).
  void add_busy(Time start, Time end);
  double load(Time now) const;

 private:
  static constexpr size_t kMaxIntervals = 1'000'000;
  double window_;
  std::deque<std::pair<Time, Time>> busy_;
};

struct GpuState {
  double memory_bytes = 0;
  double used_bytes = 0;
  GpuLoad load;
  double free_bytes() const { return memory_bytes - used_bytes; }
};

enum class PlacementPolicy { kLeastLoaded, kPacking, kHybrid };
std::string to_string(PlacementPolicy p);
PlacementPolicy placement_policy_from_string(const std::string& name);  // invalid_argument

// The order in which a policy considers the GPUs (ties by index):
// least-loaded: ascending load; packing: descending load; hybrid(θ): the packable GPUs
// (load < θ) by descending load, then the others by ascending load.
std::vector<int> placement_order(const std::vector<double>& loads, PlacementPolicy policy,
                                 double theta);

// Layers per pipeline stage, contiguous and as even as the stages' capacities (in layers)
// allow: n_s = min(capacity_s, x) for the smallest level x that places every layer, the
// surplus taken back from the last stages at level x. Empty when the capacities hold fewer
// than `layers` layers. E.g. 32 layers over capacities {10, 9, 7, 6} → 10/9/7/6;
// over {40, 40, 40, 40} → 8/8/8/8.
std::vector<int> assign_layers(int layers, const std::vector<int>& capacities);

struct StagePlacement {
  std::vector<int> gpus;              // TP × PP GPUs, stage by stage (TP GPUs each)
  std::vector<int> layers_per_stage;  // PP entries
  double block_bytes = 0;             // memory of one layer on one GPU
};

// Places a configuration of `tp` × `pp` GPUs whose per-GPU memory is `block_bytes` per layer
// held (iServe's mem_block = memory / (TP × layers)). Step II: the top-K GPUs by free memory
// must hold every block, else no placement (empty gpus). Step III: the GPUs are taken in the
// policy's order among those with room for at least one block; when that set cannot hold
// the layers, the top-K set is used. A stage's capacity is the least, over its TP GPUs, of
// free memory / block.
StagePlacement place(const std::vector<GpuState>& gpus, int tp, int pp, int layers,
                     double block_bytes, PlacementPolicy policy, double theta, Time now);

}  // namespace tessera::iserve
