#include "plan/iserve/placement.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace tessera::iserve {

void GpuLoad::add_busy(Time start, Time end) {
  if (end <= start) return;
  busy_.emplace_back(start, end);
  // Bounded memory: the oldest intervals go first. Not pruned by time, since a queued query
  // may start long after the moments the window is still asked about.
  if (busy_.size() > kMaxIntervals) busy_.pop_front();
}

double GpuLoad::load(Time now) const {
  const double sample = std::floor(now);
  const double from = sample - window_;
  double busy = 0.0;
  for (const auto& [s, e] : busy_) {
    const double lo = std::max(s, from);
    const double hi = std::min(e, sample);
    if (hi > lo) busy += hi - lo;
  }
  return std::min(1.0, busy / window_);
}

std::string to_string(PlacementPolicy p) {
  switch (p) {
    case PlacementPolicy::kLeastLoaded:
      return "least-loaded";
    case PlacementPolicy::kPacking:
      return "packing";
    case PlacementPolicy::kHybrid:
      return "hybrid";
  }
  return "?";
}

PlacementPolicy placement_policy_from_string(const std::string& name) {
  if (name == "least-loaded") return PlacementPolicy::kLeastLoaded;
  if (name == "packing") return PlacementPolicy::kPacking;
  if (name == "hybrid") return PlacementPolicy::kHybrid;
  throw std::invalid_argument("unknown placement policy '" + name +
                              "' (known: least-loaded, packing, hybrid)");
}

std::vector<int> placement_order(const std::vector<double>& loads, PlacementPolicy policy,
                                 double theta) {
  std::vector<int> order(loads.size());
  std::iota(order.begin(), order.end(), 0);
  auto ascending = [&](int a, int b) { return loads[a] < loads[b]; };
  auto descending = [&](int a, int b) { return loads[a] > loads[b]; };
  switch (policy) {
    case PlacementPolicy::kLeastLoaded:
      std::stable_sort(order.begin(), order.end(), ascending);
      break;
    case PlacementPolicy::kPacking:
      std::stable_sort(order.begin(), order.end(), descending);
      break;
    case PlacementPolicy::kHybrid: {
      auto mid = std::stable_partition(order.begin(), order.end(),
                                       [&](int g) { return loads[g] < theta; });
      std::stable_sort(order.begin(), mid, descending);
      std::stable_sort(mid, order.end(), ascending);
      break;
    }
  }
  return order;
}

std::vector<int> assign_layers(int layers, const std::vector<int>& capacities) {
  if (capacities.empty() || layers <= 0) return {};
  long long total = 0;
  for (int c : capacities) total += std::max(c, 0);
  if (total < layers) return {};
  const int stages = static_cast<int>(capacities.size());
  int level = (layers + stages - 1) / stages;
  auto placed = [&](int x) {
    long long n = 0;
    for (int c : capacities) n += std::min(std::max(c, 0), x);
    return n;
  };
  while (placed(level) < layers) ++level;
  std::vector<int> out(capacities.size());
  for (size_t s = 0; s < capacities.size(); ++s)
    out[s] = std::min(std::max(capacities[s], 0), level);
  long long surplus = placed(level) - layers;
  for (int s = stages - 1; s >= 0 && surplus > 0; --s) {
    if (out[s] == level) {
      --out[s];
      --surplus;
    }
  }
  return out;
}

namespace {

// Capacity in layers of each stage of `chosen` (TP GPUs per stage, in order).
std::vector<int> stage_capacities(const std::vector<GpuState>& gpus, const std::vector<int>& chosen,
                                  int tp, double block) {
  std::vector<int> caps;
  for (size_t s = 0; s + tp <= chosen.size(); s += tp) {
    double least = gpus[chosen[s]].free_bytes();
    for (int r = 1; r < tp; ++r) least = std::min(least, gpus[chosen[s + r]].free_bytes());
    const double n = std::floor(least / block);
    caps.push_back(n <= 0 ? 0 : static_cast<int>(std::min(n, 1e6)));
  }
  return caps;
}

}  // namespace

StagePlacement place(const std::vector<GpuState>& gpus, int tp, int pp, int layers,
                     double block_bytes, PlacementPolicy policy, double theta, Time now) {
  StagePlacement p;
  p.block_bytes = block_bytes;
  const int k = tp * pp;
  if (k <= 0 || k > static_cast<int>(gpus.size()) || layers < pp || !(block_bytes > 0)) return p;
  // Step II: the top-K GPUs by free memory.
  std::vector<int> by_free(gpus.size());
  std::iota(by_free.begin(), by_free.end(), 0);
  std::stable_sort(by_free.begin(), by_free.end(),
                   [&](int a, int b) { return gpus[a].free_bytes() > gpus[b].free_bytes(); });
  std::vector<int> top(by_free.begin(), by_free.begin() + k);
  std::vector<int> top_layers = assign_layers(layers, stage_capacities(gpus, top, tp, block_bytes));
  if (top_layers.empty() ||
      std::find(top_layers.begin(), top_layers.end(), 0) != top_layers.end()) {
    return p;
  }
  // Step III: the policy's order.
  std::vector<double> loads;
  for (const GpuState& g : gpus) loads.push_back(g.load.load(now));
  std::vector<int> chosen;
  for (int g : placement_order(loads, policy, theta)) {
    if (gpus[g].free_bytes() >= block_bytes) chosen.push_back(g);
    if (static_cast<int>(chosen.size()) == k) break;
  }
  if (static_cast<int>(chosen.size()) == k) {
    std::vector<int> split = assign_layers(layers, stage_capacities(gpus, chosen, tp, block_bytes));
    if (!split.empty() && std::find(split.begin(), split.end(), 0) == split.end()) {
      p.gpus = chosen;
      p.layers_per_stage = split;
      return p;
    }
  }
  p.gpus = top;
  p.layers_per_stage = top_layers;
  return p;
}

}  // namespace tessera::iserve
