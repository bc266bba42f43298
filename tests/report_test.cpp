// The chart drawing rules (round ticks, colours by name, shortened labels with a key,
// identical series told apart, the replan day without its phantom bin) and report.html
// built from each kind of output folder.

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "control/replan_report.hpp"
#include "metrics/report.hpp"
#include "metrics/svg_chart.hpp"
#include "report/report.hpp"
#include "report_fixtures.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using namespace testing_fixtures;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// True when v is 1, 2 or 5 times a power of ten.
bool is_nice_step(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v) + 1e-9));
  const double m = v / p;
  return std::abs(m - 1) < 1e-9 || std::abs(m - 2) < 1e-9 || std::abs(m - 5) < 1e-9;
}

TEST(ChartStyle, TicksAreRoundAndCoverTheRange) {
  for (auto [lo, hi] : std::vector<std::pair<double, double>>{
           {0, 128.3}, {0, 42.8}, {0, 0.0173}, {0, 1}, {3.2, 171.8}, {0, 7}, {-4, 9}}) {
    const auto t = nice_ticks(lo, hi, 5);
    ASSERT_GE(t.size(), 2u) << lo << " " << hi;
    EXPECT_LE(t.front(), lo);
    EXPECT_GE(t.back(), hi);
    EXPECT_LE(t.size(), 12u);
    EXPECT_TRUE(is_nice_step(t[1] - t[0])) << t[1] - t[0];
  }
  EXPECT_EQ(nice_ticks(0, 128.3, 5), (std::vector<double>{0, 50, 100, 150}));
  EXPECT_EQ(format_tick(0.3, 0.1), "0.3");
  EXPECT_EQ(format_tick(150, 50), "150");
  EXPECT_EQ(format_tick(20000, 5000), "20k");
  EXPECT_EQ(log_ticks(11, 1258), (std::vector<double>{20, 50, 100, 200, 500, 1000}));
}

TEST(ChartStyle, LongLabelsGetAKeyAndStayUnique) {
  const auto s = shorten_labels({"slackfit", "clipper+:d00000-e210011001111001100-w210000",
                                 "clipper+:d02100-e222211001222001200-w210000"},
                                20);
  EXPECT_EQ(s.shown[0], "slackfit");
  EXPECT_NE(s.shown[1], s.shown[2]);
  for (const auto& l : s.shown) EXPECT_LE(text_width(l, 11), text_width(std::string(20, 'x'), 11));
  ASSERT_EQ(s.key.size(), 2u);
  EXPECT_EQ(s.key[0], "[1] clipper+:d00000-e210011001111001100-w210000");
}

TEST(ChartStyle, PaletteKeepsColoursByNameAndAvoidsTheOutcomeColours) {
  Palette p;
  const std::string goodput = p.color_for("goodput");
  const std::string task = p.color_for("object_detection");
  EXPECT_NE(task, goodput);
  EXPECT_NE(p.color_for("facial_recognition"), task);
  EXPECT_EQ(p.color_for("object_detection"), task);
  Palette other;
  EXPECT_EQ(other.color_for("A+S"), p.color_for("A+S"));  // fixed across pages
  EXPECT_EQ(other.color_for("goodput"), goodput);
}

