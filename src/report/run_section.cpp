// The report section of one run: `tessera simulate` or `tessera loadgen` output.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "metrics/svg_chart.hpp"
#include "report/sections.hpp"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Whether summary.json holds a measured number at `key` (a field the run did not measure
// is null, with the reason under "not_measured").
bool measured(const json& s, const char* key) { return s.contains(key) && s[key].is_number(); }

// The row of a field the run did not measure: says so, with the reason.
std::vector<std::string> not_measured_row(const json& s, const std::string& label,
                                          const char* key) {
  const json reasons = s.value("not_measured", json::object());
  return {label, "not measured", reasons.value(key, std::string())};
}

void summary_table(HtmlPage& page, const json& s) {
  const double n = std::max(1.0, s.value("submitted", 0.0));
  auto count = [&](const char* key) {
    return std::vector<std::string>{key, fmt::format("{}", s.value(key, uint64_t{0})),
                                    pct(s.value(key, 0.0) / n)};
  };
  const json lat = s.value("latency_ms", json::object());
  std::vector<std::vector<std::string>> rows = {
      {"submitted", fmt::format("{}", s.value("submitted", uint64_t{0})), ""},
      count("ok"),
      count("late"),
      count("dropped"),
      count("failed"),
      {"offered load", num(s.value("offered_rps", 0.0), 2) + " req/s",
       "over " + num(s.value("duration_s", 0.0), 1) + " s"},
      {"goodput (on time)", num(s.value("goodput_rps", 0.0), 2) + " req/s", ""},
      {"SLO attainment", num(s.value("slo_attainment", 0.0), 4),
       "SLO " + fmt::format("{:g}", s.value("slo_ms", 0.0)) + " ms"},
      measured(s, "mean_accuracy")
          ? std::vector<std::string>{"mean accuracy", num(s["mean_accuracy"].get<double>(), 4), ""}
          : not_measured_row(s, "mean accuracy", "mean_accuracy"),
      {"latency p50 / p90 / p99",
       fmt::format("{:.1f} / {:.1f} / {:.1f} ms", lat.value("p50", 0.0), lat.value("p90", 0.0),
                   lat.value("p99", 0.0)),
       "mean " + num(lat.value("mean", 0.0), 1) + " ms"}};
  if (measured(s, "gpu_seconds") && measured(s, "invalid_rate")) {
    rows.push_back({"invalid (wasted) GPU time", num(s["invalid_rate"].get<double>(), 4),
                    "of " + num(s["gpu_seconds"].get<double>(), 1) + " GPU-s"});
  } else if (measured(s, "gpu_seconds")) {
    rows.push_back({"GPU time", num(s["gpu_seconds"].get<double>(), 1) + " GPU-s", ""});
    rows.push_back(not_measured_row(s, "invalid (wasted) GPU time", "invalid_rate"));
  } else if (s.contains("gpu_seconds")) {
    rows.push_back(not_measured_row(s, "GPU time", "gpu_seconds"));
  }
  const json sub = s.value("subrequests", json());
  if (sub.is_object() && sub.value("total", 0.0) > 0) {
    rows.push_back(
        {"sub-request violations", pct(sub.value("violation_rate", 0.0)),
         num(sub.value("violated", 0.0), 0) + " of " + num(sub["total"].get<double>(), 0)});
  } else if (s.contains("subrequests") && sub.is_null()) {
    rows.push_back(not_measured_row(s, "sub-request violations", "subrequests"));
  }
  page.table({"metric", "value", ""}, rows);
}

