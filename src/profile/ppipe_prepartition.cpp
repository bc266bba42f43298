#include "profile/ppipe_prepartition.hpp"

#include <cmath>
#include <stdexcept>

namespace tessera {

std::vector<int> greedy_equal_runtime_blocks(const std::vector<double>& layer_ms, int n_blocks) {
  const int layers = static_cast<int>(layer_ms.size());
  if (n_blocks < 1) throw std::invalid_argument("the number of blocks must be at least 1");
  if (layers < n_blocks) {
    throw std::invalid_argument("cannot group " + std::to_string(layers) + " layers into " +
                                std::to_string(n_blocks) + " blocks");
  }
  double total = 0.0;
  for (size_t i = 0; i < layer_ms.size(); ++i) {
    if (!std::isfinite(layer_ms[i]) || layer_ms[i] < 0.0) {
      throw std::invalid_argument("layer " + std::to_string(i) +
                                  ": latency must be finite and >= 0");
    }
    total += layer_ms[i];
  }
  const double target = total / n_blocks;
  std::vector<int> bounds = {0};
  int next = 0;
  for (int b = 0; b + 1 < n_blocks; ++b) {
    double sum = layer_ms[next++];                         // every block holds at least one layer
    const int last_allowed = layers - (n_blocks - b - 1);  // leave a layer per later block
    while (next < last_allowed &&
           std::abs(sum + layer_ms[next] - target) < std::abs(sum - target)) {
      sum += layer_ms[next++];
    }
    bounds.push_back(next);
  }
  bounds.push_back(layers);
  return bounds;
}

PpipeBlockProfile group_layers(const std::string& model, const std::string& gpu, int mps_share,
                               const std::vector<std::vector<double>>& layer_latency_us,
                               const std::vector<int64_t>& layer_out_bytes,
                               const std::vector<int>& boundaries) {
  if (boundaries.size() < 2 || boundaries.front() != 0 ||
      boundaries.back() != static_cast<int>(layer_latency_us.size())) {
    throw std::invalid_argument("block boundaries must run from 0 to the number of layers");
  }
  if (!layer_out_bytes.empty() && layer_out_bytes.size() != layer_latency_us.size()) {
    throw std::invalid_argument("one output size per layer is needed");
  }
  PpipeBlockProfile p;
  p.model = model;
  p.gpu = gpu;
  p.mps_share = mps_share;
  p.source = "greedy equal-runtime pre-partitioning";
  const size_t batches = layer_latency_us.empty() ? 0 : layer_latency_us.front().size();
  for (size_t b = 0; b + 1 < boundaries.size(); ++b) {
    if (boundaries[b + 1] <= boundaries[b]) {
      throw std::invalid_argument("block boundaries must increase");
    }
    std::vector<double> sum(batches, 0.0);
    for (int l = boundaries[b]; l < boundaries[b + 1]; ++l) {
      if (layer_latency_us[l].size() != batches) {
        throw std::invalid_argument("layer " + std::to_string(l) +
                                    " has a different number of batch sizes");
      }
      for (size_t i = 0; i < batches; ++i) sum[i] += layer_latency_us[l][i];
    }
    p.block_latency_us.push_back(std::move(sum));
    if (!layer_out_bytes.empty() && b + 2 < boundaries.size()) {
      p.transfer_bytes.push_back(layer_out_bytes[boundaries[b + 1] - 1]);
    }
  }
  return p;
}

}  // namespace tessera
