#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/tensor.hpp"

namespace tessera {

// What a loaded model takes and returns, per item (no batch dimension).
struct ModelInfo {
  std::string name;  // the variant name it serves
  std::string kind;  // "zoo:resnet18", "torchscript:/path/m.pt", "noop"
  std::vector<int64_t> input_shape;
  std::vector<int64_t> output_shape;
  std::string device = "cpu";  // where it runs: "cpu", "cuda:0"
};

// A model that runs batches. run() may be called from several worker threads at once
// (a model shared by the application's workers and its single-model endpoint), so
// implementations must not mutate shared state while running.
class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  // Runs one batch: inputs[i] is item i, each of info().input_shape. Returns one output per
  // item, each of info().output_shape. Throws std::runtime_error on a model failure.
  virtual std::vector<FloatTensor> run(std::span<const FloatTensor* const> inputs) = 0;
};

}  // namespace tessera
