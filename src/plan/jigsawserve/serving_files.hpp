#pragma once

// The files `tessera plan` writes so that its output directory is served as is
// (docs/plan.md#serving-the-plan): a models file naming, for each deployed variant, the
// executor that serves it, and the run spec that `tessera simulate`, `tessera serve` and
// `tessera loadgen` all take.
//
// Contract: every deployed variant gets exactly one entry. A variant the user's models
// file lists keeps that entry (a zoo architecture or a TorchScript file, whose path is
// made absolute); every other variant gets `emulate: profile`, a profile-timed emulation
// that takes exactly its profiled latency (docs/serve.md#profile-timed-emulation).
// Nothing here runs a model or parses the models file fully: `tessera serve` validates it.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/spec_node.hpp"

namespace tessera::plan {

// The per-item input of emulated models when the user gives no models file: small, so a
// load generator's request bodies cost little.
inline const std::vector<int64_t> kEmulatedInput{16};

// The models file for `variants` (in order). `user_models` is the user's models file
// (its `input`, `torch_threads` and the `models` entries of deployed variants are kept);
// an entry of it that names an undeployed variant is left out. Throws SpecError on a
// models file that is not a map with a `models` list of maps with a `variant`.
std::string models_file_yaml(const std::vector<std::string>& variants,
                             const std::optional<SpecNode>& user_models);

// What run.yaml refers to.
struct RunFileInputs {
  std::filesystem::path app_file;       // as run.yaml names it (relative to its folder)
  double demand_rps = 0.0;              // Poisson arrivals at this rate unless a workload
  double duration_s = 60.0;             // of the Poisson workload
  std::filesystem::path workload_file;  // a workload section file (absolute), or empty
  std::string workload_yaml;  // or a workload section written inline (block YAML), or empty
  std::string policies_yaml;  // the `policies:` section's lines (indented); empty: jigsawserve
};

// A workload section file (a run spec's `workload:` value) at `demand_rps`: its time scaling
// replaced by `target_rate_rps: demand_rps`, every file it names (`path:`) copied into `dir`
// and named by its file name, so that `dir` stays relocatable. Block YAML, each line
// indented by two spaces, for RunFileInputs::workload_yaml. Throws SpecError on a file
// that is not a map, or a named file that cannot be copied.
// `duration_s` > 0 also ends it after that many seconds (its own `duration_s` replaced).
std::string scaled_workload_yaml(const std::filesystem::path& workload_file, double demand_rps,
                                 const std::filesystem::path& dir, double duration_s = 0.0);

// run.yaml: the app, deployment.yaml, profiles.yaml, models.yaml, the workload, the
// policies (every family explicit) and seed 1.
std::string run_file_yaml(const RunFileInputs& in);

}  // namespace tessera::plan
