#include "supernet/extract.hpp"

#include <ATen/TensorIndexing.h>

#include <string>

namespace tessera::supernet {

using at::indexing::Slice;

ExtractedNet::ExtractedNet(const Supernet& supernet, const SubnetConfig& config) {
  at::NoGradGuard no_grad;
  const SubnetNorm::Entry& stats = supernet.subnet_norm().lookup(config.id());
  const SubnetShape shape = subnet_shape(config);
  stem0_ = copy_conv_bn("stem0", supernet.stem(0), 3, shape.stem_mid, stats);
  if (shape.stem_residual) {
    stem1_ = copy_conv_bn("stem1", supernet.stem(1), shape.stem_mid, shape.stem_mid, stats);
  }
  stem2_ = copy_conv_bn("stem2", supernet.stem(2), shape.stem_mid, shape.stem_out, stats);
  for (const BlockShape& b : shape.blocks) {
    const BlockWeights& w = supernet.blocks()[static_cast<std::size_t>(b.index)];
    const std::string prefix = "block" + std::to_string(b.index) + "_";
    Block block;
    block.stride = b.stride;
    block.conv1 = copy_conv_bn(prefix + "conv1", w.conv1, b.in, b.mid, stats);
    block.conv2 = copy_conv_bn(prefix + "conv2", w.conv2, b.mid, b.mid, stats);
    block.conv3 = copy_conv_bn(prefix + "conv3", w.conv3, b.mid, b.out, stats);
    if (b.downsample)
      block.downsample = copy_conv_bn(prefix + "down", *w.downsample, b.in, b.out, stats);
    blocks_.push_back(std::move(block));
  }
  fc_ = register_module("fc", torch::nn::Linear(shape.features, supernet.classes()));
  fc_->weight.copy_(supernet.fc_weight().index({Slice(), Slice(0, shape.features)}));
  fc_->bias.copy_(supernet.fc_bias());
  eval();
}

ExtractedNet::ConvBn ExtractedNet::copy_conv_bn(const std::string& name, const ConvBnWeights& w,
                                                int64_t in, int64_t out,
                                                const SubnetNorm::Entry& stats) {
  const int64_t kernel = w.weight.size(2);
  ConvBn layer;
  layer.conv = register_module(name, torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                                                           .stride(w.stride)
                                                           .padding(w.padding)
                                                           .bias(false)));
  layer.bn = register_module(name + "_bn", torch::nn::BatchNorm2d(out));
  layer.conv->weight.copy_(w.weight.index({Slice(0, out), Slice(0, in)}));
  layer.bn->weight.copy_(w.gamma.index({Slice(0, out)}));
  layer.bn->bias.copy_(w.beta.index({Slice(0, out)}));
  const auto bn = static_cast<std::size_t>(w.bn_layer);
  layer.bn->running_mean.copy_(stats.mean.at(bn));
  layer.bn->running_var.copy_(stats.var.at(bn));
  return layer;
}

at::Tensor ExtractedNet::run(ConvBn& layer, const at::Tensor& x) {
  return layer.bn->forward(layer.conv->forward(x));
}

at::Tensor ExtractedNet::forward(const at::Tensor& x) {
  at::NoGradGuard no_grad;
  at::Tensor y = at::relu(run(stem0_, x));
  if (stem1_) y = y + at::relu(run(*stem1_, y));
  y = at::relu(run(stem2_, y));
  y = at::max_pool2d(y, {3, 3}, {2, 2}, {1, 1});
  for (Block& block : blocks_) {
    at::Tensor residual = y;
    if (block.downsample) {
      at::Tensor pooled = y;
      if (block.stride > 1) {
        pooled = at::avg_pool2d(y, {block.stride, block.stride}, {block.stride, block.stride},
                                {0, 0}, true);
      }
      residual = run(*block.downsample, pooled);
    }
    at::Tensor z = at::relu(run(block.conv1, y));
    z = at::relu(run(block.conv2, z));
    z = run(block.conv3, z);
    y = at::relu(z + residual);
  }
  return fc_->forward(y.mean({2, 3}));
}

std::int64_t ExtractedNet::bytes() const {
  std::int64_t total = 0;
  for (const at::Tensor& p : parameters())
    total += p.numel() * static_cast<std::int64_t>(p.element_size());
  for (const at::Tensor& b : buffers())
    total += b.numel() * static_cast<std::int64_t>(b.element_size());
  return total;
}

}  // namespace tessera::supernet
