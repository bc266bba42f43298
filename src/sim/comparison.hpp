#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/log_histogram.hpp"
#include "policy/policy_set.hpp"
#include "spec/run_spec.hpp"

namespace tessera {

// One simulation of a comparison: a policy config at a load scale.
struct ComparisonCase {
  std::string label;  // e.g. "pard", "pard λ=0.05"
  PolicyConfig policies;
  double load_scale = 1.0;  // multiplies the workload's rate, keeping its duration
};

struct ComparisonRow {
  ComparisonCase run;
  nlohmann::json summary;  // as in summary.json
  LogHistogram latency{};  // end-to-end latency of completed requests
};

// The case the charts mark as the baseline: "naive" when present, else the first case.
std::size_t comparison_baseline(const std::vector<ComparisonRow>& rows);

// The cases for presets × load scales, or, with lambdas, PARD at each λ × load scales.
std::vector<ComparisonCase> comparison_cases(const std::vector<std::string>& presets,
                                             const std::vector<double>& load_scales,
                                             const std::vector<double>& lambdas);

// Runs every case on the same run spec (same seed, same trace); `progress` is told
// after each case.
std::vector<ComparisonRow> run_comparison(
    const RunSpec& run, const std::vector<ComparisonCase>& cases,
    const std::function<void(const ComparisonRow&, std::size_t done)>& progress = {});

// A markdown table (one row per case): goodput, attainment, drop and invalid rates,
// p99 latency and where drops happened (percent of drops per stage, in pipeline order).
std::string comparison_markdown(const std::vector<ComparisonRow>& rows, const App& app);

// Writes DIR/comparison.csv, DIR/comparison.md, DIR/comparison.svg and
// DIR/comparison_latency.csv (each case's latency histogram: label,lower_ms,upper_ms,count).
void write_comparison(const std::filesystem::path& dir, const std::vector<ComparisonRow>& rows,
                      const App& app);

}  // namespace tessera
