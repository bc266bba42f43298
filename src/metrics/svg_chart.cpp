#include "metrics/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace tessera {
namespace {

constexpr int kLeft = 64, kPadTop = 30, kPadBottom = 44, kLegendMax = 320;
constexpr std::size_t kLegendChars = 30;
// Marker labels: font size, gap to their line, row height (rows from the plot's top).
constexpr double kMarkerFont = 10, kMarkerGap = 3, kMarkerRow = 12;

double x_of(const ChartSeries& s, const Chart& c, std::size_t i) {
  return s.x.empty() ? c.x_origin + static_cast<double>(i) * c.x_step : s.x[i];
}

bool same_series(const ChartSeries& a, const ChartSeries& b) {
  return a.values == b.values && a.x == b.x;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// The legend's text for series k: its (shortened) name, and for a series identical to an
// earlier one "(= that one)", or "(= line N)" when the name would make it too long.
std::string legend_text(const Chart& chart, const ShortLabels& names, std::size_t k,
                        bool* identical = nullptr) {
  std::string text = names.shown[k];
  for (std::size_t j = 0; j < k; ++j) {
    if (same_series(chart.series[j], chart.series[k])) {
      const std::string full = text + " (= " + names.shown[j] + ")";
      text = text_width(full, 11) <= text_width(std::string(kLegendChars + 10, 'x'), 11)
                 ? full
                 : text + " (= line " + std::to_string(j + 1) + ")";
      if (identical != nullptr) *identical = true;
      break;
    }
  }
  return text;
}

// A label's box in SVG units.
struct Box {
  double x0, x1, y0, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

double marker_label_width(const ChartMarker& m) { return text_width(m.label, kMarkerFont); }

// Widens the x range [lo, hi] (axis units: log10 on a log axis) to the right until each
// marker's label fits right of its line inside the plot, so that the markers at the top
// of the range (a p99 beside the SLO) neither crowd the frame nor need to put a label
// across another marker's line.
void make_room_for_marker_labels(const Chart& chart, double plot_w, double lo, double& hi) {
  for (const ChartMarker& m : chart.markers) {
    if (chart.log_x && !(m.x > 0)) continue;
    const double v = chart.log_x ? std::log10(m.x) : m.x;
    const double fits = (plot_w - marker_label_width(m) - 2 * kMarkerGap - 2) / plot_w;
    if (fits < 0.5 || !(hi > lo) || v <= lo) continue;  // a label wider than half the plot
    if ((v - lo) / (hi - lo) > fits) hi = lo + (v - lo) / fits;
  }
}

// Places the marker labels: each in the first row from the top, right of its line or else
// left of it, whose box stays inside the plot, overlaps no label placed before and crosses
// no other marker's line; where markers stand too close for that (a p99 a few pixels
// from the SLO), the first such place that may cross lines (which are then broken around
// it: marker_line_svg()). Returns, per marker, its label's box.
std::vector<Box> place_marker_labels(const std::vector<double>& xs,
                                     const std::vector<double>& widths, double plot_left,
                                     double plot_right, double plot_top, double plot_h) {
  const int rows = std::max(1, static_cast<int>((plot_h - 4) / kMarkerRow));
  std::vector<Box> placed;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    auto fits = [&](const Box& b, bool may_cross_lines) {
      if (b.x0 < plot_left + 1 || b.x1 > plot_right - 1) return false;
      for (std::size_t j = 0; j < xs.size() && !may_cross_lines; ++j) {
        if (j != k && xs[j] >= b.x0 - 1 && xs[j] <= b.x1 + 1) return false;
      }
      return std::none_of(placed.begin(), placed.end(),
                          [&](const Box& p) { return p.overlaps(b); });
    };
    auto box_at = [&](int row, bool right) {
      const double base = plot_top + 11 + row * kMarkerRow;
      return right ? Box{xs[k] + kMarkerGap, xs[k] + kMarkerGap + widths[k], base - 9, base + 2}
                   : Box{xs[k] - kMarkerGap - widths[k], xs[k] - kMarkerGap, base - 9, base + 2};
    };
    std::optional<Box> chosen;
    for (const bool may_cross_lines : {false, true}) {
      for (int row = 0; row < rows && !chosen; ++row) {
        for (const bool right : {true, false}) {
          if (fits(box_at(row, right), may_cross_lines)) {
            chosen = box_at(row, right);
            break;
          }
        }
      }
      if (chosen) break;
    }
    // No free place (more markers than rows): a row per marker, right unless at the edge.
    if (!chosen) {
      chosen = box_at(static_cast<int>(k) % rows, xs[k] + kMarkerGap + widths[k] <= plot_right);
    }
    placed.push_back(*chosen);
  }
  return placed;
}

// Marker k's dashed line from y0 to y1, broken around the labels of other markers that
// stand across it.
std::string marker_line_svg(std::size_t k, const std::vector<double>& xs,
                            const std::vector<Box>& labels, double y0, double y1) {
  std::vector<std::pair<double, double>> gaps;
  for (std::size_t j = 0; j < labels.size(); ++j) {
    const Box& b = labels[j];
    if (j != k && xs[k] >= b.x0 - 1 && xs[k] <= b.x1 + 1) gaps.emplace_back(b.y0 - 1, b.y1 + 1);
  }
  std::sort(gaps.begin(), gaps.end());
  std::string svg;
  double from = y0;
  auto segment = [&](double a, double b) {
    if (b - a < 0.5) return;
    svg += fmt::format(
        "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1:g}' y2='{2:g}' stroke='#555' "
        "stroke-dasharray='4 3'/>",
        xs[k], a, b);
  };
  for (const auto& [top, bottom] : gaps) {
    segment(from, std::min(top, y1));
    from = std::max(from, bottom);
  }
  segment(from, y1);
  return svg;
}

// Legend column width for these (already shortened) names.
int legend_width(const std::vector<Chart>& charts, const std::vector<ShortLabels>& names) {
  double w = 170;
  for (std::size_t c = 0; c < charts.size(); ++c) {
    for (std::size_t k = 0; k < names[c].shown.size(); ++k) {
      w = std::max(w, text_width(legend_text(charts[c], names[c], k), 11) + 34);
    }
  }
  return std::min(static_cast<int>(w), kLegendMax);
}

void render_one(std::string& svg, const Chart& chart, const ShortLabels& names, int top, int width,
                int height, int legend_w, Palette& palette) {
  const int plot_w = width - kLeft - legend_w - 16, plot_h = height - kPadTop - kPadBottom;
  const int plot_top = top + kPadTop;
  Range xr, yr;
  for (const auto& s : chart.series) {
    for (std::size_t i = 0; i < s.values.size(); ++i) {
      const double x = x_of(s, chart, i);
      if (chart.log_x && !(x > 0)) continue;
      xr.add(x);
      yr.add(s.values[i]);
    }
  }
  for (const auto& m : chart.markers) {
    if (!chart.log_x || m.x > 0) xr.add(m.x);
  }
  if (xr.empty()) xr = {chart.log_x ? 1.0 : 0.0, chart.log_x ? 10.0 : 1.0};
  if (!(xr.hi > xr.lo)) xr.hi = chart.log_x ? xr.lo * 10 : xr.lo + 1;
  const double y_lo = std::min(0.0, yr.empty() ? 0.0 : yr.lo);
  double y_hi = chart.y_max > 0 ? chart.y_max : (yr.empty() ? 1.0 : std::max(yr.hi, 0.0));
  if (!(y_hi > y_lo)) y_hi = y_lo + 1.0;
  const std::vector<double> yt = nice_ticks(y_lo, y_hi, 5);
  // The plot reaches 4 % above the top tick, so a series at its maximum (100 %, say)
  // does not merge with the frame, and the ticks stay round.
  const double y0 = yt.front(), y1 = yt.back() + 0.04 * (yt.back() - yt.front());
  const double x_lo = chart.log_x ? std::log10(xr.lo) : xr.lo;
  double x_hi = chart.log_x ? std::log10(xr.hi) : xr.hi;
  make_room_for_marker_labels(chart, plot_w, x_lo, x_hi);
  xr.hi = chart.log_x ? std::pow(10.0, x_hi) : x_hi;
  auto px = [&](double x) {
    const double v = chart.log_x ? std::log10(x) : x;
    return kLeft + plot_w * (v - x_lo) / (x_hi - x_lo);
  };
  auto py = [&](double y) { return plot_top + plot_h * (1.0 - (y - y0) / (y1 - y0)); };

  svg += fmt::format("<text x='{}' y='{}' font-size='14' font-weight='bold'>{}</text>\n", kLeft,
                     top + 18, xml_escape(chart.title));
  const double y_step = yt.size() > 1 ? yt[1] - yt[0] : 1.0;
  for (double y : yt) {
    svg += fmt::format(
        "<line x1='{}' x2='{}' y1='{:.1f}' y2='{:.1f}' stroke='#e4e4e4'/>"
        "<text x='{}' y='{:.1f}' font-size='11' text-anchor='end'>{}</text>\n",
        kLeft, kLeft + plot_w, py(y), py(y), kLeft - 6, py(y) + 4, format_tick(y, y_step));
  }
  const std::vector<double> xt =
      chart.log_x ? log_ticks(xr.lo, xr.hi) : nice_ticks(xr.lo, xr.hi, std::max(3, plot_w / 90));
  const double x_step = xt.size() > 1 ? xt[1] - xt[0] : 1.0;
  for (double x : xt) {
    if (x < xr.lo * (1 - 1e-9) - 1e-12 || x > xr.hi * (1 + 1e-9) + 1e-12) continue;
    const double step = chart.log_x ? x / 10 : x_step;
    svg += fmt::format(
        "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='#f0f0f0'/>"
        "<line x1='{0:.1f}' x2='{0:.1f}' y1='{2}' y2='{3}' stroke='#999'/>"
        "<text x='{0:.1f}' y='{4}' font-size='11' text-anchor='middle'>{5}</text>\n",
        px(x), plot_top, plot_top + plot_h, plot_top + plot_h + 4, plot_top + plot_h + 16,
        format_tick(x, step));
  }
  svg += fmt::format(
      "<rect x='{}' y='{}' width='{}' height='{}' fill='none' stroke='#999'/>\n"
      "<text x='{}' y='{}' font-size='12' text-anchor='middle'>{}</text>\n"
      "<text x='14' y='{}' font-size='12' transform='rotate(-90 14 {})' "
      "text-anchor='middle'>{}</text>\n",
      kLeft, plot_top, plot_w, plot_h, kLeft + plot_w / 2, top + height - 8,
      xml_escape(chart.x_label), plot_top + plot_h / 2, plot_top + plot_h / 2,
      xml_escape(chart.y_label));
  std::vector<const ChartMarker*> shown_markers;
  std::vector<double> marker_x, label_w;
  for (const ChartMarker& m : chart.markers) {
    if (chart.log_x && !(m.x > 0)) continue;
    shown_markers.push_back(&m);
    marker_x.push_back(px(m.x));
    label_w.push_back(marker_label_width(m));
  }
  const std::vector<Box> boxes =
      place_marker_labels(marker_x, label_w, kLeft, kLeft + plot_w, plot_top, plot_h);
  for (std::size_t k = 0; k < shown_markers.size(); ++k) {
    const bool right = boxes[k].x0 > marker_x[k];
    svg += marker_line_svg(k, marker_x, boxes, plot_top, plot_top + plot_h);
    svg += fmt::format(
        "<text x='{:.1f}' y='{:.0f}' font-size='{:g}' fill='#333' text-anchor='{}' "
        "stroke='#fff' stroke-width='3' paint-order='stroke'>{}</text>\n",
        right ? boxes[k].x0 : boxes[k].x1, boxes[k].y1 - 2, kMarkerFont, right ? "start" : "end",
        xml_escape(shown_markers[k]->label));
  }
  const int legend_x = kLeft + plot_w + 12;
  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const ChartSeries& s = chart.series[k];
    const std::string key = s.color_key.empty() ? s.name : s.color_key;
    const std::string color = palette.color_for(key);
    std::string dash = palette.dash_for(key);
    bool identical = false;
    const std::string text = legend_text(chart, names, k, &identical);
    if (identical) dash = "6 5";
    const std::string dash_attr = dash.empty() ? "" : " stroke-dasharray='" + dash + "'";
    svg += fmt::format("<polyline fill='none' stroke='{}' stroke-width='1.6'{} points='", color,
                       dash_attr);
    // Points closer than half a pixel to the last one drawn add nothing visible: left out
    // (the last point always drawn), which keeps long series and CDFs small.
    double last_x = -1e9, last_y = -1e9;
    for (std::size_t i = 0; i < s.values.size(); ++i) {
      const double x = x_of(s, chart, i);
      if ((chart.log_x && !(x > 0)) || !std::isfinite(s.values[i])) continue;
      const double X = px(x), Y = py(s.values[i]);
      if (i + 1 < s.values.size() && std::abs(X - last_x) < 0.5 && std::abs(Y - last_y) < 0.5)
        continue;
      svg += fmt::format("{:.1f},{:.1f} ", X, Y);
      last_x = X;
      last_y = Y;
    }
    svg += "'/>\n";
    const int ly = plot_top + 10 + static_cast<int>(k) * 16;
    svg += fmt::format(
        "<line x1='{}' x2='{}' y1='{}' y2='{}' stroke='{}' stroke-width='3'{}/>"
        "<text x='{}' y='{}' font-size='11'>{}</text>\n",
        legend_x, legend_x + 22, ly - 4, ly - 4, color, dash_attr, legend_x + 26, ly,
        xml_escape(text));
  }
}

}  // namespace

