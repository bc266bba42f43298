#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/app.hpp"
#include "metrics/metrics.hpp"

namespace tessera {

// summary.json's content (docs/simulate.md lists every field).
nlohmann::json summarize(const MetricsCollector& metrics, const App& app);

// A readable table of the summary for the terminal.
std::string format_summary(const nlohmann::json& summary);

// The latency distribution as CSV: `lower_ms,upper_ms,count`, one row per non-empty
// bucket of the log histogram (at most ~1,600 rows however many requests ran).
std::string latency_histogram_csv(const LogHistogram& latency);

// Writes DIR/summary.json, DIR/timeseries.csv, DIR/timeseries.svg and
// DIR/latency_histogram.csv. Queue columns and the queue panel are left out when the
// collector did not sample queues (a load generator's).
void write_report(const std::filesystem::path& dir, const nlohmann::json& summary,
                  const MetricsCollector& metrics, const App& app);

}  // namespace tessera
