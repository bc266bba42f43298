#pragma once

// Self-contained SVG charts (no scripts, no fonts to fetch), so run reports open in any
// browser offline and embed inline in report.html. Drawing rules (chart_style.hpp):
// round ticks, a label with its unit on every axis, legends and keys outside the plot
// area, colours by series name shared by every panel of a document (pass one Palette to
// keep them across documents too), and identical series drawn dashed with a note in the
// legend so neither hides the other. Every <svg> has a viewBox, so it scales with CSS.

#include <string>
#include <vector>

#include "metrics/chart_style.hpp"

namespace tessera {

struct ChartSeries {
  std::string name;
  std::vector<double> values;  // y values: one per x step, or one per x below
  std::vector<double> x{};     // explicit x values (same length as values); empty: i * x_step
  std::string color_key{};     // palette key; empty: the name
};

struct ChartMarker {
  double x = 0.0;  // a vertical reference line at this x, labelled
  std::string label;
};

struct Chart {
  std::string title;
  std::string x_label;  // with its unit, e.g. "time (s)"
  std::string y_label;  // with its unit, e.g. "requests/s"
  double x_step = 1.0;  // x value of sample i is x_origin + i * x_step
  std::vector<ChartSeries> series;
  double x_origin = 0.0;
  bool log_x = false;
  double y_max = 0.0;  // the y axis' top (0: from the data, rounded up to a tick)
  std::vector<ChartMarker> markers{};
};

// A horizontal bar chart: one bar per label, coloured by label.
struct BarChart {
  std::string title;
  std::vector<std::string> labels;
  std::vector<double> values;
  std::string unit{};  // the value axis' label, e.g. "requests/s" or "fraction"
  int baseline = -1;   // index of the baseline bar: outlined, with a reference line
  std::vector<std::string> color_keys{};  // palette key per bar (empty: the labels)
};

// Renders the bar charts side by side into one SVG document; labels too long for the
// label column are shortened, with a key under the charts.
std::string render_bar_svg(const std::vector<BarChart>& charts, int chart_width = 360,
                           Palette* palette = nullptr);

// Renders the charts stacked vertically into one SVG document.
std::string render_svg(const std::vector<Chart>& charts, int width = 900, int chart_height = 260,
                       Palette* palette = nullptr);

}  // namespace tessera
