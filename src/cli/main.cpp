// `tessera`: the light command. Plans, simulates, compares, re-plans and replays load
// without libtorch; the commands that run models are handed to `tessera-torch`.

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/run_main.hpp"

int main(int argc, char** argv) {
  if (const int handed = tessera::cli::hand_over_model_commands(argc, argv); handed >= 0) {
    return handed;
  }
  tessera::cli::setup_logging();
  CLI::App app{"tessera: SLO-aware ML inference serving: plan, simulate, serve"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  tessera::cli::add_simulate_command(app);
  tessera::cli::add_validate_command(app);
  tessera::cli::add_compare_command(app);
  tessera::cli::add_plan_command(app);
  tessera::cli::add_replan_command(app);
  tessera::cli::add_loadgen_command(app);
  tessera::cli::add_report_command(app);
  tessera::cli::add_ppipe_simulate_command(app);
  tessera::cli::add_export_command(app);
  tessera::cli::add_model_command_stubs(app);
  return tessera::cli::run_main(app, argc, argv);
}
