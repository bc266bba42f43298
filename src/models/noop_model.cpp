#include "models/noop_model.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace tessera {
namespace {

class NoopModel final : public Model {
 public:
  explicit NoopModel(const ModelSpec& spec) {
    info_.name = spec.variant;
    info_.kind = spec.source == ModelSpec::Source::kProfileTimed ? kProfileTimedKind
                 : spec.arch == "sleep" || spec.arch == "faulty" ? spec.arch
                                                                 : "noop";
    delay_ms_ = spec.latency_ms;
    per_item_ms_ = spec.per_item_ms;
    info_.input_shape = spec.input_shape;
    info_.output_shape = spec.output_shape.empty() ? spec.input_shape : spec.output_shape;
  }
  const ModelInfo& info() const override { return info_; }
  std::vector<FloatTensor> run(std::span<const FloatTensor* const> inputs) override {
    std::vector<FloatTensor> out;
    out.reserve(inputs.size());
    const auto expected = static_cast<std::size_t>(shape_numel(info_.input_shape));
    bool stuck = false;
    for (const FloatTensor* in : inputs) {
      if (in->numel() != expected) throw std::runtime_error("noop: input of the wrong size");
      if (info_.kind == "faulty" && !in->data.empty()) {
        if (in->data[0] < 0) throw std::runtime_error("faulty: a negative first value");
        if (in->data[0] >= 1000) stuck = true;
      }
      if (info_.output_shape == info_.input_shape) {
        out.push_back(FloatTensor{info_.output_shape, in->data});
      } else {  // `sleep` with its own output shape: the input's first values, zero-padded
        std::vector<float> data(static_cast<std::size_t>(shape_numel(info_.output_shape)), 0.0f);
        std::copy_n(in->data.begin(), std::min(data.size(), in->data.size()), data.begin());
        out.push_back(FloatTensor{info_.output_shape, std::move(data)});
      }
    }
    if (info_.kind == "faulty") {
      if (stuck) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms_));
      return out;
    }
    const double ms = delay_ms_ + per_item_ms_ * static_cast<double>(inputs.size());
    if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    return out;
  }

 private:
  ModelInfo info_;
  double delay_ms_ = 0.0;
  double per_item_ms_ = 0.0;
};

}  // namespace

std::unique_ptr<Model> make_noop_model(const ModelSpec& spec) {
  return std::make_unique<NoopModel>(spec);
}

}  // namespace tessera
