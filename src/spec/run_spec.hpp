#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "core/spec_node.hpp"
#include "engine/app.hpp"
#include "engine/deployment.hpp"
#include "policy/policy_set.hpp"
#include "profile/profile_table.hpp"
#include "spec/deployment_spec.hpp"
#include "spec/llm_spec.hpp"
#include "spec/sim_options.hpp"
#include "workload/arrival.hpp"

namespace tessera {

// Everything one `tessera simulate` run needs, loaded and cross-checked
// (docs/specs.md#run). The app, cluster and deployment may be file paths (relative to
// the run file) or written inline.
struct RunSpec {
  std::filesystem::path file;
  App app;
  ProfileTable profiles;
  std::optional<Cluster> cluster;
  Deployment deployment;
  PolicyConfig policies;
  SimOptions sim;
  SpecNode workload;           // kept as YAML: arrival sources are built fresh for each run
  std::optional<LlmSpec> llm;  // the `llm:` section: every instance is an LLM instance
  // `models:`, the models file `tessera serve` uses (docs/serve.md#models); empty if none.
  // Read by the commands that run models, ignored by the simulator.
  std::filesystem::path models_file;
  // The `policies:` section as written, if any: compare reads it again with each preset
  // (policies_with_preset).
  std::optional<SpecNode> policies_node;
};

RunSpec load_run_spec(const std::filesystem::path& file);

// The run's arrival stream, built fresh from its workload and seed. A workload that never
// ends, or one too large for the run's policies (PARD's State Planner's draws), is a
// SpecError naming the workload field. `policies` (default: the run's) is the config the
// stream will be served under.
std::unique_ptr<ArrivalSource> make_run_arrivals(const RunSpec& run);
std::unique_ptr<ArrivalSource> make_run_arrivals(const RunSpec& run, const PolicyConfig& policies);

// The run's policies as if its `policies:` section named `preset` (the section's other
// fields still override it): what `tessera compare --presets` runs for each preset, equal
// by construction to the run spec with `preset:` changed. A bad preset name throws
// std::invalid_argument; a combination that cannot run is a SpecError naming the field.
PolicyConfig policies_with_preset(const RunSpec& run, const std::string& preset);
RunSpec parse_run_spec(const SpecNode& node);

}  // namespace tessera
