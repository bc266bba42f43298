#pragma once

// PPipe's DNN pre-partitioning (§5.2; digest §2.3): group a model's layers into N
// contiguous blocks of about equal runtime on one reference GPU, so that the planner's
// MILP works over N blocks instead of hundreds of layers. The paper's greedy reading:
// "go sequentially from the first layer, adding layers until the group's runtime is as
// close as possible to 1/N of the whole model's runtime, then repeat". (PPipe's repo uses
// a min-cut-bytes MILP instead; that one is not implemented here.) Pure functions, safe
// to call from several threads.

#include <cstdint>
#include <string>
#include <vector>

#include "profile/ppipe_import.hpp"

namespace tessera {

// Block boundaries b_0 = 0 < b_1 < ... < b_n = layer_ms.size() for n = n_blocks blocks:
// each block grows one layer at a time while that brings its runtime closer to
// total / n_blocks, keeping at least one layer for every block still to come. Throws
// std::invalid_argument when n_blocks < 1, there are fewer layers than blocks, or a
// latency is negative or not finite.
std::vector<int> greedy_equal_runtime_blocks(const std::vector<double>& layer_ms, int n_blocks);

// A block profile from a per-layer one: latency [layer][batch - 1] (µs) summed per block,
// and the per-sample bytes crossing each block boundary taken from the output bytes of the
// boundary's last layer (`layer_out_bytes`, one per layer; may be empty).
PpipeBlockProfile group_layers(const std::string& model, const std::string& gpu, int mps_share,
                               const std::vector<std::vector<double>>& layer_latency_us,
                               const std::vector<int64_t>& layer_out_bytes,
                               const std::vector<int>& boundaries);

}  // namespace tessera
