#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "report/report.hpp"

namespace tessera::cli {
namespace {

struct ReportArgs {
  std::string dir;
  std::string out;
  std::string title;
};

}  // namespace

void write_report_and_tell(const std::string& dir) {
  const auto file = report::write_report_html(dir);
  std::cout << "  report: " << std::filesystem::absolute(file).lexically_normal().string()
            << " (open it in a browser)\n";
}

void add_report_flag(CLI::App& cmd, bool& flag) {
  cmd.add_flag("--report", flag,
               "Also write DIR/report.html: tables and charts of this run (docs/report.md)");
}

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write one self-contained report.html from the output folder of earlier runs");
  cmd->add_option("dir", args->dir,
                  "Output folder of simulate, compare, plan, replan or loadgen (subfolders too)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--out,-o", args->out, "HTML file to write (default: DIR/report.html)");
  cmd->add_option("--title", args->title, "Page title (default: 'tessera report: DIR')");
  cmd->callback([args] {
    const auto file = report::write_report_html(args->dir, args->out, args->title);
    std::cout << "wrote " << std::filesystem::absolute(file).lexically_normal().string()
              << " (open it in a browser)\n";
  });
}

}  // namespace tessera::cli
