#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace tessera {

// Per-minute invocation counts read from the Azure Functions 2019 trace format
// (Azure/AzurePublicDataset, invocations_per_function_md.anon.dNN.csv):
// `HashOwner,HashApp,HashFunction,Trigger,1,2,...,1440`, one row per function, one column
// of invocation counts per minute of the day.
struct FunctionCounts {
  std::vector<uint64_t> per_minute;  // summed over the selected rows
  std::size_t rows_in_file = 0;      // data rows in the file (selected or not)
};

// Sums the counts of the selected data rows (0-based, in file order; nullopt = every row).
// Indices past the end of the file select nothing: compare them with rows_in_file. The
// file is streamed, so only one row is held at a time. Errors are SpecErrors naming the
// file, the line and the column.
FunctionCounts read_functions_counts(const std::filesystem::path& path,
                                     const std::optional<std::vector<std::size_t>>& rows);

}  // namespace tessera
