#include "control/replan_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "metrics/svg_chart.hpp"

namespace tessera::control {
namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path.string());
  out << text;
}

// Bins with at least one arrival, the ones a day's averages are taken over.
std::vector<const BinRecord*> active_bins(const ReplanResult& r) {
  std::vector<const BinRecord*> out;
  for (const BinRecord& b : r.bins) {
    if (b.demand_rps > 0) out.push_back(&b);
  }
  return out;
}

// The plan's accuracy drop, % of the best achievable (A_obj is 1 up to rounding when the
// plan runs every task's best variant).
double accuracy_drop_pct(const BinRecord& b) {
  return std::max(0.0, 100.0 * (1.0 - b.planned_accuracy));
}

struct Means {
  double slices_pct = 0.0;
  double violation_pct = 0.0;
  double subrequest_violation_pct = 0.0;
};
Means means(const std::vector<const BinRecord*>& bins, int slices) {
  Means m;
  if (bins.empty()) return m;
  for (const BinRecord* b : bins) {
    m.slices_pct += 100.0 * b->slices / std::max(slices, 1);
    m.violation_pct += 100.0 * b->violation_rate();
    m.subrequest_violation_pct += 100.0 * b->subrequest_violation_rate();
  }
  m.slices_pct /= static_cast<double>(bins.size());
  m.violation_pct /= static_cast<double>(bins.size());
  m.subrequest_violation_pct /= static_cast<double>(bins.size());
  return m;
}

}  // namespace

std::size_t chart_bins(const ReplanResult& r) {
  std::size_t n = r.bins.size();
  while (n > 0 && r.bins[n - 1].demand_rps <= 0) --n;
  return n;
}

ReplanSummary summarize_replan(const ReplanResult& r) {
  ReplanSummary s;
  s.space = r.space;
  s.solves = r.solves;
  s.limited_solves = r.limited_solves;
  s.infeasible = r.infeasible;
  s.message = r.message;
  if (r.infeasible) return s;
  const auto bins = active_bins(r);
  const Means all = means(bins, r.slices_available);
  s.slices_pct = all.slices_pct;
  s.violation_pct = all.violation_pct;
  s.subrequest_violation_pct = all.subrequest_violation_pct;
  if (r.subrequests > 0.0) {
    s.subrequest_violation_total_pct = 100.0 * r.subrequests_violated / r.subrequests;
  }
  double acc = 0.0, realized = 0.0;
  int realized_n = 0;
  for (const BinRecord* b : bins) {
    acc += accuracy_drop_pct(*b);
    if (b->ok + b->late > 0 && r.accuracy_max > 0) {
      realized += b->accuracy / r.accuracy_max;
      ++realized_n;
    }
    if (b->violation_rate() >= 0.10) ++s.bad_bins;
    if (b->fallback) ++s.fallback_bins;
    s.max_violation_pct = std::max(s.max_violation_pct, 100.0 * b->violation_rate());
  }
  if (!bins.empty()) s.accuracy_drop_pct = acc / static_cast<double>(bins.size());
  if (realized_n > 0) s.realized_accuracy = realized / realized_n;
  const uint64_t finished = r.ok + r.late + r.dropped + r.failed;
  if (finished > 0) {
    s.violation_total_pct =
        100.0 * static_cast<double>(finished - r.ok) / static_cast<double>(finished);
  }
  // The quietest and busiest quarters of the day, by measured demand.
  std::vector<const BinRecord*> sorted = bins;
  std::sort(sorted.begin(), sorted.end(),
            [](const BinRecord* a, const BinRecord* b) { return a->demand_rps < b->demand_rps; });
  const std::size_t quarter = std::max<std::size_t>(1, sorted.size() / 4);
  if (!sorted.empty()) {
    const Means low = means({sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(quarter)},
                            r.slices_available);
    const Means high = means({sorted.end() - static_cast<std::ptrdiff_t>(quarter), sorted.end()},
                             r.slices_available);
    s.low_slices_pct = low.slices_pct;
    s.low_violation_pct = low.violation_pct;
    s.high_slices_pct = high.slices_pct;
    s.high_violation_pct = high.violation_pct;
  }
  return s;
}

