#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("tessera"));
  spdlog::set_pattern("[%H:%M:%S] %v");

  CLI::App app{"tessera: SLO-aware ML inference serving: plan, simulate, serve"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  tessera::cli::add_simulate_command(app);
  tessera::cli::add_validate_command(app);
  tessera::cli::add_compare_command(app);
  tessera::cli::add_plan_command(app);
  tessera::cli::add_replan_command(app);
  tessera::cli::add_serve_command(app);
  tessera::cli::add_loadgen_command(app);
  tessera::cli::add_profile_command(app);
  tessera::cli::add_supernet_command(app);
  tessera::cli::add_report_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const tessera::SpecError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
