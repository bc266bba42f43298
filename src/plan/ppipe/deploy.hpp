#pragma once

// Simulator inputs for a PPipe plan (docs/plan.md#ppipe-planner): one run per pooled
// pipeline, since a tessera app sends every request to every root and cannot choose among
// a DNN's pipelines (that is the PPipe data plane's job, which reads plan.json). Each run
// is a chain of partition tasks (variant MODEL[first:last], edges carrying the cut's fp16
// bytes per sample), one worker group per server of each pool (gpus_per_server x mps vGPUs
// of segment GPU or GPU/mpsN, max_batch = the pipeline's batch) with the server's NIC
// uplink and downlink as links at the effective bandwidth, the partitions' block-range
// profiles, and Poisson arrivals at load_factor x the pipeline's planned throughput with
// tessera's default policies. Writes files only; safe to call from several threads on
// different folders.

#include <filesystem>
#include <vector>

#include "dataplane/ppipe/ppipe_plan.hpp"
#include "plan/ppipe/problem.hpp"

namespace tessera::plan {

// Writes DIR/sim/dnnM-pipelineL/{run.yaml, profiles.yaml} for every pipeline of `plan`
// (its DNNs in `in`'s order) and returns the run files. Throws std::runtime_error when a
// file cannot be written or a partition's profile is missing.
std::vector<std::filesystem::path> write_ppipe_runs(const std::filesystem::path& dir,
                                                    const ppipe::PpipePlan& plan,
                                                    const PpipeInput& in, double load_factor = 1.0,
                                                    double duration_s = 30.0);

}  // namespace tessera::plan
