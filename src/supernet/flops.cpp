#include "supernet/flops.hpp"

namespace tessera::supernet {
namespace {

struct Counter {
  SubnetCost cost;
  void conv(int in, int out, int kernel, int out_side) {
    const double area = static_cast<double>(out_side) * out_side;
    cost.macs += static_cast<double>(in) * out * kernel * kernel * area;
    cost.params += static_cast<std::int64_t>(in) * out * kernel * kernel;
    cost.params += 2 * static_cast<std::int64_t>(out);  // BN gamma and beta
    cost.bn_channels += out;
  }
};

}  // namespace

int conv_out_size(int in, int kernel, int stride, int padding) {
  return (in + 2 * padding - kernel) / stride + 1;
}

SubnetCost subnet_cost(const SubnetConfig& config, int resolution, int classes) {
  const SubnetShape shape = subnet_shape(config);
  Counter c;
  int side = conv_out_size(resolution, 3, 2, 1);
  c.conv(3, shape.stem_mid, 3, side);
  if (shape.stem_residual) c.conv(shape.stem_mid, shape.stem_mid, 3, side);
  c.conv(shape.stem_mid, shape.stem_out, 3, side);
  side = conv_out_size(side, 3, 2, 1);  // max pool
  for (const BlockShape& b : shape.blocks) {
    c.conv(b.in, b.mid, 1, side);
    const int out_side = conv_out_size(side, 3, b.stride, 1);
    c.conv(b.mid, b.mid, 3, out_side);
    c.conv(b.mid, b.out, 1, out_side);
    if (b.downsample) c.conv(b.in, b.out, 1, out_side);
    side = out_side;
  }
  c.cost.macs += static_cast<double>(shape.features) * classes;
  c.cost.params += static_cast<std::int64_t>(shape.features) * classes + classes;
  return c.cost;
}

}  // namespace tessera::supernet
