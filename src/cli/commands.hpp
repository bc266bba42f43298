#pragma once

#include <CLI/CLI.hpp>

namespace tessera::cli {

// Each command registers its subcommand and options; the callback runs it.
void add_simulate_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_replan_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_loadgen_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_supernet_command(CLI::App& app);

}  // namespace tessera::cli
