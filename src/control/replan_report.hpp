#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/replanning.hpp"

namespace tessera::control {

// The paper's Fig. 4 metrics of one re-planned run, over all bins and over the quietest
// and busiest quarter of bins (by measured demand).
struct ReplanSummary {
  std::string space;
  bool infeasible = false;           // no plan serves any demand: the day was not run
  std::string message;               // why
  double slices_pct = 0.0;           // mean plan slices, % of available
  double accuracy_drop_pct = 0.0;    // mean (1 - A_obj) x 100 of the plans
  double realized_accuracy = 0.0;    // mean accuracy of completed requests / A_max
  double violation_pct = 0.0;        // mean per-bin SLO violation rate (late + dropped + failed)
  double violation_total_pct = 0.0;  // over all requests
  // The same per sub-request (§4.5): a drop at a task with multiplicative factor F counts F
  // (RequestRecord::subrequests).
  double subrequest_violation_pct = 0.0;        // mean per bin
  double subrequest_violation_total_pct = 0.0;  // over all sub-requests
  double low_slices_pct = 0.0, low_violation_pct = 0.0;
  double high_slices_pct = 0.0, high_violation_pct = 0.0;
  int bad_bins = 0;       // bins with >= 10 % violations (the paper's "particularly poorly")
  int fallback_bins = 0;  // bins that ran the max-demand plan
  int solves = 0;
  int limited_solves = 0;  // solves a solver limit cut short (their plans may not be optimal)
  double max_violation_pct = 0.0;
};

ReplanSummary summarize_replan(const ReplanResult& result);

// The bins a chart draws: up to the last bin with arrivals. The bins after it only hold
// the stragglers of the day (demand 0, a few late requests) and would draw as a phantom
// violation spike.
std::size_t chart_bins(const ReplanResult& result);

// DIR/<space>/bins.csv for each run, DIR/summary.json, DIR/comparison.md (a Markdown
// table) and DIR/day.svg (demand, slices, violations and accuracy drop per bin).
void write_replan_report(const std::filesystem::path& dir, const std::vector<ReplanResult>& runs,
                         const std::string& title);

// The comparison table in Markdown.
std::string comparison_table(const std::vector<ReplanSummary>& rows);

}  // namespace tessera::control
