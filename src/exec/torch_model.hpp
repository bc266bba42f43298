#pragma once

// Internal to tessera_exec: the libtorch side of Model. Only .cpp files of src/exec
// include this header.

#include <ATen/core/Tensor.h>

#include <memory>

#include "exec/model.hpp"
#include "exec/model_spec.hpp"

namespace tessera {

// A Model whose batch is one libtorch forward pass: the inputs are copied into one
// [batch, input_shape...] tensor, and the output's rows become the items' outputs.
class TorchModel : public Model {
 public:
  const ModelInfo& info() const override { return info_; }
  std::vector<FloatTensor> run(std::span<const FloatTensor* const> inputs) override;

 protected:
  explicit TorchModel(ModelInfo info) : info_(std::move(info)) {}
  virtual at::Tensor forward(const at::Tensor& batch) = 0;
  // Runs a batch of one zero input to learn info().output_shape; call at the end of
  // the subclass's constructor.
  void probe();

 private:
  ModelInfo info_;
};

std::unique_ptr<Model> make_zoo_model(const ModelSpec& spec);          // model_zoo.cpp
std::unique_ptr<Model> make_torchscript_model(const ModelSpec& spec);  // torchscript_model.cpp

}  // namespace tessera
