#pragma once

// Internal to tessera_exec: the libtorch side of Model. Only .cpp files of src/exec
// include this header.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>

#include "models/model.hpp"
#include "models/model_spec.hpp"

namespace tessera {

// A Model whose batch is one libtorch forward pass: the inputs are copied into one
// [batch, input_shape...] tensor, and the output's rows become the items' outputs. On a
// CUDA device the batch is assembled in pinned host memory, copied to the device on the
// worker thread's own stream, and the output copied back to the host.
class TorchModel : public Model {
 public:
  const ModelInfo& info() const override { return info_; }
  std::vector<FloatTensor> run(std::span<const FloatTensor* const> inputs) override;

 protected:
  // `device`: where the subclass puts its network (before probe()) and where run() sends
  // the batch (torch_device_for).
  TorchModel(ModelInfo info, c10::Device device);
  const c10::Device& device() const { return device_; }
  virtual at::Tensor forward(const at::Tensor& batch) = 0;
  // Runs a batch of one zero input to learn info().output_shape; call at the end of
  // the subclass's constructor.
  void probe();

 private:
  ModelInfo info_;
  c10::Device device_;
};

std::unique_ptr<Model> make_zoo_model(const ModelSpec& spec, c10::Device device);  // model_zoo.cpp
// torchscript_model.cpp
std::unique_ptr<Model> make_torchscript_model(const ModelSpec& spec, c10::Device device);

}  // namespace tessera
