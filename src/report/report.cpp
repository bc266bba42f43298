#include "report/report.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "report/sections.hpp"

namespace tessera::report {
namespace {

namespace fs = std::filesystem;

using SectionFn = bool (*)(HtmlPage&, const fs::path&);

// The sections in reading order: what was planned, how policies compare on it, single
// runs, then re-planned days.
constexpr SectionFn kSections[] = {add_plan_section, add_compare_section, add_run_section,
                                   add_replan_section};

}  // namespace

std::string build_report(const fs::path& dir, const std::string& title) {
  if (!fs::is_directory(dir)) throw std::runtime_error(dir.string() + ": not a folder");
  const std::string name = fs::absolute(dir).lexically_normal().filename().string();
  HtmlPage page(title.empty() ? "tessera report: " + (name.empty() ? dir.string() : name) : title);
  // DIR, then its subfolders in name order (a replan's <space>/ folders hold only
  // bins.csv, which no section claims on its own); each kind of section in turn.
  std::vector<fs::path> dirs = {dir};
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory()) subdirs.push_back(e.path());
  }
  std::sort(subdirs.begin(), subdirs.end());
  dirs.insert(dirs.end(), subdirs.begin(), subdirs.end());
  for (SectionFn add : kSections) {
    for (const auto& d : dirs) add(page, d);
  }
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
