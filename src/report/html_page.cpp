#include "report/html_page.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace tessera::report {
namespace {

constexpr const char* kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1a1a1a;background:#fafafa}
header{background:#1f2a36;color:#fff;padding:14px 28px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#c9d3dd;font-size:13px}
nav{padding:8px 28px;background:#eef1f4;font-size:13px}
nav a{margin-right:14px;color:#0b4f8a}
main{max-width:1120px;padding:8px 28px 40px}
section{background:#fff;border:1px solid #e1e4e8;border-radius:6px;padding:6px 18px 14px;margin:16px 0}
h2{font-size:19px;margin:12px 0 2px}
h3{font-size:15px;margin:16px 0 6px;color:#333}
p.source{color:#666;font-size:12px;margin:0 0 8px}
p.note{font-size:13px;color:#333}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
td:first-child{white-space:nowrap}
th,td{border-bottom:1px solid #e6e6e6;padding:3px 10px;text-align:left}
th{background:#f3f5f7}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:10px 0}
figure svg{max-width:100%;height:auto}
figcaption{font-size:12px;color:#555}
#report-status{font-size:12px;color:#666}
)";

constexpr const char* kScript = R"(
(function () {
  var n = document.querySelectorAll('figure.chart svg').length;
  document.body.setAttribute('data-charts', String(n));
  document.body.setAttribute('data-report-ready', 'yes');
  document.getElementById('report-status').textContent = 'report drawn: ' + n + ' charts';
})();
)";

bool numeric(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str() && (*end == '\0' || *end == ' ' || *end == '%');
}

std::string anchor(int n) { return fmt::format("s{}", n); }

}  // namespace

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::section(const std::string& title, const std::string& source) {
  palette_ = Palette();
  if (sections_ > 0) body_ += "</section>\n";
  ++sections_;
  body_ += fmt::format("<section id='{}'><h2>{}</h2><p class='source'>{}</p>\n", anchor(sections_),
                       xml_escape(title), xml_escape(source));
  toc_ += fmt::format("<a href='#{}'>{}</a>", anchor(sections_), xml_escape(title));
}

void HtmlPage::subsection(const std::string& title) {
  body_ += "<h3>" + xml_escape(title) + "</h3>\n";
}

void HtmlPage::note(const std::string& text) {
  body_ += "<p class='note'>" + xml_escape(text) + "</p>\n";
}

void HtmlPage::table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  body_ += "<div class='scroll'><table><tr>";
  for (const auto& h : header) body_ += "<th>" + xml_escape(h) + "</th>";
  body_ += "</tr>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& cell : row) {
      body_ += (numeric(cell) ? "<td class='num'>" : "<td>") + xml_escape(cell) + "</td>";
    }
    body_ += "</tr>\n";
  }
  body_ += "</table></div>\n";
}

void HtmlPage::figure(const std::string& svg, const std::string& caption) {
  ++figures_;
  body_ += "<figure class='chart'>\n";
  // The SVG documents carry an XML namespace but no XML prolog: they inline as they are.
  body_ += svg;
  if (!caption.empty()) body_ += "<figcaption>" + xml_escape(caption) + "</figcaption>\n";
  body_ += "</figure>\n";
}

std::string HtmlPage::render() const {
  std::string html = "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n";
  html += "<meta name='viewport' content='width=device-width, initial-scale=1'>\n";
  html += "<title>" + xml_escape(title_) + "</title>\n<style>" + kStyle + "</style></head>\n";
  html += "<body>\n<header><h1>" + xml_escape(title_) +
          "</h1><p>written by tessera report; self-contained, works offline</p></header>\n";
  html += "<nav>" + toc_ + "</nav>\n<main>\n" + body_;
  if (sections_ > 0) html += "</section>\n";
  html += "<p id='report-status'>report not drawn (scripts disabled?)</p>\n</main>\n";
  html += std::string("<script>") + kScript + "</script>\n</body></html>\n";
  return html;
}

}  // namespace tessera::report
