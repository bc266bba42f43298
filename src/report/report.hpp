#pragma once

// `tessera report DIR`: one self-contained report.html from the files tessera commands
// already wrote into DIR (and into its immediate subfolders), without re-running
// anything: simulate/loadgen runs, compare tables, plans, max-demand searches and
// re-planned days (report/sections.hpp lists the files). docs/report.md describes it.

#include <filesystem>
#include <string>

namespace tessera::report {

// The page's HTML. Throws std::runtime_error when DIR holds no tessera output.
std::string build_report(const std::filesystem::path& dir, const std::string& title = "");

// Writes the page to `out` (default DIR/report.html) and returns the path written.
std::filesystem::path write_report_html(const std::filesystem::path& dir,
                                        const std::filesystem::path& out = {},
                                        const std::string& title = "");

}  // namespace tessera::report