// Rates and queues per window, from timeseries.csv.
void timeseries(HtmlPage& page, const fs::path& file) {
  const CsvTable t = CsvTable::read(file, true);
  if (t.rows().size() < 2) return;
  const double w = t.number(t.rows()[1], 0) - t.number(t.rows()[0], 0);
  Chart rates{"Request rates per window", "time (s)", "requests/s", w > 0 ? w : 1.0, {}};
  Chart queues{
      "Queued items per stage (sampled at window end)", "time (s)", "items", w > 0 ? w : 1.0, {}};
  std::vector<std::pair<std::size_t, std::size_t>> where;  // (column, series)
  for (const char* c : {"arrivals", "goodput", "late", "dropped", "failed"}) {
    if (auto col = t.find_column(std::string(c) + "_rps")) {
      where.emplace_back(*col, rates.series.size());
      rates.series.push_back({c, {}});
    }
  }
  std::vector<std::size_t> queue_cols;
  for (std::size_t c = 0; c < t.header().size(); ++c) {
    if (t.header()[c].rfind("queue_", 0) == 0) {
      queue_cols.push_back(c);
      queues.series.push_back({t.header()[c].substr(6), {}});
    }
  }
  for (const auto& row : t.rows()) {
    for (auto [col, k] : where) rates.series[k].values.push_back(t.number(row, col));
    for (std::size_t q = 0; q < queue_cols.size(); ++q)
      queues.series[q].values.push_back(t.number(row, queue_cols[q]));
  }
  // A series that is zero throughout (no failures, say) only clutters the panel.
  std::erase_if(rates.series, [](const ChartSeries& s) {
    return s.name != "arrivals" &&
           std::all_of(s.values.begin(), s.values.end(), [](double v) { return v == 0; });
  });
  page.subsection("Time series");
  page.figure(render_svg({rates}, 900, 280, &page.palette()),
              fmt::format("Requests per second in windows of {:g} s; outcomes are counted in the "
                          "window where the request finished.",
                          w));
  if (!queues.series.empty()) {
    page.figure(render_svg({queues}, 900, 250, &page.palette()),
                "Items queued or in a forming batch at each stage, sampled at each window's end.");
  } else {
    page.note(
        "Queues: not measured (a load generator cannot see the server's queues; an LLM "
        "instance's waiting line is inside its scheduler, where the queue sample does not "
        "look).");
  }
}

// The latency CDF from latency_histogram.csv, with its percentiles and the SLO marked.
void latency(HtmlPage& page, const fs::path& file, const json& s) {
  const CsvTable t = CsvTable::read(file, true);
  const std::size_t up = t.column("upper_ms"), cnt = t.column("count");
  double total = 0;
  for (const auto& row : t.rows()) total += t.number(row, cnt);
  page.subsection("Latency of completed requests");
  if (total <= 0) {
    page.note("No request completed.");
    return;
  }
  ChartSeries cdf{"completed requests", {}};
  double seen = 0;
  for (const auto& row : t.rows()) {
    if (cdf.x.empty()) {
      cdf.x.push_back(t.number(row, t.column("lower_ms")));
      cdf.values.push_back(0.0);
    }
    seen += t.number(row, cnt);
    cdf.x.push_back(t.number(row, up));
    cdf.values.push_back(100.0 * seen / total);
  }
  cdf.color_key = "goodput";
  Chart c{"Latency distribution (CDF)",
          "end-to-end latency (ms, log scale)",
          "% of completed requests",
          1.0,
          {cdf}};
  c.log_x = true;
  c.y_max = 100;
  const json lat = s.value("latency_ms", json::object());
  for (const char* q : {"p50", "p90", "p99"}) {
    if (lat.contains(q)) c.markers.push_back({lat[q].get<double>(), q});
  }
  if (s.value("slo_ms", 0.0) > 0)
    c.markers.push_back(
        {s["slo_ms"].get<double>(), fmt::format("SLO {:g} ms", s["slo_ms"].get<double>())});
  page.figure(render_svg({c}, 900, 300, &page.palette()),
              "From the run's streaming log histogram (1 % buckets): memory does not grow with "
              "the number of requests.");
  std::vector<std::vector<std::string>> rows;
  for (const char* q : {"p50", "p90", "p99", "mean"}) {
    if (lat.contains(q)) rows.push_back({q, num(lat[q].get<double>(), 1)});
  }
  page.table({"latency", "ms"}, rows);
}

// Task names in pipeline order when timeseries.csv's queue columns give it, else in
// summary.json's (alphabetical) order.
std::vector<std::string> task_order(const fs::path& dir, const json& s) {
  std::vector<std::string> order;
  if (fs::exists(dir / "timeseries.csv")) {
    std::ifstream in(dir / "timeseries.csv");
    std::string header, cell;
    std::getline(in, header);
    std::stringstream cells(header);
    while (std::getline(cells, cell, ',')) {
      if (cell.rfind("queue_", 0) == 0) order.push_back(cell.substr(6));
    }
  }
  const json tasks = s.value("tasks", json::object());  // items() needs a named object
  for (const auto& [task, t] : tasks.items()) {
    if (std::find(order.begin(), order.end(), task) == order.end()) order.push_back(task);
  }
  return order;
}