std::string comparison_table(const std::vector<ReplanSummary>& rows) {
  // Violations per frame (a request that is not ok counts 1) and per sub-request (§4.5: a
  // drop at a task with multiplicative factor F counts F).
  std::string out =
      "| space | slices used | accuracy drop | SLO violations per frame (mean per bin) | all "
      "frames | per sub-request (mean per bin) | all sub-requests | bins >= 10 % | worst bin | "
      "quiet quarter: slices / viol. | busy quarter: slices / viol. | max-demand bins | MILP "
      "solves (cut short) |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ReplanSummary& s : rows) {
    if (s.infeasible) {
      out +=
          fmt::format("| {} | infeasible: {} | - | - | - | - | - | - | - | - | - | - | {} ({}) |\n",
                      s.space, s.message, s.solves, s.limited_solves);
      continue;
    }
    out += fmt::format(
        "| {} | {:.1f} % | {:.2f} % | {:.2f} % | {:.2f} % | {:.2f} % | {:.2f} % | {} | {:.1f} % | "
        "{:.1f} % / {:.2f} % | {:.1f} % / {:.2f} % | {} | {} ({}) |\n",
        s.space, s.slices_pct, s.accuracy_drop_pct, s.violation_pct, s.violation_total_pct,
        s.subrequest_violation_pct, s.subrequest_violation_total_pct, s.bad_bins,
        s.max_violation_pct, s.low_slices_pct, s.low_violation_pct, s.high_slices_pct,
        s.high_violation_pct, s.fallback_bins, s.solves, s.limited_solves);
  }
  return out;
}