std::string render_svg(const std::vector<Chart>& charts, int width, int chart_height,
                       Palette* palette) {
  Palette local;
  Palette& pal = palette != nullptr ? *palette : local;
  std::vector<ShortLabels> names;
  std::vector<std::string> key;
  for (const Chart& c : charts) {
    std::vector<std::string> labels;
    for (const auto& s : c.series) labels.push_back(s.name);
    names.push_back(shorten_labels(labels, kLegendChars));
    for (const auto& k : names.back().key) {
      if (std::find(key.begin(), key.end(), k) == key.end()) key.push_back(k);
    }
  }
  const int legend_w = legend_width(charts, names);
  const int charts_h = chart_height * static_cast<int>(std::max<std::size_t>(1, charts.size()));
  const int total = charts_h + (key.empty() ? 0 : 10 + 15 * static_cast<int>(key.size()));
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{0}' height='{1}' viewBox='0 0 {0} {1}' "
      "font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n",
      width, total);
  for (std::size_t i = 0; i < charts.size(); ++i) {
    render_one(svg, charts[i], names[i], static_cast<int>(i) * chart_height, width, chart_height,
               legend_w, pal);
  }
  for (std::size_t k = 0; k < key.size(); ++k) {
    svg += fmt::format("<text x='{}' y='{}' font-size='11' fill='#333'>{}</text>\n", kLeft,
                       charts_h + 10 + 15 * static_cast<int>(k), xml_escape(key[k]));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tessera
