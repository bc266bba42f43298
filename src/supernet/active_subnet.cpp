#include "supernet/active_subnet.hpp"

namespace tessera::supernet {
namespace {

constexpr double kBnEps = 1e-5;

// oneDNN convolution for every batch size: at::conv2d would send small batches to im2col and
// the (reference) BLAS, several times slower here. oneDNN needs a contiguous weight, so a
// slice along the input channels is copied for the call (transient, never kept).
at::Tensor conv(const at::Tensor& x, const at::Tensor& weight, int64_t stride, int64_t padding) {
  const at::Tensor w = weight.contiguous();
  if (at::hasMKLDNN()) {
    return at::mkldnn_convolution(x, w, c10::nullopt, {padding, padding}, {stride, stride}, {1, 1},
                                  1);
  }
  return at::conv2d(x, w, {}, {stride, stride}, {padding, padding});
}

at::Tensor conv_bn(const ConvBnView& layer, const at::Tensor& x, BatchStatsSink* sink) {
  at::Tensor y = conv(x, layer.weight, layer.stride, layer.padding);
  if (sink == nullptr) {
    return at::batch_norm(y, layer.gamma, layer.beta, layer.mean, layer.var, false, 0.0, kBnEps,
                          false);
  }
  const at::Tensor mean = y.mean({0, 2, 3});
  const at::Tensor var = y.var({0, 2, 3}, /*unbiased=*/false);
  const auto index = static_cast<std::size_t>(layer.bn_layer);
  if (sink->mean.size() <= index) {
    sink->mean.resize(index + 1);
    sink->var.resize(index + 1);
  }
  sink->mean[index] = mean;
  sink->var[index] = var;
  return at::batch_norm(y, layer.gamma, layer.beta, mean, var, false, 0.0, kBnEps, false);
}

at::Tensor run_block(const BlockView& block, const at::Tensor& x, BatchStatsSink* sink) {
  at::Tensor residual = x;
  if (block.downsample) {
    at::Tensor pooled = x;
    if (block.stride > 1) {
      pooled = at::avg_pool2d(x, {block.stride, block.stride}, {block.stride, block.stride}, {0, 0},
                              /*ceil_mode=*/true);
    }
    residual = conv_bn(*block.downsample, pooled, sink);
  }
  at::Tensor y = at::relu(conv_bn(block.conv1, x, sink));
  y = at::relu(conv_bn(block.conv2, y, sink));
  y = conv_bn(block.conv3, y, sink);
  return at::relu(y + residual);
}

}  // namespace

at::Tensor run_subnet(const ActiveSubnet& subnet, const at::Tensor& x, BatchStatsSink* sink) {
  at::Tensor y = at::relu(conv_bn(subnet.stem0, x, sink));
  if (subnet.stem1) y = y + at::relu(conv_bn(*subnet.stem1, y, sink));
  y = at::relu(conv_bn(subnet.stem2, y, sink));
  y = at::max_pool2d(y, {3, 3}, {2, 2}, {1, 1});
  for (const BlockView& block : subnet.blocks) y = run_block(block, y, sink);
  y = y.mean({2, 3});
  // The classifier as a 1x1 convolution, for the same reason as conv() above.
  const int64_t classes = subnet.fc_weight.size(0);
  at::Tensor logits = conv(y.view({y.size(0), y.size(1), 1, 1}),
                           subnet.fc_weight.unsqueeze(-1).unsqueeze(-1), 1, 0);
  return logits.view({y.size(0), classes}) + subnet.fc_bias;
}

}  // namespace tessera::supernet
