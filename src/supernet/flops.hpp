#pragma once

#include <cstdint>

#include "supernet/supernet_config.hpp"

namespace tessera::supernet {

// Analytic cost of one subnet at a square input resolution, counted like OFA's MAC counter:
// multiply-accumulates of the convolutions and the classifier (pooling, BN and ReLU excluded).
struct SubnetCost {
  double macs = 0.0;             // per image
  std::int64_t params = 0;       // conv + BN affine + classifier weights of the extracted net
  std::int64_t bn_channels = 0;  // channels over all active BN layers (SubnetNorm entries / 2)
};

inline constexpr int kAccuracyResolution = 224;  // the resolution of the published accuracies
inline constexpr int kImageNetClasses = 1000;

SubnetCost subnet_cost(const SubnetConfig& config, int resolution = kAccuracyResolution,
                       int classes = kImageNetClasses);

// Output side of a convolution or pooling window.
int conv_out_size(int in, int kernel, int stride, int padding);

}  // namespace tessera::supernet
