#pragma once

#include <filesystem>
#include <vector>

#include "workload/arrival.hpp"

namespace tessera {

// Reads tessera's generic arrival CSV (docs/workloads.md): a header row naming the
// columns, `arrival_s` required (seconds, >= 0, non-decreasing), `input_tokens`,
// `output_tokens` and `slo_ms` optional (an empty cell means "not given"), any other
// column ignored. Times are kept as written. Errors are SpecErrors naming the file, the
// line and the column.
std::vector<Arrival> read_generic_csv(const std::filesystem::path& path);

}  // namespace tessera
