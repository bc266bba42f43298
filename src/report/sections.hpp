#pragma once

// The sections of report.html, one per kind of output a tessera command leaves in a
// folder. Each reads only files (no re-run), adds itself to the page when it finds its
// files in `dir`, and returns whether it did. A malformed file is an error naming it.
//   run:     summary.json (an object), timeseries.csv, latency_histogram.csv, loadgen.json
//            (simulate, loadgen)
//   compare: comparison.csv, comparison_latency.csv
//   plan:    plan.json, max_demand.json
//   replan:  summary.json (an array of search spaces) and <space>/bins.csv

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/csv_table.hpp"
#include "report/html_page.hpp"

namespace tessera::report {

bool add_run_section(HtmlPage& page, const std::filesystem::path& dir);
bool add_compare_section(HtmlPage& page, const std::filesystem::path& dir);
bool add_plan_section(HtmlPage& page, const std::filesystem::path& dir);
bool add_replan_section(HtmlPage& page, const std::filesystem::path& dir);

// Shared helpers of the sections.
nlohmann::json read_json(const std::filesystem::path& file);
std::string num(double v, int decimals);
std::string pct(double fraction, int decimals = 2);      // "12.34 %"
std::string shown_path(const std::filesystem::path& p);  // a path as given, for notes

}  // namespace tessera::report
