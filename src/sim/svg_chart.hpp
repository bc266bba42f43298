#pragma once

#include <string>
#include <vector>

namespace tessera {

// A minimal self-contained SVG line chart, so run reports can be looked at in any
// browser without a plotting toolchain.
struct ChartSeries {
  std::string name;
  std::vector<double> values;  // one per x step
};

struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  double x_step = 1.0;  // x value of sample i is i * x_step
  std::vector<ChartSeries> series;
};

// A horizontal bar chart: one bar per label.
struct BarChart {
  std::string title;
  std::vector<std::string> labels;
  std::vector<double> values;
};

// Renders the bar charts side by side into one SVG document.
std::string render_bar_svg(const std::vector<BarChart>& charts, int chart_width = 360);

// Renders the charts stacked vertically into one SVG document.
std::string render_svg(const std::vector<Chart>& charts, int width = 900, int chart_height = 260);

}  // namespace tessera
