#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/log_histogram.hpp"
#include "experiments/burst_phases.hpp"
#include "policy/policy_set.hpp"
#include "spec/run_spec.hpp"

namespace tessera {

// One simulation of a comparison: a policy config at a load scale.
struct ComparisonCase {
  std::string label;  // e.g. "pard", "pard λ=0.05"
  // The run spec's policies with its preset replaced (policies_with_preset): the system
  // `preset:` names in that run spec.
  PolicyConfig policies;
  double load_scale = 1.0;  // multiplies the workload's rate, keeping its duration
};

// Goodput over the windows in which the offered load exceeded the capacity of the
// workers then alive (PARD §5.1 reports goodput over "periods of the workload that require
// request dropping"). Capacity: min over tasks of Σ max_batch / d(max_batch) over live
// workers, one item per request per task (PARD's pipelines have fan-out 1).
struct OverloadGoodput {
  int windows = 0;          // overloaded windows
  double seconds = 0.0;     // their total length
  uint64_t arrivals = 0;    // requests that arrived in them
  uint64_t ok = 0;          // requests that finished on time in them (by finish time)
  double fraction() const;  // ok / arrivals (normalised goodput); 1 when no window
};

struct ComparisonRow {
  ComparisonCase run;
  nlohmann::json summary;  // as in summary.json
  LogHistogram latency{};  // end-to-end latency of completed requests
  OverloadGoodput overload{};
  std::array<PhaseStats, kBurstPhases> phases{};  // per BurstPhase (burst_phases.hpp)
};

// The case the charts mark as the baseline: "naive" when present, else the first case.
std::size_t comparison_baseline(const std::vector<ComparisonRow>& rows);

// The cases for presets × load scales, or, with lambdas, PARD at each λ × load scales.
// Each preset X runs as `run` with `preset: X` in its policies section (the section's other
// fields override every preset alike; policy_overrides lists them); λ is set last. A bad
// preset throws std::invalid_argument.
std::vector<ComparisonCase> comparison_cases(const RunSpec& run,
                                             const std::vector<std::string>& presets,
                                             const std::vector<double>& load_scales,
                                             const std::vector<double>& lambdas);

// Runs every case on the same run spec (same seed, same trace); `progress` is told
// after each case.
std::vector<ComparisonRow> run_comparison(
    const RunSpec& run, const std::vector<ComparisonCase>& cases,
    const std::function<void(const ComparisonRow&, std::size_t done)>& progress = {});

// A markdown table (one row per case): goodput over the run and over the overloaded
// windows, attainment, drop and invalid rates, p99 latency and where drops happened
// (percent of drops per stage, in pipeline order); then, per load scale, PARD's ratios
// against the paper's baselines (naive, nexus, clipper++) and tessera's variants of them
// (nexus-e2e, clipper++-predictive).
// `fixed`: the run spec's policy fields every case keeps (policy_overrides), named under
// the table when there are any.
std::string comparison_markdown(const std::vector<ComparisonRow>& rows, const App& app,
                                const std::vector<std::string>& fixed = {});

// Writes DIR/comparison.csv, DIR/comparison.md, DIR/comparison.svg,
// DIR/comparison_latency.csv (each case's latency histogram: label,lower_ms,upper_ms,count)
// and DIR/comparison_phases.csv (per case and burst phase: requests, device time, wasted
// work and drops per task; burst_phases.hpp).
void write_comparison(const std::filesystem::path& dir, const std::vector<ComparisonRow>& rows,
                      const App& app, const std::vector<std::string>& fixed = {});

}  // namespace tessera
