// SubNetAct on the OFA-ResNet50-shaped supernet (src/supernet, docs/supernet.md).
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "supernet/accuracy_model.hpp"
#include "supernet/extract.hpp"
#include "supernet/flops.hpp"
#include "supernet/subnet_selection.hpp"
#include "supernet/supernet.hpp"

namespace tessera::supernet {
namespace {

constexpr int kDigits = kDepthDigits + kMaxBlocks + kWidthDigits;

std::uint8_t& digit(SubnetConfig& c, int pos) {
  if (pos < kDepthDigits) return c.d[static_cast<std::size_t>(pos)];
  if (pos < kDepthDigits + kMaxBlocks) return c.e[static_cast<std::size_t>(pos - kDepthDigits)];
  return c.w[static_cast<std::size_t>(pos - kDepthDigits - kMaxBlocks)];
}

SubnetConfig random_config(std::mt19937_64& rng) {
  SubnetConfig c;
  for (int pos = 0; pos < kDigits; ++pos) digit(c, pos) = static_cast<std::uint8_t>(rng() % 3);
  return c;
}

at::Tensor random_images(int batch, int side, std::uint64_t seed) {
  return at::randn({batch, 3, side, side}, at::detail::createCPUGenerator(seed), at::kFloat);
}

// One supernet for the whole binary: building it draws 48M random weights.
Supernet& shared_supernet() {
  static Supernet* supernet = [] {
    auto* s = new Supernet();
    at::set_num_threads(1);
    return s;
  }();
  return *supernet;
}

double relative_difference(const at::Tensor& a, const at::Tensor& b) {
  const double diff = (a - b).abs().max().item<double>();
  const double scale = b.abs().max().item<double>();
  return diff / std::max(scale, 1e-6);
}

// Storage byte ranges of every parameter and buffer.
std::set<std::pair<std::uintptr_t, std::size_t>> storages(const torch::nn::Module& m) {
  std::set<std::pair<std::uintptr_t, std::size_t>> out;
  for (const at::Tensor& t : m.parameters()) {
    out.emplace(reinterpret_cast<std::uintptr_t>(t.storage().data()), t.storage().nbytes());
  }
  for (const at::Tensor& t : m.buffers()) {
    out.emplace(reinterpret_cast<std::uintptr_t>(t.storage().data()), t.storage().nbytes());
  }
  return out;
}

// The view's data lies inside the storage of `owner`.
bool inside(const at::Tensor& view, const at::Tensor& owner) {
  const auto begin = reinterpret_cast<std::uintptr_t>(owner.storage().data());
  const auto p = reinterpret_cast<std::uintptr_t>(view.data_ptr());
  return view.is_alias_of(owner) && p >= begin && p < begin + owner.storage().nbytes();
}

TEST(SupernetConfig, IdAndNameRoundTrip) {
  std::mt19937_64 rng(3);
  std::set<std::uint64_t> ids;
  for (int i = 0; i < 200; ++i) {
    const SubnetConfig c = random_config(rng);
    EXPECT_EQ(SubnetConfig::from_id(c.id()), c);
    EXPECT_EQ(SubnetConfig::from_name(c.name()), c);
    ids.insert(c.id());
  }
  EXPECT_GT(ids.size(), 195u);
  EXPECT_EQ(SubnetConfig::min_config().id(), 0u);
  EXPECT_EQ(SubnetConfig::max_config().name(), "d22222-e222222222222222222-w222222");
  EXPECT_THROW(SubnetConfig::from_name("d2222-e2"), std::invalid_argument);
  EXPECT_THROW(SubnetConfig::from_name("d22223-e222222222222222222-w222222"),
               std::invalid_argument);
}

TEST(SupernetConfig, OfaResNet50Shapes) {
  EXPECT_EQ(make_divisible(64 * 0.65), 40);
  EXPECT_EQ(make_divisible(256 * 0.65), 168);
  EXPECT_EQ(make_divisible(2048 * 0.8), 1640);
  const SubnetShape max = supernet_shape();
  ASSERT_EQ(max.blocks.size(), 18u);
  EXPECT_EQ(max.stem_mid, 32);
  EXPECT_EQ(max.stem_out, 64);
  EXPECT_EQ(max.blocks[0].mid, 88);    // 256 * 0.35 -> 88
  EXPECT_EQ(max.blocks[17].mid, 720);  // 2048 * 0.35 -> 720
  EXPECT_EQ(max.features, 2048);
  const SubnetShape min = subnet_shape(SubnetConfig::min_config());
  EXPECT_EQ(min.blocks.size(), 10u);  // base depths 2 + 2 + 4 + 2
  EXPECT_FALSE(min.stem_residual);
  EXPECT_EQ(min.features, 1328);
  // Every subnet's channels fit in the supernet's tensors.
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100; ++i) {
    const SubnetShape s = subnet_shape(random_config(rng));
    for (const BlockShape& b : s.blocks) {
      const BlockShape& m = max.blocks[static_cast<std::size_t>(b.index)];
      EXPECT_LE(b.in, m.in);
      EXPECT_LE(b.mid, m.mid);
      EXPECT_LE(b.out, m.out);
      EXPECT_EQ(b.stride, m.stride);
    }
  }
}

TEST(SupernetFlops, MonotoneInEveryChoice) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20; ++i) {
    const SubnetConfig base = random_config(rng);
    const double macs = subnet_cost(base).macs;
    for (int pos = 0; pos < kDigits; ++pos) {
      SubnetConfig bigger = base;
      if (digit(bigger, pos) == 2) continue;
      ++digit(bigger, pos);
      if (bigger.canonical() == base.canonical()) {
        // The expand ratio of a block LayerSelect drops: the same network.
        EXPECT_EQ(subnet_cost(bigger).macs, macs);
        continue;
      }
      EXPECT_GT(subnet_cost(bigger).macs, macs) << "digit " << pos << " of " << base.name();
      EXPECT_GE(subnet_cost(bigger).params, subnet_cost(base).params);
    }
  }
  const double min = subnet_cost(SubnetConfig::min_config()).macs;
  const double max = subnet_cost(SubnetConfig::max_config()).macs;
  EXPECT_NEAR(min / 1e9, 0.962, 0.001);
  EXPECT_NEAR(max / 1e9, 7.492, 0.001);
  EXPECT_LT(subnet_cost(SubnetConfig::max_config(), 112).macs * 3, max);
}

