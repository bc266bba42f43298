#pragma once

#include <string>
#include <vector>

#include "plan/jigsawserve/segments.hpp"

namespace tessera::plan {

// One MIG instance placed on a GPU.
struct MigPlacement {
  int mig = 0;    // index into catalogue.mig
  int start = 0;  // first memory slice
  int item = 0;   // index of the item it came from (caller's numbering)
};

struct GpuLayout {
  std::vector<std::vector<MigPlacement>> gpus;
  int num_gpus() const { return static_cast<int>(gpus.size()); }
};

// Greedy rule-based bin packing (after Turkkan et al. 2024): items sorted by memory
// slices, then compute slices, largest first; each goes to the first GPU (and the lowest
// allowed start there) where its memory-slice interval is free and the GPU's compute
// slices suffice, else to a new GPU. `items[i]` is a MIG profile index.
GpuLayout pack_mig(const SegmentCatalogue& catalogue, const std::vector<int>& items);

// Checks a layout against the placement rules: allowed starts, no overlapping memory
// slices, compute within the GPU. Returns the problems (empty when valid).
std::vector<std::string> check_layout(const SegmentCatalogue& catalogue, const GpuLayout& layout);

}  // namespace tessera::plan
