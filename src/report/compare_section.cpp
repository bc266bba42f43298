// The report section of `tessera compare`: per-case table, bars with the baseline marked,
// and the cases' latency distributions.
#include <fmt/format.h>

#include <map>

#include "metrics/svg_chart.hpp"
#include "report/sections.hpp"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;

void latency_cdfs(HtmlPage& page, const fs::path& file, const std::vector<std::string>& order,
                  const std::vector<std::string>& keys, const std::string& caption) {
  const CsvTable t = CsvTable::read(file, true);
  const std::size_t label = t.column("label"), lo = t.column("lower_ms"), up = t.column("upper_ms"),
                    cnt = t.column("count");
  std::map<std::string, std::vector<const CsvTable::Row*>> by_label;
  for (const auto& row : t.rows()) by_label[t.text(row, label)].push_back(&row);
  Chart c{"Latency distribution per case (CDF)",
          "end-to-end latency (ms, log scale)",
          "% of completed requests",
          1.0,
          {}};
  c.log_x = true;
  c.y_max = 100;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::string& name = order[k];
    const auto it = by_label.find(name);
    if (it == by_label.end()) continue;
    double total = 0, seen = 0;
    for (const auto* row : it->second) total += t.number(*row, cnt);
    ChartSeries s{name, {}, {}, keys[k]};
    for (const auto* row : it->second) {
      if (s.x.empty()) {
        s.x.push_back(t.number(*row, lo));
        s.values.push_back(0.0);
      }
      seen += t.number(*row, cnt);
      s.x.push_back(t.number(*row, up));
      s.values.push_back(100.0 * seen / total);
    }
    c.series.push_back(std::move(s));
  }
  if (c.series.empty()) return;
  page.figure(render_svg({c}, 900, 320, &page.palette()), caption);
}

}  // namespace

bool add_compare_section(HtmlPage& page, const fs::path& dir) {
  const fs::path file = dir / "comparison.csv";
  if (!fs::exists(file)) return false;
  const CsvTable t = CsvTable::read(file, true);
  if (!t.find_column("label") || !t.find_column("goodput_rps")) return false;
  const bool has_latency = fs::exists(dir / "comparison_latency.csv");
  page.section("Comparison of " + std::to_string(t.rows().size()) + " cases",
               "from " + shown_path(dir) + ": comparison.csv" +
                   (has_latency ? ", comparison_latency.csv" : ""));
  // Several load scales: a policy keeps its colour at every scale, and the CDFs show the
  // cases at scale 1 (all of them would not read).
  std::vector<std::string> labels, keys, cdf_labels, cdf_keys;
  const auto policy_col = t.find_column("policy"), scale_col = t.find_column("load_scale");
  bool scaled = false;
  for (const auto& row : t.rows())
    scaled = scaled || (scale_col && t.number(row, *scale_col) != 1.0);
  for (const auto& row : t.rows()) {
    labels.push_back(t.text(row, t.column("label")));
    keys.push_back(scaled && policy_col ? t.text(row, *policy_col) : labels.back());
    if (!scaled || t.number(row, *scale_col) == 1.0) {
      cdf_labels.push_back(labels.back());
      cdf_keys.push_back(keys.back());
    }
  }
  int baseline = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == "naive") baseline = static_cast<int>(i);
  }
  std::vector<std::string> stage_cols;
  for (const auto& h : t.header()) {
    if (h.rfind("dropped_at_", 0) == 0) stage_cols.push_back(h);
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : t.rows()) {
    const double submitted = std::max(1.0, t.number(row, t.column("submitted")));
    std::vector<std::string> r = {
        t.text(row, t.column("label")), num(t.number(row, t.column("goodput_rps")), 1),
        num(t.number(row, t.column("slo_attainment")), 4),
        num(t.number(row, t.column("drop_rate")), 4),
        num(t.number(row, t.column("late")) / submitted, 4),
        // empty where not measured (an LLM run's)
        t.text(row, t.column("invalid_rate")).empty()
            ? std::string("not measured")
            : num(t.number(row, t.column("invalid_rate")), 4),
        num(t.number(row, t.column("p50_ms")), 1), num(t.number(row, t.column("p99_ms")), 1)};
    for (const auto& h : stage_cols) r.push_back(t.text(row, t.column(h)));
    rows.push_back(std::move(r));
  }
  std::vector<std::string> header = {"case",      "goodput (req/s)", "SLO attainment", "drop rate",
                                     "late rate", "invalid rate",    "p50 (ms)",       "p99 (ms)"};
  for (const auto& h : stage_cols) header.push_back("dropped at " + h.substr(11));
  page.table(header, rows);
  page.note(fmt::format("Baseline (marked in the charts): {}.",
                        labels.empty() ? "-" : labels[static_cast<std::size_t>(baseline)]));

  auto bars = [&](const std::string& title, const std::string& unit, const char* column,
                  double scale) {
    BarChart c{title, labels, {}, unit, baseline, keys};
    for (const auto& row : t.rows()) c.values.push_back(scale * t.number(row, t.column(column)));
    return c;
  };
  page.subsection("Per-case metrics");
  page.figure(render_bar_svg({bars("Goodput", "requests/s", "goodput_rps", 1.0),
                              bars("SLO attainment", "% of requests", "slo_attainment", 100.0)},
                             480, &page.palette()),
              "Higher is better. The baseline's bar is outlined; the dashed line is its value.");
  page.figure(render_bar_svg({bars("Drop rate", "% of requests", "drop_rate", 100.0),
                              bars("p99 latency", "ms", "p99_ms", 1.0)},
                             480, &page.palette()),
              "Lower is better.");
  if (has_latency) {
    latency_cdfs(page, dir / "comparison_latency.csv", cdf_labels, cdf_keys,
                 scaled ? "The cases at load scale 1; a curve further left and higher is faster."
                        : "One curve per case; a curve further left and higher is faster.");
  }
  return true;
}

}  // namespace tessera::report