TEST(SupernetAccuracy, PublishedPointsInterpolateMonotonically) {
  const AccuracyModel model = AccuracyModel::load(std::filesystem::path(TESSERA_SOURCE_DIR) /
                                                  "data/supernet/ofa_resnet50_accuracy.csv");
  ASSERT_GE(model.points().size(), 5u);
  for (const AccuracyPoint& p : model.points()) {
    EXPECT_DOUBLE_EQ(model.top1(p.macs_g), p.top1);
    if (!p.subnet.empty()) {  // attributed points carry that subnet's MACs
      EXPECT_NEAR(subnet_cost(SubnetConfig::from_name(p.subnet)).macs / 1e9, p.macs_g, 0.001);
    }
  }
  double previous = 0.0;
  for (double g = 0.5; g < 9.0; g *= 1.05) {
    const double acc = model.top1(g);
    EXPECT_GE(acc, previous);
    previous = acc;
  }
  EXPECT_DOUBLE_EQ(model.top1(0.1), 73.82);
  EXPECT_DOUBLE_EQ(model.top1(100.0), 80.16);
  // Halfway in log(MACs) between 1.8 G (78.3) and 2.4 G (79.0).
  EXPECT_NEAR(model.top1(std::sqrt(1.8 * 2.4)), 78.65, 1e-9);
  EXPECT_THROW(AccuracyModel({{1.0, 75.0, "", ""}, {2.0, 74.0, "", ""}}), std::invalid_argument);
}

TEST(SupernetSelection, ChainIsNestedAndSelectionSpansTheRange) {
  const std::vector<SubnetConfig> chain = growth_chain();
  // 29 digits x 2 raises, less d[0] 0 -> 1 and w[0] 0 -> 1 (the same network)
  ASSERT_EQ(chain.size(), 57u);
  EXPECT_EQ(chain.back(), SubnetConfig::max_config());
  for (std::size_t i = 1; i < chain.size(); ++i) {
    int changed = 0;
    for (int pos = 0; pos < kDigits; ++pos) {
      SubnetConfig a = chain[i - 1];
      SubnetConfig b = chain[i];
      changed += digit(b, pos) != digit(a, pos) ? 1 : 0;
      EXPECT_GE(digit(b, pos), digit(a, pos));
    }
    EXPECT_EQ(changed, 1);
    EXPECT_EQ(chain[i].canonical(), chain[i]);
    EXPECT_GT(subnet_cost(chain[i]).macs, subnet_cost(chain[i - 1]).macs);
  }
  const std::vector<SubnetConfig> picked = select_subnets(12);
  ASSERT_EQ(picked.size(), 12u);
  EXPECT_EQ(picked.front(), SubnetConfig::min_config());
  EXPECT_EQ(picked.back(), SubnetConfig::max_config());
  std::set<std::uint64_t> ids;
  for (std::size_t i = 0; i < picked.size(); ++i) {
    ids.insert(picked[i].id());
    if (i > 0) {
      EXPECT_GT(subnet_cost(picked[i]).macs, subnet_cost(picked[i - 1]).macs);
    }
  }
  EXPECT_EQ(ids.size(), 12u);
  EXPECT_EQ(select_subnets(12), picked);  // deterministic
  const std::vector<SubnetConfig> many = select_subnets(100);
  std::set<std::uint64_t> many_ids;
  for (const SubnetConfig& c : many) {
    EXPECT_EQ(c.canonical(), c);
    many_ids.insert(c.id());
  }
  EXPECT_EQ(many_ids.size(), 100u);
}