void drops(HtmlPage& page, const json& s, const std::vector<std::string>& order) {
  page.subsection("Drops by stage and reason");
  if (s.value("dropped", uint64_t{0}) == 0 && s.value("failed", uint64_t{0}) == 0) {
    page.note("No request was dropped or failed.");
    return;
  }
  std::vector<BarChart> charts;
  if (s.contains("dropped_by_stage")) {
    BarChart c{"Dropped at each stage", {}, {}, "requests"};
    for (const std::string& task : order) {
      if (!s["dropped_by_stage"].contains(task)) continue;
      c.labels.push_back(task);
      c.values.push_back(s["dropped_by_stage"][task].get<double>());
    }
    charts.push_back(std::move(c));
  }
  if (s.contains("dropped_by_reason") && !s["dropped_by_reason"].empty()) {
    BarChart c{"Dropped for each reason", {}, {}, "requests"};
    for (const auto& [reason, n] : s["dropped_by_reason"].items()) {
      c.labels.push_back(reason);
      c.values.push_back(n.get<double>());
    }
    charts.push_back(std::move(c));
  }
  if (!charts.empty()) page.figure(render_bar_svg(charts, 440, &page.palette()), "");
}

void stages(HtmlPage& page, const json& s, const std::vector<std::string>& order) {
  if (!s.contains("tasks") || !measured(s, "gpu_seconds") || s["gpu_seconds"].get<double>() <= 0)
    return;
  std::vector<std::vector<std::string>> rows;
  for (const std::string& task : order) {
    const json t = s["tasks"].value(task, json::object());
    rows.push_back({task, fmt::format("{}", t.value("batches", uint64_t{0})),
                    measured(t, "mean_batch_size") ? num(t["mean_batch_size"].get<double>(), 2)
                                                   : "not measured",
                    num(t.value("gpu_seconds", 0.0), 1),
                    fmt::format("{}", t.value("dropped", uint64_t{0})),
                    fmt::format("{}", t.value("failed", uint64_t{0}))});
  }
  page.subsection("Stages");
  page.table({"stage", "batches", "mean batch", "GPU-s", "dropped", "failed"}, rows);
}

void client(HtmlPage& page, const json& c) {
  std::vector<std::vector<std::string>> rows;
  const json statuses = c.value("http_status", json::object());
  for (const auto& [status, n] : statuses.items())
    rows.push_back({"HTTP " + status, fmt::format("{}", n.get<uint64_t>())});
  rows.push_back({"sent > 1 ms late", fmt::format("{}", c.value("sent_late", uint64_t{0}))});
  if (c.contains("sent_late_no_free_connection")) {
    rows.push_back({"... all connections busy",
                    fmt::format("{}", c.value("sent_late_no_free_connection", uint64_t{0}))});
    rows.push_back({"... client slow to send",
                    fmt::format("{}", c.value("sent_late_client_slow", uint64_t{0}))});
  }
  rows.push_back({"worst send lag", num(c.value("max_send_lag_ms", 0.0), 1) + " ms"});
  rows.push_back({"connections", fmt::format("{}", c.value("connections", 0))});
  rows.push_back({"wall time", num(c.value("wall_s", 0.0), 1) + " s"});
  page.subsection("Load generator");
  page.table({"client", "value"}, rows);
}

}  // namespace

bool add_run_section(HtmlPage& page, const fs::path& dir) {
  const fs::path summary_file = dir / "summary.json";
  if (!fs::exists(summary_file)) return false;
  const json s = read_json(summary_file);
  if (!s.is_object() || !s.contains("submitted")) return false;
  const bool loadgen = fs::exists(dir / "loadgen.json");
  std::string files = "summary.json";
  for (const char* f : {"timeseries.csv", "latency_histogram.csv", "loadgen.json"}) {
    if (fs::exists(dir / f)) files += std::string(", ") + f;
  }
  page.section(fmt::format("{}: {}", loadgen ? "Load generator" : "Simulation",
                           s.value("app", std::string("run"))),
               "from " + shown_path(dir) + ": " + files);
  summary_table(page, s);
  if (fs::exists(dir / "timeseries.csv")) timeseries(page, dir / "timeseries.csv");
  if (fs::exists(dir / "latency_histogram.csv")) latency(page, dir / "latency_histogram.csv", s);
  const std::vector<std::string> order = task_order(dir, s);
  drops(page, s, order);
  stages(page, s, order);
  if (loadgen) client(page, read_json(dir / "loadgen.json"));
  return true;
}

}  // namespace tessera::report
