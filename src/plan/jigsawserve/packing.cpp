#include "plan/jigsawserve/packing.hpp"

#include <algorithm>
#include <numeric>

namespace tessera::plan {

namespace {

struct GpuState {
  std::vector<bool> memory_used;
  int compute_used = 0;
};

// The lowest allowed start where `p` fits on `gpu`, or -1.
int fit(const SegmentCatalogue& cat, const MigProfile& p, const GpuState& gpu) {
  if (gpu.compute_used + p.compute > cat.gpu_compute) return -1;
  for (int s : p.starts) {
    if (s + p.memory > cat.gpu_memory) continue;
    bool free = true;
    for (int k = s; k < s + p.memory && free; ++k) free = !gpu.memory_used[static_cast<size_t>(k)];
    if (free) return s;
  }
  return -1;
}

}  // namespace

GpuLayout pack_mig(const SegmentCatalogue& cat, const std::vector<int>& items) {
  std::vector<int> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& pa = cat.mig[static_cast<size_t>(items[static_cast<size_t>(a)])];
    const auto& pb = cat.mig[static_cast<size_t>(items[static_cast<size_t>(b)])];
    if (pa.memory != pb.memory) return pa.memory > pb.memory;
    return pa.compute > pb.compute;
  });
  GpuLayout layout;
  std::vector<GpuState> state;
  for (int i : order) {
    const int mig = items[static_cast<size_t>(i)];
    const auto& p = cat.mig[static_cast<size_t>(mig)];
    int g = 0, start = -1;
    for (; g < static_cast<int>(state.size()); ++g) {
      start = fit(cat, p, state[static_cast<size_t>(g)]);
      if (start >= 0) break;
    }
    if (start < 0) {
      state.push_back(GpuState{std::vector<bool>(static_cast<size_t>(cat.gpu_memory), false), 0});
      layout.gpus.emplace_back();
      g = static_cast<int>(state.size()) - 1;
      start = fit(cat, p, state.back());
      if (start < 0) start = p.starts.empty() ? 0 : p.starts.front();  // cannot fit at all
    }
    auto& gs = state[static_cast<size_t>(g)];
    gs.compute_used += p.compute;
    for (int k = start; k < std::min(start + p.memory, cat.gpu_memory); ++k) {
      gs.memory_used[static_cast<size_t>(k)] = true;
    }
    layout.gpus[static_cast<size_t>(g)].push_back(MigPlacement{mig, start, i});
  }
  for (auto& gpu : layout.gpus) {
    std::sort(gpu.begin(), gpu.end(),
              [](const MigPlacement& a, const MigPlacement& b) { return a.start < b.start; });
  }
  return layout;
}

std::vector<std::string> check_layout(const SegmentCatalogue& cat, const GpuLayout& layout) {
  std::vector<std::string> problems;
  for (size_t g = 0; g < layout.gpus.size(); ++g) {
    std::vector<int> used(static_cast<size_t>(cat.gpu_memory), 0);
    int compute = 0;
    const std::string where = "GPU " + std::to_string(g);
    for (const auto& pl : layout.gpus[g]) {
      const auto& p = cat.mig[static_cast<size_t>(pl.mig)];
      compute += p.compute;
      if (std::find(p.starts.begin(), p.starts.end(), pl.start) == p.starts.end()) {
        problems.push_back(where + ": " + p.name + " may not start at " + std::to_string(pl.start));
      }
      if (pl.start < 0 || pl.start + p.memory > cat.gpu_memory) {
        problems.push_back(where + ": " + p.name + " runs past the last memory slice");
        continue;
      }
      for (int k = pl.start; k < pl.start + p.memory; ++k) ++used[static_cast<size_t>(k)];
    }
    for (int k = 0; k < cat.gpu_memory; ++k) {
      if (used[static_cast<size_t>(k)] > 1) {
        problems.push_back(where + ": memory slice " + std::to_string(k) + " used twice");
      }
    }
    if (compute > cat.gpu_compute) {
      problems.push_back(where + ": " + std::to_string(compute) + " compute slices > " +
                         std::to_string(cat.gpu_compute));
    }
  }
  return problems;
}

}  // namespace tessera::plan
