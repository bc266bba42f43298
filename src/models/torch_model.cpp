#include "models/torch_model.hpp"

#include <torch/torch.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

#include "models/model_factory.hpp"
#include "models/noop_model.hpp"
#include "models/torch_device.hpp"

namespace tessera {

TorchModel::TorchModel(ModelInfo info, c10::Device device)
    : info_(std::move(info)), device_(device) {
  info_.device = device_.str();
}

std::vector<FloatTensor> TorchModel::run(std::span<const FloatTensor* const> inputs) {
  c10::InferenceMode guard;
  const bool cuda = device_.is_cuda();
  WorkerStreamGuard stream(device_);
  const auto batch = static_cast<int64_t>(inputs.size());
  const auto per_item = static_cast<std::size_t>(shape_numel(info_.input_shape));
  // libtorch 1.13 sends a convolution to oneDNN only for batches > 1 (or large inputs);
  // a single small image goes to im2col + BLAS, which with Debian's reference BLAS is
  // ~6x slower than a batch of two. So one item runs as two copies of itself (CPU only).
  const int64_t run_batch = batch == 1 && !cuda && info_.input_shape.size() == 3 ? 2 : batch;
  std::vector<int64_t> dims{run_batch};
  dims.insert(dims.end(), info_.input_shape.begin(), info_.input_shape.end());
  // Pinned host memory (from libtorch's caching host allocator) for a CUDA device, so the
  // copy to the device is an asynchronous DMA on this worker's stream.
  at::Tensor x =
      torch::empty(dims, torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(cuda));
  float* dst = x.data_ptr<float>();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i]->numel() != per_item) {
      throw std::runtime_error(info_.name + ": input " + std::to_string(i) + " has " +
                               std::to_string(inputs[i]->numel()) + " values, expected " +
                               std::to_string(per_item));
    }
    std::memcpy(dst + i * per_item, inputs[i]->data.data(), per_item * sizeof(float));
  }
  if (run_batch != batch) std::memcpy(dst + per_item, dst, per_item * sizeof(float));
  if (cuda) x = x.to(device_, /*non_blocking=*/true);
  // Back to the host: a blocking copy, which waits for this worker's stream.
  at::Tensor y = forward(x).to(torch::kFloat32).to(torch::kCPU).contiguous();
  if (y.dim() < 1 || y.size(0) != run_batch) {
    throw std::runtime_error(info_.name + ": output's first dimension is not the batch");
  }
  std::vector<int64_t> out_shape(y.sizes().begin() + 1, y.sizes().end());
  const auto per_out = static_cast<std::size_t>(shape_numel(out_shape));
  const float* src = y.data_ptr<float>();
  std::vector<FloatTensor> out(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    out[i].shape = out_shape;
    out[i].data.assign(src + i * per_out, src + (i + 1) * per_out);
  }
  return out;
}

void TorchModel::probe() {
  FloatTensor zero{info_.input_shape,
                   std::vector<float>(static_cast<std::size_t>(shape_numel(info_.input_shape)))};
  const FloatTensor* one[] = {&zero};
  try {
    info_.output_shape = run(one).at(0).shape;
  } catch (const std::exception& e) {
    throw std::runtime_error("model for variant '" + info_.name + "' (" + info_.kind +
                             ") cannot run on input " + shape_string(info_.input_shape) + ": " +
                             e.what());
  }
}

std::unique_ptr<Model> load_model(const ModelSpec& spec) {
  if (spec.source == ModelSpec::Source::kRemote) {
    throw std::runtime_error("variant '" + spec.variant +
                             "': a remote model is served by `tessera serve` only (its client "
                             "is the server's), not loaded here");
  }
  // Resolved for every model, so a device this build or machine cannot use is the same
  // clear error whether or not the model runs libtorch.
  const c10::Device device = torch_device_for(spec, torch_device_environment());
  if (spec.source == ModelSpec::Source::kTorchScript) return make_torchscript_model(spec, device);
  if (spec.source == ModelSpec::Source::kProfileTimed || spec.arch == "noop" ||
      spec.arch == "sleep" || spec.arch == "faulty")
    return make_noop_model(spec);
  return make_zoo_model(spec, device);
}

void configure_torch_threads(int threads) {
  static std::once_flag interop;
  std::call_once(interop, [] {
    try {
      at::set_num_interop_threads(1);
    } catch (const std::exception&) {
      // Already started by an earlier parallel call: keep its setting.
    }
  });
  at::set_num_threads(threads);
}

}  // namespace tessera
