#pragma once

#include "core/spec_node.hpp"
#include "profile/profile_table.hpp"

namespace tessera {

// The `profiles:` list of a run spec (docs/profiles.md). Each item is one of
//
//   - file: path/to/profile.yaml                # tessera's own format
//   - format: loki
//     runtimes: path/to/simulator_runtimes.csv
//     segments: {onnxruntime_gpu_ampere: ampere}  # optional; absent = every accelerator
//     column: avg_runtime                         # optional: avg_runtime | 50th_pct | ...
//   - format: ppipe
//     dir: path/to/block-timing-tf32              # or PPipe's data/ folder
//     models: [convnext_large, repvgg-b3]
//     mappings: path/to/prepartition_mappings     # optional
//
// Paths are relative to the file holding the list. Later items replace the curves of
// earlier ones for the same (variant, segment) pair.
ProfileTable load_profiles(const SpecNode& list);

}  // namespace tessera