void write_replan_report(const std::filesystem::path& dir, const std::vector<ReplanResult>& runs,
                         const std::string& title) {
  std::filesystem::create_directories(dir);
  nlohmann::json summary = nlohmann::json::array();
  std::vector<ReplanSummary> rows;
  // Time in hours; every panel colours a search space alike (the palette keys by name).
  const double hours = runs.empty() ? 1.0 : runs.front().bin / 3600.0;
  Chart demand{title + ": demand per bin", "time (h)", "requests/s", hours, {}};
  Chart slices{"GPU slices in use (plan)", "time (h)", "% of available slices", hours, {}};
  Chart violations{"SLO violation rate (late + dropped + failed), capped at 50 %",
                   "time (h)",
                   "% of finished requests",
                   hours,
                   {}};
  Chart accuracy{
      "accuracy drop of the plan (1 - A_obj)", "time (h)", "% of best accuracy", hours, {}};
  for (const ReplanResult& r : runs) {
    if (r.infeasible) {
      const ReplanSummary s = summarize_replan(r);
      rows.push_back(s);
      summary.push_back({{"app", title},
                         {"space", s.space},
                         {"infeasible", true},
                         {"message", s.message},
                         {"milp_solves", s.solves},
                         {"milp_solves_cut_short", s.limited_solves},
                         {"wall_seconds", r.wall_seconds},
                         {"bin_s", r.bin},
                         {"slices_available", r.slices_available}});
      continue;
    }
    const std::filesystem::path sub = dir / r.space;
    std::filesystem::create_directories(sub);
    std::string csv =
        "bin,demand_rps,predicted_rps,planned_rps,fallback,slices,planned_accuracy,workers,"
        "started,stopped,solve_s,solve_limited,finished,ok,late,dropped,failed,violation_rate,"
        "subrequests,subrequests_violated,subrequest_violation_rate,accuracy,verified_attainment,"
        "verify_stop";
    for (const std::string& t : r.tasks) csv += ",dropped_at_" + t;
    csv += "\n";
    ChartSeries d{r.space + " predicted", {}, {}, r.space}, sl{r.space, {}}, v{r.space, {}},
        a{r.space, {}};
    ChartSeries actual{"measured", {}};
    const std::size_t drawn = chart_bins(r);
    for (const BinRecord& b : r.bins) {
      csv += fmt::format(
          "{},{:.3f},{:.3f},{:.3f},{},{},{:.5f},{},{},{},{:.3f},{},{},{},{},{},{},{:.5f},{:.3f},{:."
          "3f},"
          "{:.5f},{:.5f}",
          b.bin, b.demand_rps, b.predicted_rps, b.planned_rps, b.fallback ? 1 : 0, b.slices,
          b.planned_accuracy, b.workers, b.started, b.stopped, b.solve_seconds,
          b.solve_limited ? 1 : 0, b.finished, b.ok, b.late, b.dropped, b.failed,
          b.violation_rate(), b.subrequests, b.subrequests_violated, b.subrequest_violation_rate(),
          b.accuracy);
      // The verification's measure of the bin's plan, and the drops per task.
      csv += fmt::format(",{},{}",
                         b.verify_stop.empty() ? "" : fmt::format("{:.5f}", b.verified_attainment),
                         b.verify_stop);
      for (std::size_t t = 0; t < r.tasks.size(); ++t)
        csv += fmt::format(",{}", t < b.dropped_at.size() ? b.dropped_at[t] : 0);
      csv += "\n";
      if (static_cast<std::size_t>(&b - r.bins.data()) >= drawn) continue;
      actual.values.push_back(b.demand_rps);
      d.values.push_back(b.predicted_rps);
      sl.values.push_back(100.0 * b.slices / std::max(r.slices_available, 1));
      v.values.push_back(std::min(50.0, 100.0 * b.violation_rate()));
      a.values.push_back(accuracy_drop_pct(b));
    }
    write_text(sub / "bins.csv", csv);
    const ReplanSummary s = summarize_replan(r);
    rows.push_back(s);
    summary.push_back(
        {{"app", title},
         {"space", s.space},
         {"slices_used_pct", s.slices_pct},
         {"accuracy_drop_pct", s.accuracy_drop_pct},
         {"realized_accuracy", s.realized_accuracy},
         {"violation_pct_mean_per_bin", s.violation_pct},
         {"violation_pct_all_requests", s.violation_total_pct},
         {"subrequests",
          {{"total", r.subrequests},
           {"violated", r.subrequests_violated},
           {"violation_rate", r.subrequests > 0.0 ? r.subrequests_violated / r.subrequests : 0.0},
           {"violation_pct_mean_per_bin", s.subrequest_violation_pct}}},
         {"bins_over_10pct", s.bad_bins},
         {"worst_bin_violation_pct", s.max_violation_pct},
         {"quiet_quarter",
          {{"slices_used_pct", s.low_slices_pct}, {"violation_pct", s.low_violation_pct}}},
         {"busy_quarter",
          {{"slices_used_pct", s.high_slices_pct}, {"violation_pct", s.high_violation_pct}}},
         {"max_demand_bins", s.fallback_bins},
         {"milp_solves", s.solves},
         {"milp_solves_cut_short", s.limited_solves},
         {"requests",
          {{"submitted", r.submitted},
           {"ok", r.ok},
           {"late", r.late},
           {"dropped", r.dropped},
           {"failed", r.failed}}},
         {"wall_seconds", r.wall_seconds},
         {"bin_s", r.bin},
         {"slices_available", r.slices_available}});
    if (demand.series.empty()) demand.series.push_back(std::move(actual));
    demand.series.push_back(std::move(d));
    slices.series.push_back(std::move(sl));
    violations.series.push_back(std::move(v));
    accuracy.series.push_back(std::move(a));
  }
  write_text(dir / "summary.json", summary.dump(2) + "\n");
  write_text(dir / "comparison.md", comparison_table(rows));
  write_text(dir / "day.svg", render_svg({demand, slices, violations, accuracy}));
}

}  // namespace tessera::control