TEST(SubNetAct, ActuatedSubnetEqualsExtractedNetwork) {
  Supernet& supernet = shared_supernet();
  std::mt19937_64 rng(11);
  std::vector<SubnetConfig> configs{
      SubnetConfig::min_config(),     SubnetConfig::max_config(), SubnetConfig::uniform(1, 1, 1),
      SubnetConfig::uniform(2, 0, 1), random_config(rng),         random_config(rng)};
  const at::Tensor calibration = random_images(4, 32, 1);
  const at::Tensor x = random_images(2, 32, 2);
  for (const SubnetConfig& c : configs) {
    supernet.host(c, calibration);
    const at::Tensor actuated = supernet.forward(x, c);
    ExtractedNet extracted(supernet, c);
    const at::Tensor reference = extracted.forward(x);
    ASSERT_EQ(actuated.sizes(), reference.sizes());
    EXPECT_EQ(actuated.size(1), 1000);
    EXPECT_LT(relative_difference(actuated, reference), 1e-4) << c.name();
    // The extracted network holds exactly the subnet's parameters.
    std::int64_t params = 0;
    for (const at::Tensor& p : extracted.parameters()) params += p.numel();
    EXPECT_EQ(params, subnet_cost(c, 32).params) << c.name();
  }
}

TEST(SubNetAct, ActuationAllocatesNoWeights) {
  Supernet& supernet = shared_supernet();
  const SubnetConfig a = SubnetConfig::uniform(1, 2, 0);
  const SubnetConfig b = SubnetConfig::uniform(2, 0, 1);
  supernet.host(a, random_images(4, 32, 3));
  supernet.host(b, random_images(4, 32, 3));
  const auto before = storages(supernet);
  const std::int64_t bytes_before = supernet.weight_bytes();
  const std::size_t params_before = supernet.parameters().size();
  std::vector<ActiveSubnet> kept;
  for (int i = 0; i < 100; ++i) kept.push_back(supernet.actuate(i % 2 == 0 ? a : b));
  EXPECT_EQ(storages(supernet), before);
  EXPECT_EQ(supernet.weight_bytes(), bytes_before);
  EXPECT_EQ(supernet.parameters().size(), params_before);

  // Every weight of an actuated subnet is a view into the supernet's tensor for that layer,
  // and its statistics are views into the SubnetNorm table.
  const ActiveSubnet& active = kept[1];
  const SubnetNorm::Entry& stats = supernet.subnet_norm().lookup(b.id());
  auto check = [&](const ConvBnView& v, const ConvBnWeights& w) {
    EXPECT_TRUE(inside(v.weight, w.weight));
    EXPECT_TRUE(inside(v.gamma, w.gamma));
    EXPECT_TRUE(inside(v.beta, w.beta));
    EXPECT_TRUE(inside(v.mean, stats.buffer));
    EXPECT_TRUE(inside(v.var, stats.buffer));
  };
  check(active.stem0, supernet.stem(0));
  ASSERT_TRUE(active.stem1.has_value());
  check(*active.stem1, supernet.stem(1));
  check(active.stem2, supernet.stem(2));
  const SubnetShape shape = subnet_shape(b);
  ASSERT_EQ(active.blocks.size(), shape.blocks.size());
  for (std::size_t i = 0; i < shape.blocks.size(); ++i) {
    const BlockWeights& w = supernet.blocks()[static_cast<std::size_t>(shape.blocks[i].index)];
    check(active.blocks[i].conv1, w.conv1);
    check(active.blocks[i].conv2, w.conv2);
    check(active.blocks[i].conv3, w.conv3);
    ASSERT_EQ(active.blocks[i].downsample.has_value(), w.downsample.has_value());
    if (w.downsample) check(*active.blocks[i].downsample, *w.downsample);
  }
  EXPECT_TRUE(inside(active.fc_weight, supernet.fc_weight()));
  // A forward pass leaves the weights where they were, too.
  (void)supernet.forward(random_images(1, 32, 4), a);
  EXPECT_EQ(storages(supernet), before);
}

