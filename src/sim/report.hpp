#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/app.hpp"
#include "sim/metrics.hpp"

namespace tessera {

// summary.json's content (docs/simulate.md lists every field).
nlohmann::json summarize(const MetricsCollector& metrics, const App& app);

// A readable table of the summary for the terminal.
std::string format_summary(const nlohmann::json& summary);

// Writes DIR/summary.json, DIR/timeseries.csv and DIR/timeseries.svg.
void write_report(const std::filesystem::path& dir, const nlohmann::json& summary,
                  const MetricsCollector& metrics, const App& app);

}  // namespace tessera
