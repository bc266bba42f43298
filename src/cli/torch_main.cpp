// `tessera-torch`: the commands that run models on libtorch (serve, profile, supernet, llm).
// Users call them as `tessera serve ...`; `tessera` hands them over to this executable.

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/run_main.hpp"

int main(int argc, char** argv) {
  tessera::cli::setup_logging();
  CLI::App app{"tessera (model commands): serve, profile, supernet, llm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessera 0.1.0");
  tessera::cli::add_serve_command(app);
  tessera::cli::add_profile_command(app);
  tessera::cli::add_supernet_command(app);
  tessera::cli::add_llm_command(app);
  return tessera::cli::run_main(app, argc, argv);
}