TEST(SubNetAct, LayerSelectAndWeightSliceFollowTheConfig) {
  Supernet& supernet = shared_supernet();
  SubnetConfig c = SubnetConfig::uniform(0, 1, 1);
  c.d[1] = 2;  // stage 0 at full depth
  c.d[0] = 2;  // keep the stem's residual conv
  const ActiveSubnet a = supernet.actuate(c, NormMode::kShared);
  EXPECT_TRUE(a.stem1.has_value());
  ASSERT_EQ(a.blocks.size(), 4u + 2u + 4u + 2u);
  EXPECT_EQ(a.stem0.weight.sizes(), (std::vector<int64_t>{24, 3, 3, 3}));
  EXPECT_EQ(a.stem2.weight.sizes(), (std::vector<int64_t>{48, 24, 3, 3}));
  // mid = make_divisible(208 * 0.25 = 52) = 56
  EXPECT_EQ(a.blocks[0].conv1.weight.sizes(), (std::vector<int64_t>{56, 48, 1, 1}));
  EXPECT_EQ(a.blocks[0].conv3.weight.sizes(), (std::vector<int64_t>{208, 56, 1, 1}));
  EXPECT_EQ(a.fc_weight.sizes(), (std::vector<int64_t>{1000, 1640}));
  EXPECT_THROW((void)supernet.actuate(SubnetConfig::uniform(0, 2, 2)), std::out_of_range);
}

TEST(SubNetAct, SubnetNormKeepsStatisticsPerSubnet) {
  Supernet& supernet = shared_supernet();
  SubnetConfig a = SubnetConfig::uniform(1, 1, 1);
  SubnetConfig b = a;
  b.w[2] = 2;  // stage 0 wider: every later layer sees different inputs
  supernet.host(a, random_images(4, 32, 5));
  supernet.host(b, random_images(4, 32, 5));
  const SubnetNorm::Entry& sa = supernet.subnet_norm().lookup(a.id());
  const SubnetNorm::Entry& sb = supernet.subnet_norm().lookup(b.id());
  // The stem is the same in both, so are its statistics; a stage-1 layer's differ.
  EXPECT_TRUE(at::allclose(sa.mean[0], sb.mean[0]));
  const int layer = supernet.blocks()[4].conv1.bn_layer;
  const int64_t n = std::min(sa.mean[static_cast<std::size_t>(layer)].size(0),
                             sb.mean[static_cast<std::size_t>(layer)].size(0));
  EXPECT_FALSE(at::allclose(sa.var[static_cast<std::size_t>(layer)].narrow(0, 0, n),
                            sb.var[static_cast<std::size_t>(layer)].narrow(0, 0, n)));

  const at::Tensor x = random_images(2, 32, 6);
  const at::Tensor with_own = supernet.forward(x, a);
  // The same weights with the one shared set of statistics give another output.
  EXPECT_GT(relative_difference(supernet.forward(x, a, NormMode::kShared), with_own), 1e-2);
  // Changing b's statistics changes b's output and leaves a's alone.
  const at::Tensor b_before = supernet.forward(x, b);
  sb.buffer.mul_(1.5);
  EXPECT_GT(relative_difference(supernet.forward(x, b), b_before), 1e-3);
  EXPECT_LT(relative_difference(supernet.forward(x, a), with_own), 1e-7);
  supernet.host(b, random_images(4, 32, 5));  // restore
  EXPECT_LT(relative_difference(supernet.forward(x, b), b_before), 1e-5);
}

TEST(SubNetAct, CalibratedStatisticsNormaliseTheCalibrationBatch) {
  Supernet& supernet = shared_supernet();
  const SubnetConfig c = SubnetConfig::uniform(0, 0, 2);
  const at::Tensor calibration = random_images(4, 32, 8);
  supernet.host(c, calibration);
  // Running the calibration batch with the stored statistics reproduces the calibration pass.
  BatchStatsSink sink;
  at::NoGradGuard no_grad;
  const at::Tensor calibrating =
      run_subnet(supernet.actuate(c, NormMode::kNone), calibration, &sink);
  const at::Tensor stored = supernet.forward(calibration, c);
  EXPECT_LT(relative_difference(stored, calibrating), 1e-4);
}

}  // namespace
}  // namespace tessera::supernet
