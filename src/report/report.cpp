#include "report/report.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "report/sections.hpp"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;

// Adds every section DIR's files call for; returns whether any did.
bool add_sections(HtmlPage& page, const fs::path& dir) {
  bool any = add_plan_section(page, dir);
  any = add_replan_section(page, dir) || any;
  any = add_run_section(page, dir) || any;
  any = add_compare_section(page, dir) || any;
  return any;
}

}  // namespace

std::string build_report(const fs::path& dir, const std::string& title) {
  if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": not a folder");
  const std::string name = fs::absolute(dir).lexically_normal().filename().string();
  HtmlPage page(title.empty() ? "tessera report: " + (name.empty() ? dir.string() : name) : title);
  add_sections(page, dir);
  // Subfolders in name order (a replan's <space>/ folders hold only bins.csv: skipped).
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) subdirs.push_back(e.path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& sub : subdirs) add_sections(page, sub);
  if (page.empty()) {
    throw std::runtime_error(dir.string() +
                             ": no tessera output here (summary.json, comparison.csv, plan.json, "
                             "max_demand.json), nor in its subfolders");
  }
  return page.render();
}

fs::path write_report_html(const fs::path& dir, const fs::path& out, const std::string& title) {
  const std::string html = build_report(dir, title);
  const fs::path file = out.empty() ? dir / "report.html" : out;
  std::ofstream f(file);
  if (!f) throw std::runtime_error("cannot write " + file.string());
  f << html;
  return file;
}

}  // namespace tessera::report
