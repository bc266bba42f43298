#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::supernet {

// The OFA-ResNet50 search space (Cai et al., "Once-for-All", ICLR 2020; docs/supernet.md).
inline constexpr int kStages = 4;
inline constexpr std::array<int, kStages> kBaseDepth{2, 2, 4, 2};
inline constexpr std::array<int, kStages> kStageWidth{256, 512, 1024, 2048};
inline constexpr std::array<int, kStages> kStageStride{1, 2, 2, 2};
inline constexpr std::array<int, 3> kDepthList{0, 1, 2};  // blocks added to a stage's base depth
inline constexpr std::array<double, 3> kExpandList{0.2, 0.25, 0.35};
inline constexpr std::array<double, 3> kWidthMultList{0.65, 0.8, 1.0};
inline constexpr int kStemWidth = 64;  // output of the input stem at width multiplier 1.0
inline constexpr int kMaxDepthChoice = 2;
inline constexpr int kMaxBlocks = 18;   // sum of kBaseDepth + 2 per stage
inline constexpr int kDepthDigits = 5;  // d[0]: input stem, d[1..4]: stages
inline constexpr int kWidthDigits = 6;  // w[0], w[1]: input stem, w[2..5]: stages
inline constexpr int kChannelDivisor = 8;

// OFA's make_divisible: round to the nearest multiple of `divisor`, never below `divisor`,
// and never more than 10% below `v`.
int make_divisible(double v, int divisor = kChannelDivisor);

// One subnet of the supernet: every entry is an index (0, 1, 2) into the choice lists above.
//   d[0] == 2 keeps the input stem's residual conv, d[1 + s] adds d to stage s's base depth;
//   e[b] is block b's expand ratio (blocks numbered 0..17 over the four stages at full depth);
//   w[0] sets the first two stem convs, w[1] the third, w[2 + s] the outputs of stage s.
struct SubnetConfig {
  std::array<std::uint8_t, kDepthDigits> d{};
  std::array<std::uint8_t, kMaxBlocks> e{};
  std::array<std::uint8_t, kWidthDigits> w{};

  // A stable id: the 29 digits (d, e, w in that order, first digit least significant) read as a
  // base-3 number. Unique per subnet, < 3^29.
  std::uint64_t id() const;
  // "d22222-e222222222222222222-w222222": the digits, readable and stable.
  std::string name() const;
  static SubnetConfig from_id(std::uint64_t id);
  // Parses name(); throws std::invalid_argument on anything else.
  static SubnetConfig from_name(const std::string& name);

  // The same network with redundant digits at their lowest value: the expand digits of blocks
  // that LayerSelect drops become 0, d[0] = 1 becomes 0 (the stem's residual conv runs only
  // at d[0] = 2), and w[0] = 1 becomes 0 (stem widths 0.65 and 0.8 both round to 24
  // channels). Two configs give the same network exactly when their canonical forms are equal.
  SubnetConfig canonical() const;

  static SubnetConfig min_config();  // all digits 0
  static SubnetConfig max_config();  // all digits 2
  // The same choice everywhere: depth index `d`, expand index `e`, width index `w`.
  static SubnetConfig uniform(int d, int e, int w);

  friend bool operator==(const SubnetConfig&, const SubnetConfig&) = default;
};

// Resolved shape of one bottleneck block of the supernet (max channels) or of a subnet.
struct BlockShape {
  int index = 0;  // 0..17, the block's position in the full-depth supernet
  int stage = 0;
  int in = 0;
  int mid = 0;
  int out = 0;
  int stride = 1;
  bool downsample = false;  // first block of a stage: avg-pool + 1x1 conv shortcut
};

// Channel counts of a subnet, or with every choice at its maximum, of the supernet's tensors.
struct SubnetShape {
  int stem_mid = 0;  // output of stem conv 0 and of the residual stem conv 1
  int stem_out = 0;  // output of stem conv 2
  bool stem_residual = true;
  std::vector<BlockShape> blocks;  // active blocks only (LayerSelect), in order
  int features = 0;                // input of the classifier
};

// The blocks of stage `s` kept for depth index `d`: the first kBaseDepth[s] + d.
int active_blocks(int stage, int depth_index);
int first_block_of_stage(int stage);  // in the full-depth numbering
SubnetShape subnet_shape(const SubnetConfig& config);
SubnetShape supernet_shape();  // max channels of every tensor; all 18 blocks

}  // namespace tessera::supernet