TEST(SvgChart, IdenticalSeriesAreDashedAndNamed) {
  Chart c{
      "t", "time (s)", "requests/s", 1.0, {{"a", {1, 2, 3}}, {"b", {1, 2, 3}}, {"c", {3, 2, 1}}}};
  const std::string svg = render_svg({c});
  EXPECT_NE(svg.find("b (= a)"), std::string::npos);
  EXPECT_EQ(svg.find("c (="), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray='6 5'"), std::string::npos);
  EXPECT_NE(svg.find("viewBox="), std::string::npos);
}

TEST(SvgChart, AxesUseRoundTicksAndCarryUnits) {
  Chart c{"rates", "time (s)", "requests/s", 0.5, {{"arrivals", {0, 128.3, 64}}}};
  const std::string svg = render_svg({c});
  EXPECT_NE(svg.find(">150</text>"), std::string::npos);
  EXPECT_EQ(svg.find("128.3"), std::string::npos);
  EXPECT_NE(svg.find(">requests/s</text>"), std::string::npos);
  EXPECT_NE(svg.find(">time (s)</text>"), std::string::npos);
}

TEST(SvgChart, BarLabelsAreShortenedWithAKeyAndTheBaselineMarked) {
  BarChart b{"Goodput",
             {"naive", "clipper+:d00000-e210011001111001100-w210000"},
             {10, 20},
             "requests/s",
             0};
  const std::string svg = render_bar_svg({b});
  EXPECT_NE(svg.find("[1] clipper+:d00000-e210011001111001100-w210000"), std::string::npos);
  EXPECT_NE(svg.find("(baseline)"), std::string::npos);
  EXPECT_NE(svg.find(">requests/s</text>"), std::string::npos);
}

TEST(ReplanReport, ChartsStopAtTheLastBinWithArrivals) {
  const fs::path dir = scratch_dir("replan_unit");
  write_replan_output(dir);
  control::ReplanResult r;
  r.bins.resize(5);
  for (int b = 0; b < 3; ++b) r.bins[static_cast<std::size_t>(b)].demand_rps = 1.0;
  EXPECT_EQ(control::chart_bins(r), 3u);
  // The identical predictions of the two spaces are told apart in day.svg.
  EXPECT_NE(read_file(dir / "day.svg").find("A+S predicted (= A+S+T predicted)"),
            std::string::npos);
}

TEST(Report, SimulateOutputGivesTablesTimeSeriesLatencyAndDrops) {
  const fs::path dir = scratch_dir("simulate");
  write_simulate_output(dir);
  const std::string csv = read_file(dir / "latency_histogram.csv");
  EXPECT_EQ(csv.rfind("lower_ms,upper_ms,count\n", 0), 0u);
  EXPECT_LT(count(csv, "\n"), 1700u);  // bounded by the histogram, not the 8,819 requests
  const std::string html = report::build_report(dir);
  EXPECT_NE(html.find("Simulation: traffic_analysis"), std::string::npos);
  EXPECT_NE(html.find("Latency distribution (CDF)"), std::string::npos);
  EXPECT_NE(html.find("Dropped at each stage"), std::string::npos);
  EXPECT_NE(html.find("Queued items per stage"), std::string::npos);
  EXPECT_EQ(count(html, "<figure class='chart'>"), 4u);
  EXPECT_EQ(html.find("http://") == std::string::npos ||
                html.find("http://") == html.find("http://www.w3.org/2000/svg"),
            true);  // nothing to fetch
}

TEST(Report, LoadgenOutputHasNoEmptyQueuePanelNorZeroStageRows) {
  const fs::path dir = scratch_dir("loadgen");
  write_loadgen_output(dir);
  EXPECT_EQ(read_file(dir / "timeseries.csv").find("queue_"), std::string::npos);
  const std::string html = report::build_report(dir);
  EXPECT_NE(html.find("Load generator: chain"), std::string::npos);
  EXPECT_EQ(html.find("Queued items per stage"), std::string::npos);
  EXPECT_NE(html.find("Queues: not measured"), std::string::npos);
  EXPECT_EQ(html.find("<th>batches</th>"), std::string::npos);
  EXPECT_NE(html.find("HTTP 503"), std::string::npos);
  const auto summary = nlohmann::json::parse(read_file(dir / "summary.json"));
  const std::string table = format_summary(summary);
  EXPECT_EQ(table.find("GPU-s"), std::string::npos) << table;
}

TEST(Report, FolderOfFoldersGetsOneSectionEach) {
  const fs::path dir = scratch_dir("nested");
  write_replan_output(dir / "day");
  write_loadgen_output(dir / "live");
  const std::string html = report::build_report(dir);
  EXPECT_NE(html.find("Re-planned day: fixture_app, 2 search spaces"), std::string::npos);
  EXPECT_NE(html.find("Load generator: chain"), std::string::npos);
  EXPECT_THROW(report::build_report(scratch_dir("empty")), std::runtime_error);
}

}  // namespace
}  // namespace tessera
