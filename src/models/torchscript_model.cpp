#include <torch/script.h>

#include <stdexcept>

#include "models/torch_model.hpp"

namespace tessera {
namespace {

// A user's TorchScript file (torch.jit.script or torch.jit.trace, saved with .save()).
// forward takes one [batch, input...] float tensor and returns a tensor whose first
// dimension is the batch, or a tuple/list whose first element is one.
class TorchScriptModel final : public TorchModel {
 public:
  TorchScriptModel(const ModelSpec& spec, c10::Device device)
      : TorchModel(make_info(spec), device) {
    try {
      module_ = torch::jit::load(spec.file.string(), device);
    } catch (const std::exception& e) {
      throw std::runtime_error("variant '" + spec.variant + "': cannot load TorchScript file " +
                               spec.file.string() + ": " + first_line(e.what()));
    }
    module_.eval();
    probe();
  }

 protected:
  at::Tensor forward(const at::Tensor& batch) override {
    // Module::forward is const-safe for concurrent inference; the input vector is ours.
    std::vector<torch::jit::IValue> args{batch};
    torch::jit::IValue out = module_.forward(args);
    if (out.isTensor()) return out.toTensor();
    if (out.isTuple()) return out.toTupleRef().elements().at(0).toTensor();
    if (out.isList()) return out.toListRef().at(0).toTensor();
    throw std::runtime_error("TorchScript forward returned neither a tensor nor a tuple");
  }

 private:
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
  static ModelInfo make_info(const ModelSpec& spec) {
    ModelInfo info;
    info.name = spec.variant;
    info.kind = "torchscript:" + spec.file.string();
    info.input_shape = spec.input_shape;
    return info;
  }
  torch::jit::Module module_;
};

}  // namespace

std::unique_ptr<Model> make_torchscript_model(const ModelSpec& spec, c10::Device device) {
  return std::make_unique<TorchScriptModel>(spec, device);
}

}  // namespace tessera
