#pragma once

// Burst phases of a run's time windows, and what happened in each: where the work spent on
// requests that ended dropped or late (wasted work) was done, and where requests were
// dropped, per task. A window is overloaded when its arrivals exceed the capacity of the
// workers alive then (the comparison's overload windows); a run of overloaded windows is a
// burst: its first `onset` windows are its onset, the rest its plateau, and the `decay`
// windows after it (until the next burst) its decay; every other window is calm. Values
// only; not thread-safe to share a PhaseStats being filled.

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/time.hpp"
#include "metrics/metrics.hpp"

namespace tessera {

enum class BurstPhase : uint8_t { kCalm = 0, kOnset, kPlateau, kDecay };
inline constexpr std::size_t kBurstPhases = 4;
std::string_view burst_phase_name(BurstPhase phase);

struct BurstPhaseSettings {
  int onset_windows = 3;  // a burst's first windows
  int decay_windows = 5;  // the windows after a burst, unless the next one starts
};

// One phase per window, from which windows were overloaded.
std::vector<BurstPhase> classify_burst_phases(const std::vector<bool>& overloaded,
                                              const BurstPhaseSettings& settings = {});

struct PhaseStats {
  int windows = 0;
  double seconds = 0.0;
  uint64_t arrivals = 0;
  uint64_t ok = 0;
  uint64_t late = 0;
  uint64_t dropped = 0;
  Time gpu_busy = 0.0;
  std::vector<Time> wasted_gpu;      // per task: work done there on requests lost
  std::vector<uint64_t> dropped_at;  // per task: drops made there
};

// Sums the collector's windows per phase (phases[i] for window i; windows past the end of
// `phases` count as calm). Requests count in the window in which they ended.
std::array<PhaseStats, kBurstPhases> burst_phase_stats(const MetricsCollector& metrics,
                                                       const std::vector<BurstPhase>& phases,
                                                       std::size_t tasks);

}  // namespace tessera
