#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "supernet/active_subnet.hpp"
#include "supernet/subnet_norm.hpp"
#include "supernet/supernet_config.hpp"

namespace tessera::supernet {

struct SupernetOptions {
  int classes = 1000;
  std::uint64_t seed = 1;  // random weights (no pretrained OFA weights can be downloaded here)
};

// One conv + BN pair at its largest size.
struct ConvBnWeights {
  at::Tensor weight;       // [out_max, in_max, k, k]
  at::Tensor gamma;        // [out_max]
  at::Tensor beta;         // [out_max]
  at::Tensor shared_mean;  // [out_max]: one set of statistics for all subnets (no SubnetNorm)
  at::Tensor shared_var;
  int64_t stride = 1;
  int64_t padding = 0;
  int bn_layer = 0;
};

struct BlockWeights {
  BlockShape shape;  // max channels
  ConvBnWeights conv1, conv2, conv3;
  std::optional<ConvBnWeights> downsample;
};

// Where an actuated subnet's BN statistics come from.
enum class NormMode {
  kSubnetNorm,  // the subnet's own row in the SubnetNorm table (it must be hosted)
  kShared,      // the supernet's one shared set, sliced (OFA's DynamicBatchNorm; ablation)
  kNone,        // none: only for calibration passes, which use batch statistics
};

// An OFA-ResNet50-shaped supernet (docs/supernet.md) holding every weight once, at its
// largest size, with the SubnetAct operators:
//   LayerSelect: a stage runs only its first base + d blocks (and the stem's residual conv
//                only when d[0] == 2);
//   WeightSlice: each layer uses the first channels of the shared tensors (narrow views);
//   SubnetNorm:  BN statistics come from a per-subnet table (subnet_norm.hpp).
class Supernet : public torch::nn::Module {
 public:
  explicit Supernet(SupernetOptions options = {});

  // Actuates a subnet: resolves the control tuple into views of the shared weights and of its
  // statistics. Allocates no weights. Throws std::out_of_range for kSubnetNorm when the subnet
  // is not hosted.
  ActiveSubnet actuate(const SubnetConfig& config, NormMode mode = NormMode::kSubnetNorm) const;
  // actuate + run_subnet, without autograd.
  at::Tensor forward(const at::Tensor& x, const SubnetConfig& config,
                     NormMode mode = NormMode::kSubnetNorm) const;

  // Hosts a subnet: runs `calibration` [N, 3, H, W] through it with batch statistics and
  // stores them in the SubnetNorm table under config.id() (OFA's set_running_statistics).
  void host(const SubnetConfig& config, const at::Tensor& calibration);
  bool hosts(const SubnetConfig& config) const { return norm_.contains(config.id()); }
  const SubnetNorm& subnet_norm() const { return norm_; }
  SubnetNorm& subnet_norm() { return norm_; }

  const ConvBnWeights& stem(int i) const { return stem_[static_cast<std::size_t>(i)]; }
  const std::vector<BlockWeights>& blocks() const { return blocks_; }
  const at::Tensor& fc_weight() const { return fc_weight_; }
  const at::Tensor& fc_bias() const { return fc_bias_; }
  int classes() const { return options_.classes; }
  int bn_layers() const { return bn_layers_; }

  // Bytes of the shared parameters and buffers (weights, BN affine, shared statistics).
  std::int64_t weight_bytes() const;

 private:
  ConvBnWeights make_conv_bn(const std::string& name, int in, int out, int kernel, int stride);

  SupernetOptions options_;
  std::vector<ConvBnWeights> stem_;  // 3 stem convs
  std::vector<BlockWeights> blocks_;
  at::Tensor fc_weight_;
  at::Tensor fc_bias_;
  int bn_layers_ = 0;
  SubnetNorm norm_;
};

}  // namespace tessera::supernet
