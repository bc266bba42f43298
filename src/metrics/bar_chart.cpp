// render_bar_svg (declared in metrics/svg_chart.hpp): horizontal bar charts side by side.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "metrics/svg_chart.hpp"

namespace tessera {
namespace {

constexpr int kTop = 30, kBarH = 16, kGap = 6, kAxisH = 38;
constexpr std::size_t kLabelChars = 20;

void render_bars(std::string& svg, const BarChart& chart, const std::vector<std::string>& shown,
                 int left, int width, int rows, Palette& palette) {
  double label_w = 40;
  for (const auto& l : shown) label_w = std::max(label_w, text_width(l, 11) + 10);
  const int lw = static_cast<int>(label_w);
  const int plot_x = left + lw, plot_w = width - lw - 48;
  const int plot_h = rows * (kBarH + kGap);
  double v_max = 0;
  for (double v : chart.values) v_max = std::max(v_max, std::isfinite(v) ? v : 0.0);
  const std::vector<double> ticks = nice_ticks(0.0, v_max > 0 ? v_max : 1.0, 4);
  const double top_v = ticks.back();
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1.0;
  auto px = [&](double v) { return plot_x + plot_w * std::max(0.0, v) / top_v; };

  svg += fmt::format("<text x='{}' y='18' font-size='13' font-weight='bold'>{}</text>\n", left + 4,
                     xml_escape(chart.title));
  for (double t : ticks) {
    svg += fmt::format(
        "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='#e4e4e4'/>"
        "<text x='{0:.1f}' y='{3}' font-size='10' text-anchor='middle'>{4}</text>\n",
        px(t), kTop - 2, kTop + plot_h, kTop + plot_h + 13, format_tick(t, step));
  }
  svg += fmt::format("<text x='{}' y='{}' font-size='11' text-anchor='middle'>{}</text>\n",
                     plot_x + plot_w / 2, kTop + plot_h + 29, xml_escape(chart.unit));
  for (std::size_t i = 0; i < chart.values.size(); ++i) {
    const int y = kTop + static_cast<int>(i) * (kBarH + kGap);
    const double v = std::isfinite(chart.values[i]) ? chart.values[i] : 0.0;
    const double w = px(v) - plot_x;
    const bool base = static_cast<int>(i) == chart.baseline;
    svg += fmt::format(
        "<text x='{}' y='{}' font-size='11' text-anchor='end'{}>{}</text>\n"
        "<rect x='{}' y='{}' width='{:.1f}' height='{}' fill='{}'{}/>\n",
        plot_x - 5, y + kBarH - 4, base ? " font-weight='bold'" : "", xml_escape(shown[i]), plot_x,
        y, w, kBarH,
        palette.color_for(i < chart.color_keys.size() ? chart.color_keys[i] : chart.labels[i]),
        base ? " stroke='#000' stroke-width='2'" : "");
  }
  // The value labels: outside a bar (with a white halo), or inside a bar too long for
  // that. Each label's horizontal extent is kept, so the baseline's line can leave a gap.
  struct Label {
    std::string text;
    bool inside;
    double x;       // the anchor
    double x0, x1;  // the extent
  };
  std::vector<Label> labels;
  for (std::size_t i = 0; i < chart.values.size(); ++i) {
    const double w = px(std::isfinite(chart.values[i]) ? chart.values[i] : 0.0) - plot_x;
    const bool base = static_cast<int>(i) == chart.baseline;
    Label l{format_value(chart.values[i]) + (base ? " (baseline)" : ""), false, 0, 0, 0};
    const double tw = text_width(l.text, 10);
    l.inside = w + tw + 6 > plot_w + 44;
    l.x = l.inside ? plot_x + w - 3 : plot_x + w + 3;
    l.x0 = l.inside ? l.x - tw : l.x;
    l.x1 = l.inside ? l.x : l.x + tw;
    labels.push_back(std::move(l));
  }
  // The baseline's value as a dashed line down the plot, broken for the height of each
  // row whose label it would cross.
  if (chart.baseline >= 0 && static_cast<std::size_t>(chart.baseline) < chart.values.size()) {
    const double x = px(chart.values[static_cast<std::size_t>(chart.baseline)]);
    double from = kTop - 4;
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (x < labels[i].x0 - 2 || x > labels[i].x1 + 2) continue;
      const double gap_top = kTop + static_cast<double>(i) * (kBarH + kGap) + 1;
      if (gap_top > from) {
        svg += fmt::format(
            "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1:g}' y2='{2:g}' stroke='#000' "
            "stroke-dasharray='4 3'/>\n",
            x, from, gap_top);
      }
      from = gap_top + kBarH + 1;
    }
    if (kTop + plot_h > from) {
      svg += fmt::format(
          "<line x1='{0:.1f}' x2='{0:.1f}' y1='{1:g}' y2='{2}' stroke='#000' "
          "stroke-dasharray='4 3'/>\n",
          x, from, kTop + plot_h);
    }
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const int y = kTop + static_cast<int>(i) * (kBarH + kGap);
    const Label& l = labels[i];
    svg += fmt::format(
        "<text x='{:.1f}' y='{}' font-size='10' text-anchor='{}' fill='{}'{}>{}</text>\n", l.x,
        y + kBarH - 4, l.inside ? "end" : "start", l.inside ? "#fff" : "#000",
        l.inside ? "" : " stroke='#fff' stroke-width='3' paint-order='stroke'", xml_escape(l.text));
  }
}

}  // namespace

std::string render_bar_svg(const std::vector<BarChart>& charts, int chart_width, Palette* palette) {
  Palette local;
  Palette& pal = palette != nullptr ? *palette : local;
  int rows = 1;
  std::vector<ShortLabels> shown;
  std::vector<std::string> key;
  for (const auto& c : charts) {
    rows = std::max(rows, static_cast<int>(c.values.size()));
    shown.push_back(shorten_labels(c.labels, kLabelChars));
    for (const auto& k : shown.back().key) {
      if (std::find(key.begin(), key.end(), k) == key.end()) key.push_back(k);
    }
  }
  const int charts_h = kTop + rows * (kBarH + kGap) + kAxisH;
  const int height = charts_h + (key.empty() ? 0 : 6 + 15 * static_cast<int>(key.size()));
  const int width = chart_width * static_cast<int>(std::max<std::size_t>(1, charts.size()));
  std::string svg = fmt::format(
      "<svg xmlns='http://www.w3.org/2000/svg' width='{0}' height='{1}' viewBox='0 0 {0} {1}' "
      "font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n",
      width, height);
  for (std::size_t i = 0; i < charts.size(); ++i) {
    render_bars(svg, charts[i], shown[i].shown, static_cast<int>(i) * chart_width, chart_width,
                rows, pal);
  }
  for (std::size_t k = 0; k < key.size(); ++k) {
    svg += fmt::format("<text x='8' y='{}' font-size='11' fill='#333'>{}</text>\n",
                       charts_h + 6 + 15 * static_cast<int>(k), xml_escape(key[k]));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tessera
