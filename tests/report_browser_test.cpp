// Each report kind opened in a real browser (headless Chromium, Debian's `chromium`):
// the page must load without script errors, its script must have run and counted every
// chart, and a screenshot is taken (kept in $TESSERA_REPORT_SHOTS when set, to look at).
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

  const std::string dom = browser(chromium, dir / "profile-dom", "--dump-dom", html);
  EXPECT_NE(dom.find("data-report-ready=\"yes\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("data-charts=\"" + std::to_string(charts) + "\""), std::string::npos);
  EXPECT_NE(dom.find("report drawn: " + std::to_string(charts) + " charts"), std::string::npos);
  EXPECT_GE(count(dom, "<svg"), charts);
  EXPECT_EQ(dom.find("Uncaught"), std::string::npos) << dom;  // console errors are logged

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

}  // namespace
}  // namespace tessera
