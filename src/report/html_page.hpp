#pragma once

// One self-contained HTML page (inline CSS, inline SVG, a few lines of inline script; no
// network access): sections of tables, notes and figures. After the page loads, the
// script counts the drawn charts and records the result on <body> (data-charts,
// data-report-ready) and in the #report-status line, so a headless browser can check that
// the page loaded and drew. One Palette serves each section, so a series name keeps its
// colour in every chart of the section (and the fixed names, such as goodput or A+S, on
// every page); each section starts a fresh one, so a few tasks or policies never run out
// of distinct colours.

#include <string>
#include <vector>

#include "metrics/chart_style.hpp"

namespace tessera::report {

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  void section(const std::string& title, const std::string& source);  // source: files read
  void subsection(const std::string& title);
  void note(const std::string& text);
  // A table; cells that parse as numbers are right-aligned.
  void table(const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows);
  // A chart (an <svg> document from metrics/svg_chart.hpp) with a caption.
  void figure(const std::string& svg, const std::string& caption);

  Palette& palette() { return palette_; }
  int figures() const { return figures_; }
  bool empty() const { return sections_ == 0; }
  std::string render() const;

 private:
  std::string title_;
  std::string body_;
  std::string toc_;
  Palette palette_;
  int figures_ = 0;
  int sections_ = 0;
};

}  // namespace tessera::report
