#include "supernet/supernet.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <string>

namespace tessera::supernet {
namespace {

// WeightSlice: the first `out` output and `in` input channels of a conv weight, as a view.
at::Tensor weight_slice(const at::Tensor& weight, int64_t out, int64_t in) {
  return weight.narrow(0, 0, out).narrow(1, 0, in);
}

at::Tensor channel_slice(const at::Tensor& t, int64_t channels) { return t.narrow(0, 0, channels); }

ConvBnView slice(const ConvBnWeights& w, int64_t in, int64_t out, NormMode mode,
                 const SubnetNorm::Entry* stats) {
  ConvBnView v;
  v.weight = weight_slice(w.weight, out, in);
  v.gamma = channel_slice(w.gamma, out);
  v.beta = channel_slice(w.beta, out);
  v.stride = w.stride;
  v.padding = w.padding;
  v.bn_layer = w.bn_layer;
  if (mode == NormMode::kShared) {
    v.mean = channel_slice(w.shared_mean, out);
    v.var = channel_slice(w.shared_var, out);
  } else if (mode == NormMode::kSubnetNorm) {
    v.mean = stats->mean.at(static_cast<std::size_t>(w.bn_layer));
    v.var = stats->var.at(static_cast<std::size_t>(w.bn_layer));
  }
  return v;
}

}  // namespace

Supernet::Supernet(SupernetOptions options) : options_(options) {
  at::NoGradGuard no_grad;
  const SubnetShape max = supernet_shape();
  stem_.push_back(make_conv_bn("stem0", 3, max.stem_mid, 3, 2));
  stem_.push_back(make_conv_bn("stem1", max.stem_mid, max.stem_mid, 3, 1));
  stem_.push_back(make_conv_bn("stem2", max.stem_mid, max.stem_out, 3, 1));
  for (const BlockShape& b : max.blocks) {
    const std::string prefix = "block" + std::to_string(b.index) + "_";
    BlockWeights block;
    block.shape = b;
    block.conv1 = make_conv_bn(prefix + "conv1", b.in, b.mid, 1, 1);
    block.conv2 = make_conv_bn(prefix + "conv2", b.mid, b.mid, 3, b.stride);
    block.conv3 = make_conv_bn(prefix + "conv3", b.mid, b.out, 1, 1);
    if (b.downsample) block.downsample = make_conv_bn(prefix + "down", b.in, b.out, 1, 1);
    blocks_.push_back(std::move(block));
  }
  auto gen = at::detail::createCPUGenerator(options_.seed + 1000003);
  fc_weight_ = register_parameter(
      "fc_weight", at::randn({options_.classes, max.features}, gen, at::kFloat) * 0.01, false);
  fc_bias_ =
      register_parameter("fc_bias", at::randn({options_.classes}, gen, at::kFloat) * 0.01, false);
}

ConvBnWeights Supernet::make_conv_bn(const std::string& name, int in, int out, int kernel,
                                     int stride) {
  // One generator per layer, seeded from the supernet seed and the layer id, so a layer's
  // weights do not depend on the order layers are built in.
  auto gen =
      at::detail::createCPUGenerator(options_.seed * 7919 + static_cast<std::uint64_t>(bn_layers_));
  ConvBnWeights w;
  const double stddev = std::sqrt(2.0 / (out * kernel * kernel));  // Kaiming normal, fan-out
  w.weight = register_parameter(
      name + "_weight", at::randn({out, in, kernel, kernel}, gen, at::kFloat) * stddev, false);
  // Random affine parameters (not 1 and 0) so that a wrong slice changes the output.
  w.gamma = register_parameter(name + "_gamma", at::rand({out}, gen, at::kFloat) + 0.5, false);
  w.beta = register_parameter(name + "_beta", at::randn({out}, gen, at::kFloat) * 0.1, false);
  w.shared_mean = register_buffer(name + "_mean", at::zeros({out}, at::kFloat));
  w.shared_var = register_buffer(name + "_var", at::ones({out}, at::kFloat));
  w.stride = stride;
  w.padding = kernel / 2;
  w.bn_layer = bn_layers_++;
  return w;
}

ActiveSubnet Supernet::actuate(const SubnetConfig& config, NormMode mode) const {
  const std::uint64_t id = config.id();
  const SubnetNorm::Entry* stats = mode == NormMode::kSubnetNorm ? &norm_.lookup(id) : nullptr;
  const SubnetShape shape = subnet_shape(config);
  ActiveSubnet a;
  a.subnet_id = id;
  a.stem0 = slice(stem_[0], 3, shape.stem_mid, mode, stats);
  if (shape.stem_residual) a.stem1 = slice(stem_[1], shape.stem_mid, shape.stem_mid, mode, stats);
  a.stem2 = slice(stem_[2], shape.stem_mid, shape.stem_out, mode, stats);
  a.blocks.reserve(shape.blocks.size());
  for (const BlockShape& b : shape.blocks) {  // LayerSelect: only the kept blocks
    const BlockWeights& w = blocks_[static_cast<std::size_t>(b.index)];
    BlockView v;
    v.stride = b.stride;
    v.conv1 = slice(w.conv1, b.in, b.mid, mode, stats);
    v.conv2 = slice(w.conv2, b.mid, b.mid, mode, stats);
    v.conv3 = slice(w.conv3, b.mid, b.out, mode, stats);
    if (w.downsample) v.downsample = slice(*w.downsample, b.in, b.out, mode, stats);
    a.blocks.push_back(std::move(v));
  }
  a.fc_weight = fc_weight_.narrow(1, 0, shape.features);
  a.fc_bias = fc_bias_;
  return a;
}

at::Tensor Supernet::forward(const at::Tensor& x, const SubnetConfig& config, NormMode mode) const {
  at::NoGradGuard no_grad;
  return run_subnet(actuate(config, mode), x);
}

void Supernet::host(const SubnetConfig& config, const at::Tensor& calibration) {
  at::NoGradGuard no_grad;
  BatchStatsSink sink;
  sink.mean.resize(static_cast<std::size_t>(bn_layers_));
  sink.var.resize(static_cast<std::size_t>(bn_layers_));
  run_subnet(actuate(config, NormMode::kNone), calibration, &sink);
  norm_.set(config.id(), sink.mean, sink.var);
}

std::int64_t Supernet::weight_bytes() const {
  std::int64_t bytes = 0;
  for (const at::Tensor& p : parameters())
    bytes += p.numel() * static_cast<std::int64_t>(p.element_size());
  for (const at::Tensor& b : buffers())
    bytes += b.numel() * static_cast<std::int64_t>(b.element_size());
  return bytes;
}

}  // namespace tessera::supernet
