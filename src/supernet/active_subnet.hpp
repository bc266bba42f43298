#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace tessera::supernet {

// A convolution followed by BatchNorm, as tensors sized for one subnet: in an actuated subnet
// they are views (narrow) into the supernet's max-size tensors and SubnetNorm's table; in an
// extracted network they would be copies.
struct ConvBnView {
  at::Tensor weight;  // [out, in, k, k]
  at::Tensor gamma;   // [out]
  at::Tensor beta;    // [out]
  at::Tensor mean;    // [out]; undefined while calibrating
  at::Tensor var;     // [out]; undefined while calibrating
  int64_t stride = 1;
  int64_t padding = 0;
  int bn_layer = 0;  // the BN layer's id in the supernet (SubnetNorm's layer index)
};

struct BlockView {
  ConvBnView conv1;                      // 1x1, in -> mid
  ConvBnView conv2;                      // 3x3, mid -> mid, carries the block's stride
  ConvBnView conv3;                      // 1x1, mid -> out
  std::optional<ConvBnView> downsample;  // avg-pool(stride) + 1x1 conv, in -> out
  int64_t stride = 1;
};

// An actuated subnet: what LayerSelect, WeightSlice and SubnetNorm resolved for one control
// tuple. Only blocks kept by LayerSelect are listed.
struct ActiveSubnet {
  std::uint64_t subnet_id = 0;
  ConvBnView stem0;                 // 3x3 stride 2, 3 -> stem_mid
  std::optional<ConvBnView> stem1;  // 3x3 residual conv, kept when d[0] == 2
  ConvBnView stem2;                 // 3x3, stem_mid -> stem_out
  std::vector<BlockView> blocks;
  at::Tensor fc_weight;  // [classes, features]
  at::Tensor fc_bias;    // [classes]
};

// Receives the batch statistics of every BN layer during a calibration pass.
struct BatchStatsSink {
  std::vector<at::Tensor> mean;  // indexed by bn_layer; undefined for inactive layers
  std::vector<at::Tensor> var;
};

// Runs the subnet on x [N, 3, H, W] (float32, NCHW) and returns logits [N, classes].
// With a sink, every BN normalises with its batch statistics (biased variance) and records
// them (SubnetNorm calibration); without one, with the view's mean and var.
at::Tensor run_subnet(const ActiveSubnet& subnet, const at::Tensor& x,
                      BatchStatsSink* sink = nullptr);

}  // namespace tessera::supernet
