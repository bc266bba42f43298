#include "sim/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace tessera {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#2ca02c", "#d62728", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten.
double nice_ceiling(double v) {
  if (v <= 0) return 1.0;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (v <= m * p) return m * p;
  }
  return 10.0 * p;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

void render_one(std::ostringstream& svg, const Chart& chart, int top, int width, int height) {
  const int left = 70, right = 160, pad_top = 30, pad_bottom = 40;
  const int plot_w = width - left - right, plot_h = height - pad_top - pad_bottom;
  std::size_t n = 0;
  double y_max = 0;
  for (const auto& s : chart.series) {
    n = std::max(n, s.values.size());
    for (double v : s.values) y_max = std::max(y_max, v);
  }
  y_max = nice_ceiling(y_max);
  const double x_max = std::max(1.0, static_cast<double>(n > 0 ? n - 1 : 1) * chart.x_step);
  auto px = [&](double x) { return left + plot_w * x / x_max; };
  auto py = [&](double y) { return top + pad_top + plot_h * (1.0 - y / y_max); };

  svg << "<text x='" << left << "' y='" << top + 18 << "' font-size='15' font-weight='bold'>"
      << escape(chart.title) << "</text>\n";
  svg << "<rect x='" << left << "' y='" << top + pad_top << "' width='" << plot_w << "' height='"
      << plot_h << "' fill='none' stroke='#999'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = y_max * i / 4.0;
    svg << "<line x1='" << left << "' x2='" << left + plot_w << "' y1='" << py(y) << "' y2='"
        << py(y) << "' stroke='#eee'/>\n";
    svg << "<text x='" << left - 6 << "' y='" << py(y) + 4 << "' font-size='11' text-anchor='end'>"
        << y << "</text>\n";
    const double x = x_max * i / 4.0;
    svg << "<text x='" << px(x) << "' y='" << top + pad_top + plot_h + 16
        << "' font-size='11' text-anchor='middle'>" << std::round(x * 10) / 10 << "</text>\n";
  }
  svg << "<text x='" << left + plot_w / 2 << "' y='" << top + height - 6
      << "' font-size='12' text-anchor='middle'>" << escape(chart.x_label) << "</text>\n";
  svg << "<text x='14' y='" << top + pad_top + plot_h / 2
      << "' font-size='12' transform='rotate(-90 14 " << top + pad_top + plot_h / 2
      << ")' text-anchor='middle'>" << escape(chart.y_label) << "</text>\n";
  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const auto& s = chart.series[k];
    const char* color = kColors[k % (sizeof(kColors) / sizeof(kColors[0]))];
    svg << "<polyline fill='none' stroke='" << color << "' stroke-width='1.5' points='";
    for (std::size_t i = 0; i < s.values.size(); ++i) {
      svg << px(static_cast<double>(i) * chart.x_step) << ',' << py(s.values[i]) << ' ';
    }
    svg << "'/>\n";
    const int ly = top + pad_top + 14 + static_cast<int>(k) * 18;
    svg << "<line x1='" << left + plot_w + 10 << "' x2='" << left + plot_w + 28 << "' y1='"
        << ly - 4 << "' y2='" << ly - 4 << "' stroke='" << color << "' stroke-width='3'/>\n";
    svg << "<text x='" << left + plot_w + 32 << "' y='" << ly << "' font-size='11'>"
        << escape(s.name) << "</text>\n";
  }
}

void render_bars(std::ostringstream& svg, const BarChart& chart, int left, int width, int height) {
  const int label_w = 130, top = 30, bar_h = 16, gap = 6;
  double v_max = 0;
  for (double v : chart.values) v_max = std::max(v_max, v);
  v_max = nice_ceiling(v_max);
  const int plot_w = width - label_w - 50;
  svg << "<text x='" << left + 4 << "' y='18' font-size='14' font-weight='bold'>"
      << escape(chart.title) << "</text>\n";
  for (std::size_t i = 0; i < chart.values.size(); ++i) {
    const int y = top + static_cast<int>(i) * (bar_h + gap);
    const double w = plot_w * chart.values[i] / v_max;
    svg << "<text x='" << left + label_w - 4 << "' y='" << y + bar_h - 4
        << "' font-size='11' text-anchor='end'>" << escape(chart.labels[i]) << "</text>\n";
    svg << "<rect x='" << left + label_w << "' y='" << y << "' width='" << w << "' height='"
        << bar_h << "' fill='" << kColors[i % (sizeof(kColors) / sizeof(kColors[0]))] << "'/>\n";
    std::ostringstream value;
    value.precision(3);
    value << chart.values[i];
    svg << "<text x='" << left + label_w + w + 4 << "' y='" << y + bar_h - 4 << "' font-size='10'>"
        << value.str() << "</text>\n";
  }
  (void)height;
}

}  // namespace

std::string render_bar_svg(const std::vector<BarChart>& charts, int chart_width) {
  std::size_t rows = 1;
  for (const auto& c : charts) rows = std::max(rows, c.values.size());
  const int height = 40 + static_cast<int>(rows) * 22;
  const int width = chart_width * static_cast<int>(std::max<std::size_t>(1, charts.size()));
  std::ostringstream svg;
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
      << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  for (std::size_t i = 0; i < charts.size(); ++i) {
    render_bars(svg, charts[i], static_cast<int>(i) * chart_width, chart_width, height);
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string render_svg(const std::vector<Chart>& charts, int width, int chart_height) {
  std::ostringstream svg;
  const int total = chart_height * static_cast<int>(std::max<std::size_t>(1, charts.size()));
  svg << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << total
      << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  for (std::size_t i = 0; i < charts.size(); ++i) {
    render_one(svg, charts[i], static_cast<int>(i) * chart_height, width, chart_height);
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace tessera
