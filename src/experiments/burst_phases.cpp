#include "experiments/burst_phases.hpp"

namespace tessera {

std::string_view burst_phase_name(BurstPhase phase) {
  switch (phase) {
    case BurstPhase::kCalm:
      return "calm";
    case BurstPhase::kOnset:
      return "onset";
    case BurstPhase::kPlateau:
      return "plateau";
    case BurstPhase::kDecay:
      return "decay";
  }
  return "?";
}

std::vector<BurstPhase> classify_burst_phases(const std::vector<bool>& overloaded,
                                              const BurstPhaseSettings& settings) {
  std::vector<BurstPhase> out(overloaded.size(), BurstPhase::kCalm);
  int in_burst = 0;      // windows into the current burst
  int since_burst = -1;  // windows since the last burst ended; < 0 before any
  for (std::size_t i = 0; i < overloaded.size(); ++i) {
    if (overloaded[i]) {
      out[i] = in_burst < settings.onset_windows ? BurstPhase::kOnset : BurstPhase::kPlateau;
      ++in_burst;
      since_burst = 0;
      continue;
    }
    in_burst = 0;
    if (since_burst >= 0 && since_burst < settings.decay_windows) {
      out[i] = BurstPhase::kDecay;
      ++since_burst;
    }
  }
  return out;
}

std::array<PhaseStats, kBurstPhases> burst_phase_stats(const MetricsCollector& metrics,
                                                       const std::vector<BurstPhase>& phases,
                                                       std::size_t tasks) {
  std::array<PhaseStats, kBurstPhases> out;
  for (PhaseStats& p : out) {
    p.wasted_gpu.assign(tasks, 0.0);
    p.dropped_at.assign(tasks, 0);
  }
  metrics.for_each_window([&](std::size_t i, const WindowStats& w) {
    const BurstPhase phase = i < phases.size() ? phases[i] : BurstPhase::kCalm;
    PhaseStats& p = out[static_cast<std::size_t>(phase)];
    ++p.windows;
    p.seconds += metrics.window();
    p.arrivals += w.arrivals;
    p.ok += w.ok;
    p.late += w.late;
    p.dropped += w.dropped;
    p.gpu_busy += w.gpu_busy;
    for (std::size_t t = 0; t < tasks && t < w.wasted_gpu.size(); ++t) {
      p.wasted_gpu[t] += w.wasted_gpu[t];
      p.dropped_at[t] += w.dropped_at[t];
    }
  });
  return out;
}

}  // namespace tessera
