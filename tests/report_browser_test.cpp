// Each report kind opened in a real browser (headless Chromium, Debian's `chromium`):
// the page must load without script errors, its script must have run and counted every
// chart, no chart label may collide (measured with the browser's own text boxes: a copy
// of the page with a checking script added), and a screenshot is taken (kept in
// $TESSERA_REPORT_SHOTS when set, to look at).
// Without chromium the tests fail, saying how to install it, unless
// TESSERA_SKIP_BROWSER_TESTS=1 is set: then they are skipped.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "report/report.hpp"
#include "report_fixtures.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using namespace testing_fixtures;

std::string find_chromium() {
  if (const char* env = std::getenv("TESSERA_CHROMIUM")) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      if (fs::exists(fs::path(d) / name)) return (fs::path(d) / name).string();
    }
  }
  return "";
}

// Runs a command; returns its stdout and stderr together.
std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
  pclose(pipe);
  return out;
}

std::string browser(const std::string& chromium, const fs::path& profile, const std::string& action,
                    const fs::path& html) {
  return run("timeout 120 '" + chromium +
             "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--hide-scrollbars --enable-logging=stderr --v=0 --user-data-dir='" +
             profile.string() + "' " + action + " 'file://" + fs::absolute(html).string() + "'");
}

// Added to a copy of a report: in every chart (an <svg>), the rendered box of each label
// (getBBox(), the browser's own font metrics) must stay inside the drawing, overlap no
// other label, and be crossed by no vertical dashed line (a marker or a baseline). The
// collisions go to <html data-overlaps="[...]"> for --dump-dom to show.
constexpr const char* kOverlapCheck = R"JS(
(function () {
  const problems = [];
  document.querySelectorAll('svg').forEach((svg, n) => {
    const width = svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0;
    const labels = [...svg.querySelectorAll('text')]
        .filter(t => !t.hasAttribute('transform') && t.textContent.trim() !== '')
        .map(t => ({text: t.textContent, box: t.getBBox()}));
    const name = l => `chart ${n}: '${l.text}'`;
    const tol = 0.5;
    for (const l of labels) {
      if (width > 0 && (l.box.x < -tol || l.box.x + l.box.width > width + tol))
        problems.push(`${name(l)} leaves the drawing`);
    }
    for (let i = 0; i < labels.length; ++i) {
      for (let j = i + 1; j < labels.length; ++j) {
        const a = labels[i].box, b = labels[j].box;
        if (a.x + tol < b.x + b.width && b.x + tol < a.x + a.width &&
            a.y + tol < b.y + b.height && b.y + tol < a.y + a.height)
          problems.push(`${name(labels[i])} overlaps '${labels[j].text}'`);
      }
    }
    for (const line of svg.querySelectorAll('line[stroke-dasharray]')) {
      const x = line.x1.baseVal.value;
      if (Math.abs(line.x2.baseVal.value - x) > 1e-6) continue;  // vertical lines only
      const y0 = Math.min(line.y1.baseVal.value, line.y2.baseVal.value);
      const y1 = Math.max(line.y1.baseVal.value, line.y2.baseVal.value);
      for (const l of labels) {
        const b = l.box;
        if (x > b.x + tol && x < b.x + b.width - tol && y0 < b.y + b.height - tol &&
            y1 > b.y + tol)
          problems.push(`${name(l)} is crossed by a dashed line at x = ${x.toFixed(1)}`);
      }
    }
  });
  document.documentElement.setAttribute('data-overlaps', JSON.stringify(problems));
})();
)JS";

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

void check_in_browser(const std::string& kind, const std::function<void(const fs::path&)>& make,
                      std::size_t min_charts) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    if (std::getenv("TESSERA_SKIP_BROWSER_TESTS") != nullptr)
      GTEST_SKIP() << "no chromium and TESSERA_SKIP_BROWSER_TESTS is set";
    FAIL() << "chromium not found: install Debian's `chromium` (scripts/setup.sh does), or set "
              "TESSERA_SKIP_BROWSER_TESTS=1 to skip the browser tests";
  }
  const fs::path dir = scratch_dir("browser_" + kind);
  make(dir / "out");
  const fs::path html = report::write_report_html(dir / "out");
  std::ifstream in(html);
  std::stringstream page;
  page << in.rdbuf();
  const std::size_t charts = count(page.str(), "<figure class='chart'>");
  EXPECT_GE(charts, min_charts);

  // The page is opened as written plus the label check (one more script at its end), and
  // its DOM dumped after the scripts ran.
  std::string checked = page.str();
  const auto body_end = checked.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  checked.insert(body_end, std::string("<script>") + kOverlapCheck + "</script>\n");
  const fs::path check_html = html.parent_path() / "report-checked.html";
  std::ofstream(check_html) << checked;
  const std::string dom = browser(chromium, dir / "profile-dom", "--dump-dom", check_html);
  EXPECT_NE(dom.find("data-report-ready=\"yes\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("data-charts=\"" + std::to_string(charts) + "\""), std::string::npos);
  EXPECT_NE(dom.find("report drawn: " + std::to_string(charts) + " charts"), std::string::npos);
  EXPECT_GE(count(dom, "<svg"), charts);
  EXPECT_EQ(dom.find("Uncaught"), std::string::npos) << dom;  // console errors are logged
  const auto at = dom.find("data-overlaps=\"");
  ASSERT_NE(at, std::string::npos) << "the label check did not run:\n" << dom.substr(0, 2000);
  const std::string overlaps = dom.substr(at + 15, dom.find('"', at + 15) - (at + 15));
  EXPECT_EQ(overlaps, "[]") << "chart labels collide in the " << kind << " report";

  const char* shots = std::getenv("TESSERA_REPORT_SHOTS");
  const fs::path png = fs::path(shots != nullptr ? shots : dir.string()) / (kind + ".png");
  fs::create_directories(png.parent_path());
  fs::remove(png);
  const std::string log =
      browser(chromium, dir / "profile-shot",
              "--window-size=1200,2400 --screenshot='" + png.string() + "'", html);
  ASSERT_TRUE(fs::exists(png)) << log;
  EXPECT_GT(fs::file_size(png), 20000u) << "an almost blank page: " << png;
}

TEST(ReportBrowser, Simulate) { check_in_browser("simulate", write_simulate_output, 4); }
TEST(ReportBrowser, Compare) { check_in_browser("compare", write_compare_output, 3); }
TEST(ReportBrowser, Plan) { check_in_browser("plan", write_plan_output, 1); }
TEST(ReportBrowser, Replan) { check_in_browser("replan", write_replan_output, 1); }
TEST(ReportBrowser, Loadgen) { check_in_browser("loadgen", write_loadgen_output, 2); }
TEST(ReportBrowser, CrowdedLabels) {
  check_in_browser("crowded-labels", write_crowded_labels_output, 4);
}

}  // namespace
}  // namespace tessera
