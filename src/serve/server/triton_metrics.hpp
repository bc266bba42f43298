#pragma once

// Prometheus metrics in the conventions of NVIDIA Triton's metrics (docs/serve.md#metrics
// has the mapping): per model and version, request successes and failures, inferences and
// executions, cumulative durations and duration histograms (queue, compute input / infer /
// output), pending requests; and the process's CPU time, resident memory and open file
// descriptors (Prometheus' standard process_* names, read from /proc/self). Pure
// rendering; thread-safe.

#include <cstdint>
#include <string>
#include <vector>

#include "serve/server/model_stats.hpp"

namespace tessera {

struct TritonModelRow {
  std::string model;
  std::string version;
  ModelStats stats;
  uint64_t executions = 0;  // batches run
  std::size_t pending = 0;  // requests admitted and not yet answered
};

std::string render_triton_metrics(const std::vector<TritonModelRow>& rows);

// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_start_time_seconds, process_open_fds (and process_max_fds); lines whose /proc
// source cannot be read are left out.
std::string render_process_metrics();

}  // namespace tessera
