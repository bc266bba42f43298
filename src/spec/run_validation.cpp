#include "spec/run_validation.hpp"

#include <sstream>

#include "core/input_file.hpp"
#include "spec/run_spec.hpp"

namespace tessera {

std::string validate_run_file(const std::filesystem::path& file) {
  LoadBudget budget;  // one budget for the spec and the arrival stream built from it
  RunSpec run = load_run_spec(file);
  auto arrivals = make_run_arrivals(run);
  const int workers = run.deployment.total_workers();
  std::ostringstream out;
  out << file.string() << ": ok\n"
      << "  app         " << run.app.name << " (" << run.app.tasks.size() << " tasks, "
      << run.app.edges.size() << " edges, SLO " << to_ms(run.app.slo) << " ms)\n"
      << "  profiles    " << run.profiles.curves().size() << " (variant, segment) curves\n"
      << "  deployment  " << workers << " workers in " << run.deployment.groups.size()
      << " groups\n"
      << "  workload    " << arrivals->describe() << "\n";
  return out.str();
}

}  // namespace tessera
