// The report section of `tessera replan`: the day per search space, one colour per space
// in every panel.
#include <fmt/format.h>

#include <algorithm>

#include "metrics/svg_chart.hpp"
#include "report/sections.hpp"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string pct_cell(const json& j, const char* key) {
  return j.contains(key) ? num(j[key].get<double>(), 2) + " %" : "-";
}

}  // namespace

bool add_replan_section(HtmlPage& page, const fs::path& dir) {
  const fs::path file = dir / "summary.json";
  if (!fs::exists(file)) return false;
  const json runs = read_json(file);
  if (!runs.is_array() || runs.empty() || !runs[0].contains("space")) return false;
  // The app's name (older summaries lack it: the folder's name then).
  const std::string app =
      runs[0].value("app", fs::absolute(dir).lexically_normal().filename().string());
  page.section("Re-planned day: " + app + ", " + std::to_string(runs.size()) + " search spaces",
               "from " + shown_path(dir) + ": summary.json, <space>/bins.csv");
  std::vector<std::vector<std::string>> rows;
  for (const json& r : runs) {
    rows.push_back({r.value("space", std::string()), pct_cell(r, "slices_used_pct"),
                    pct_cell(r, "accuracy_drop_pct"), pct_cell(r, "violation_pct_mean_per_bin"),
                    pct_cell(r, "violation_pct_all_requests"),
                    fmt::format("{}", r.value("bins_over_10pct", 0)),
                    pct_cell(r, "worst_bin_violation_pct"),
                    fmt::format("{}", r.value("max_demand_bins", 0)),
                    fmt::format("{}", r.value("milp_solves", 0))});
  }
  page.table({"space", "slices used", "accuracy drop", "SLO violations (mean per bin)",
              "all requests", "bins ≥ 10 %", "worst bin", "max-demand bins", "MILP solves"},
             rows);

  const double bin_s = runs[0].value("bin_s", 0.0);
  const bool hours = bin_s > 0;
  const std::string x_label = hours ? "time (h)" : "bin";
  const double step = hours ? bin_s / 3600.0 : 1.0;
  Chart demand{"Demand per bin", x_label, "requests/s", step, {}};
  Chart slices{"GPU slices in use (plan)", x_label, "% of available slices", step, {}};
  Chart viol{"SLO violation rate (late + dropped + failed), capped at 50 %",
             x_label,
             "% of finished requests",
             step,
             {}};
  Chart acc{"Accuracy drop of the plan (1 − A_obj)", x_label, "% of best accuracy", step, {}};
  for (const json& r : runs) {
    const std::string space = r.value("space", std::string());
    const fs::path bins = dir / space / "bins.csv";
    if (!fs::exists(bins)) continue;
    const CsvTable t = CsvTable::read(bins, true);
    const std::size_t d = t.column("demand_rps"), p = t.column("predicted_rps"),
                      s = t.column("slices"), v = t.column("violation_rate"),
                      a = t.column("planned_accuracy");
    // Up to the last bin with arrivals: later bins only hold the day's stragglers.
    std::size_t n = t.rows().size();
    while (n > 0 && t.number(t.rows()[n - 1], d) <= 0) --n;
    const double avail = r.value("slices_available", 0.0);
    ChartSeries measured{"measured", {}}, pred{space + " predicted", {}, {}, space}, sl{space, {}},
        vi{space, {}}, ac{space, {}};
    for (std::size_t i = 0; i < n; ++i) {
      const auto& row = t.rows()[i];
      measured.values.push_back(t.number(row, d));
      pred.values.push_back(t.number(row, p));
      sl.values.push_back(avail > 0 ? 100.0 * t.number(row, s) / avail : t.number(row, s));
      vi.values.push_back(std::min(50.0, 100.0 * t.number(row, v)));
      ac.values.push_back(std::max(0.0, 100.0 * (1.0 - t.number(row, a))));
    }
    if (avail <= 0) slices.y_label = "slices";
    if (demand.series.empty()) demand.series.push_back(std::move(measured));
    demand.series.push_back(std::move(pred));
    slices.series.push_back(std::move(sl));
    viol.series.push_back(std::move(vi));
    acc.series.push_back(std::move(ac));
  }
  if (demand.series.empty()) return true;
  page.subsection("The day");
  page.figure(render_svg({demand, slices, viol, acc}, 900, 250, &page.palette()),
              "One colour per search space in every panel; a line identical to another is "
              "drawn dashed and named in the legend.");
  return true;
}

}  // namespace tessera::report
