#pragma once

#include <filesystem>
#include <vector>

#include "workload/arrival.hpp"

namespace tessera {

// Reads the Azure LLM inference trace 2023 format (Azure/AzurePublicDataset):
// `TIMESTAMP,ContextTokens,GeneratedTokens`, one request per row, with timestamps such as
// `2023-11-16 18:17:03.9799600`. Times become seconds since the first row (across day,
// month and year boundaries), ContextTokens the input tokens and GeneratedTokens the
// output tokens. Other columns are ignored. Rows must be in non-decreasing time order.
// Errors are SpecErrors naming the file, the line and the column.
std::vector<Arrival> read_azure_llm_csv(const std::filesystem::path& path);

}  // namespace tessera
