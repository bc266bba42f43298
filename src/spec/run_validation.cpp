#include "spec/run_validation.hpp"

#include <sstream>

#include "core/input_file.hpp"
#include "spec/llm_backend_spec.hpp"
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
  if (run.llm) {
    const LlmSchedulerConfig& c = run.llm->scheduler;
    out << "  llm         " << run.llm->model.name << " on " << run.llm->gpu.name << ": "
        << c.kv_blocks << " KV blocks of " << c.block_tokens << " tokens per instance, "
        << llm_policy_name(c.policy) << " (token budget " << c.token_budget << ", max "
        << c.max_seqs << " requests" << (c.slo_admission ? ", SLO-aware admission" : "") << ")\n";
    // A gateway's backends: parsed (and so checked) as `tessera serve` will.
    if (const auto gateway = load_llm_gateway(run)) {
      out << "  backends    " << gateway->backends.size() << " (routing " << gateway->routing
          << ")\n";
      for (const LlmBackendSpec& b : gateway->backends) {
        out << "    " << b.url << " serving " << b.model << ": " << b.gpu.name << ", tp "
            << b.parallel.tp << " pp " << b.parallel.pp << ", " << b.kv_blocks << " KV blocks\n";
      }
    }
  }
  return out.str();
}

}  // namespace tessera
