// The built-in model zoo: torchvision-style architectures written with libtorch's C++
// API, with seeded random weights (no pretrained weights can be downloaded here). Their
// latency is that of the real architecture; their outputs are meaningless but
// deterministic for a given seed and input.

#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "models/torch_model.hpp"

namespace tessera {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t groups = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel)
                        .stride(stride)
                        .padding(kernel / 2)
                        .groups(groups)
                        .bias(false));
}

nn::BatchNorm2d bn(int64_t channels) { return nn::BatchNorm2d(channels); }

// ResNet's BasicBlock (expansion 1) and Bottleneck (expansion 4, with ResNeXt groups and
// wide-ResNet widths).
struct ResBlockImpl : nn::Module {
  ResBlockImpl(int64_t in, int64_t planes, int64_t stride, bool bottleneck, int64_t groups,
               int64_t base_width) {
    const int64_t expansion = bottleneck ? 4 : 1;
    nn::Sequential b;
    if (bottleneck) {
      const int64_t width = planes * base_width / 64 * groups;
      b->push_back(conv(in, width, 1));
      b->push_back(bn(width));
      b->push_back(nn::ReLU(nn::ReLUOptions(true)));
      b->push_back(conv(width, width, 3, stride, groups));
      b->push_back(bn(width));
      b->push_back(nn::ReLU(nn::ReLUOptions(true)));
      b->push_back(conv(width, planes * expansion, 1));
      b->push_back(bn(planes * expansion));
    } else {
      b->push_back(conv(in, planes, 3, stride));
      b->push_back(bn(planes));
      b->push_back(nn::ReLU(nn::ReLUOptions(true)));
      b->push_back(conv(planes, planes, 3));
      b->push_back(bn(planes));
    }
    body = register_module("body", b);
    if (stride != 1 || in != planes * expansion) {
      nn::Sequential d;
      d->push_back(conv(in, planes * expansion, 1, stride));
      d->push_back(bn(planes * expansion));
      downsample = register_module("downsample", d);
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor identity = downsample ? downsample->forward(x) : x;
    return torch::relu(body->forward(x) + identity);
  }
  nn::Sequential body{nullptr};
  nn::Sequential downsample{nullptr};
};
TORCH_MODULE(ResBlock);

struct ResNetConfig {
  bool bottleneck;
  std::array<int, 4> blocks;
  int64_t groups = 1;
  int64_t base_width = 64;
};

nn::Sequential resnet(const ResNetConfig& cfg, int64_t channels, int64_t classes) {
  nn::Sequential net;
  net->push_back(nn::Conv2d(nn::Conv2dOptions(channels, 64, 7).stride(2).padding(3).bias(false)));
  net->push_back(bn(64));
  net->push_back(nn::ReLU(nn::ReLUOptions(true)));
  net->push_back(nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1)));
  int64_t in = 64;
  const int64_t expansion = cfg.bottleneck ? 4 : 1;
  const std::array<int64_t, 4> planes{64, 128, 256, 512};
  for (std::size_t layer = 0; layer < 4; ++layer) {
    for (int i = 0; i < cfg.blocks[layer]; ++i) {
      const int64_t stride = (layer > 0 && i == 0) ? 2 : 1;
      net->push_back(
          ResBlock(in, planes[layer], stride, cfg.bottleneck, cfg.groups, cfg.base_width));
      in = planes[layer] * expansion;
    }
  }
  net->push_back(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(in, classes));
  return net;
}

// MobileNetV2's inverted residual block.
struct InvertedResidualImpl : nn::Module {
  InvertedResidualImpl(int64_t in, int64_t out, int64_t stride, int64_t expand)
      : residual(stride == 1 && in == out) {
    const int64_t hidden = in * expand;
    nn::Sequential b;
    if (expand != 1) {
      b->push_back(conv(in, hidden, 1));
      b->push_back(bn(hidden));
      b->push_back(nn::ReLU6(nn::ReLU6Options(true)));
    }
    b->push_back(conv(hidden, hidden, 3, stride, hidden));
    b->push_back(bn(hidden));
    b->push_back(nn::ReLU6(nn::ReLU6Options(true)));
    b->push_back(conv(hidden, out, 1));
    b->push_back(bn(out));
    body = register_module("body", b);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return residual ? x + body->forward(x) : body->forward(x);
  }
  bool residual;
  nn::Sequential body{nullptr};
};
TORCH_MODULE(InvertedResidual);

