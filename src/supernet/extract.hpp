#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <optional>
#include <vector>

#include "supernet/supernet.hpp"

namespace tessera::supernet {

// One subnet as a standalone network of ordinary libtorch modules (Conv2d, BatchNorm2d,
// Linear) owning copies of its slice of the supernet's weights and its SubnetNorm statistics:
// what a system without SubNetAct would deploy per subnet. The copies are made with index
// ranges from the subnet's shape, independently of the supernet's actuation code, so the two
// can be checked against each other.
class ExtractedNet : public torch::nn::Module {
 public:
  // The subnet must be hosted by `supernet` (its statistics are copied).
  ExtractedNet(const Supernet& supernet, const SubnetConfig& config);

  at::Tensor forward(const at::Tensor& x);
  std::int64_t bytes() const;  // parameters and buffers

 private:
  struct ConvBn {
    torch::nn::Conv2d conv{nullptr};
    torch::nn::BatchNorm2d bn{nullptr};
  };
  struct Block {
    ConvBn conv1, conv2, conv3;
    std::optional<ConvBn> downsample;
    int64_t stride = 1;
  };

  ConvBn copy_conv_bn(const std::string& name, const ConvBnWeights& w, int64_t in, int64_t out,
                      const SubnetNorm::Entry& stats);
  at::Tensor run(ConvBn& layer, const at::Tensor& x);

  ConvBn stem0_;
  std::optional<ConvBn> stem1_;
  ConvBn stem2_;
  std::vector<Block> blocks_;
  torch::nn::Linear fc_{nullptr};
};

}  // namespace tessera::supernet
