#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "spec/run_spec.hpp"

namespace tessera::cli {

void add_validate_command(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Load and cross-check a run spec and everything it refers to, then exit");
  cmd->add_option("run", *file, "Run spec (YAML)")->required()->check(CLI::ExistingFile);
  cmd->callback([file] {
    RunSpec run = load_run_spec(*file);
    auto arrivals = make_run_arrivals(run);
    const int workers = run.deployment.total_workers();
    std::cout << *file << ": ok\n"
              << "  app         " << run.app.name << " (" << run.app.tasks.size() << " tasks, "
              << run.app.edges.size() << " edges, SLO " << to_ms(run.app.slo) << " ms)\n"
              << "  profiles    " << run.profiles.curves().size() << " (variant, segment) curves\n"
              << "  deployment  " << workers << " workers in " << run.deployment.groups.size()
              << " groups\n"
              << "  workload    " << arrivals->describe() << "\n";
  });
}

}  // namespace tessera::cli