nn::Sequential mobilenet_v2(int64_t channels, int64_t classes) {
  nn::Sequential net;
  net->push_back(conv(channels, 32, 3, 2));
  net->push_back(bn(32));
  net->push_back(nn::ReLU6(nn::ReLU6Options(true)));
  struct Stage {
    int64_t expand, out, repeat, stride;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t in = 32;
  for (const Stage& s : stages) {
    for (int64_t i = 0; i < s.repeat; ++i) {
      net->push_back(InvertedResidual(in, s.out, i == 0 ? s.stride : 1, s.expand));
      in = s.out;
    }
  }
  net->push_back(conv(in, 1280, 1));
  net->push_back(bn(1280));
  net->push_back(nn::ReLU6(nn::ReLU6Options(true)));
  net->push_back(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(1280, classes));
  return net;
}

// Two strided convolutions and a classifier: the fastest real network, for tests.
nn::Sequential small_cnn(int64_t channels, int64_t classes) {
  nn::Sequential net;
  net->push_back(conv(channels, 16, 3, 2));
  net->push_back(nn::ReLU(nn::ReLUOptions(true)));
  net->push_back(conv(16, 32, 3, 2));
  net->push_back(nn::ReLU(nn::ReLUOptions(true)));
  net->push_back(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  net->push_back(nn::Flatten());
  net->push_back(nn::Linear(32, classes));
  return net;
}

nn::Sequential build(const std::string& arch, int64_t channels, int64_t classes) {
  if (arch == "resnet18") return resnet({false, {2, 2, 2, 2}}, channels, classes);
  if (arch == "resnet34") return resnet({false, {3, 4, 6, 3}}, channels, classes);
  if (arch == "resnet50") return resnet({true, {3, 4, 6, 3}}, channels, classes);
  if (arch == "resnet101") return resnet({true, {3, 4, 23, 3}}, channels, classes);
  if (arch == "resnet152") return resnet({true, {3, 8, 36, 3}}, channels, classes);
  if (arch == "wide_resnet50_2") return resnet({true, {3, 4, 6, 3}, 1, 128}, channels, classes);
  if (arch == "resnext50_32x4d") return resnet({true, {3, 4, 6, 3}, 32, 4}, channels, classes);
  if (arch == "mobilenet_v2") return mobilenet_v2(channels, classes);
  if (arch == "small_cnn") return small_cnn(channels, classes);
  throw std::invalid_argument("unknown zoo architecture '" + arch + "'");
}

// torchvision's initialisation: Kaiming-normal convolutions (fan-out), unit batch norms.
void initialise(nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& m : net.modules(/*include_self=*/false)) {
    if (auto* c = m->as<nn::Conv2d>()) {
      nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* b = m->as<nn::BatchNorm2d>()) {
      nn::init::ones_(b->weight);
      nn::init::zeros_(b->bias);
    }
  }
}

class ZooModel final : public TorchModel {
 public:
  ZooModel(const ModelSpec& spec, c10::Device device) : TorchModel(make_info(spec), device) {
    if (spec.input_shape.size() != 3) {
      throw std::runtime_error("zoo model '" + spec.arch + "' for variant '" + spec.variant +
                               "' takes an input of [channels, height, width], not " +
                               shape_string(spec.input_shape));
    }
    torch::manual_seed(spec.seed);
    net_ = build(spec.arch, spec.input_shape[0], spec.classes);
    initialise(*net_);  // on the CPU, so the weights are the same on every device
    net_->to(device);
    net_->eval();
    probe();
  }

 protected:
  at::Tensor forward(const at::Tensor& batch) override { return net_->forward(batch); }

 private:
  static ModelInfo make_info(const ModelSpec& spec) {
    ModelInfo info;
    info.name = spec.variant;
    info.kind = "zoo:" + spec.arch;
    info.input_shape = spec.input_shape;
    return info;
  }
  nn::Sequential net_{nullptr};
};

}  // namespace

const std::vector<std::string>& zoo_architectures() {
  static const std::vector<std::string> names{
      "resnet18",        "resnet34",     "resnet50",  "resnet101", "resnet152", "wide_resnet50_2",
      "resnext50_32x4d", "mobilenet_v2", "small_cnn", "noop",      "sleep",     "faulty"};
  return names;
}

bool is_zoo_architecture(const std::string& name) {
  const auto& names = zoo_architectures();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::unique_ptr<Model> make_zoo_model(const ModelSpec& spec, c10::Device device) {
  return std::make_unique<ZooModel>(spec, device);
}

}  // namespace tessera
