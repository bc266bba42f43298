#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "spec/run_validation.hpp"

namespace tessera::cli {

void add_validate_command(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Load and cross-check a run spec and everything it refers to, then exit");
  // The spec loader also refuses special and oversized files (docs/reliability-specs.md).
  cmd->add_option("run", *file, "Run spec (YAML)")->required()->check(CLI::ExistingFile);
  cmd->callback([file] { std::cout << validate_run_file(*file); });
}

}  // namespace tessera::cli
