#pragma once

#include <cstdint>
#include <vector>

#include "supernet/supernet_config.hpp"

namespace tessera::supernet {

// Resident set size of this process (/proc/self/statm), after returning freed heap memory to
// the system (malloc_trim), in bytes.
std::int64_t resident_bytes();

// Memory of one supernet hosting N subnets against N extracted networks (SuperServe Fig. 5a).
struct MemoryReport {
  int subnets = 0;
  std::int64_t supernet_weight_bytes = 0;  // shared parameters + buffers
  std::int64_t subnet_norm_bytes = 0;      // SubnetNorm statistics of all hosted subnets
  std::int64_t supernet_rss_bytes = 0;     // RSS growth: build the supernet, host N subnets
  std::int64_t extracted_bytes = 0;        // parameters + buffers of the N extracted networks
  std::int64_t extracted_rss_bytes = 0;    // RSS growth: build the N extracted networks
  std::int64_t largest_subnet_stats_bytes = 0;
};

// Builds a supernet (random weights), hosts `subnets` (calibrating each on one random batch of
// `calibration_batch` images at `calibration_resolution`), then extracts each of them, and
// measures both. Everything stays alive until the end, so the RSS deltas do not reuse memory.
MemoryReport measure_memory(const std::vector<SubnetConfig>& subnets,
                            int calibration_resolution = 32, int calibration_batch = 4);

}  // namespace tessera::supernet
