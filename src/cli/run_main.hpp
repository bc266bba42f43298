#pragma once

// The shared body of the two executables' main(): logging set-up, parsing, and the mapping
// of errors to exit codes (2: a spec error naming file and field; 1: anything else).

#include <CLI/CLI.hpp>

namespace tessera::cli {

void setup_logging();
int run_main(CLI::App& app, int argc, char** argv);

// `tessera serve|profile|supernet ...` runs in the sibling executable `tessera-torch`, so
// that the light commands never load libtorch. If argv[1] names such a command, replaces
// this process with tessera-torch (same arguments) and does not return; if tessera-torch
// is missing, prints why and returns 1. Returns -1 for every other command.
int hand_over_model_commands(int argc, char** argv);

// The commands tessera-torch runs, for the help text of `tessera`.
void add_model_command_stubs(CLI::App& app);

}  // namespace tessera::cli
