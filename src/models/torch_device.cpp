#include "models/torch_device.hpp"

#include <torch/cuda.h>

#include <optional>
#include <stdexcept>

#include "core/error.hpp"

#ifdef TESSERA_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <map>
#endif

namespace tessera {

DeviceEnvironment torch_device_environment() {
  DeviceEnvironment env;
#ifdef TESSERA_WITH_CUDA
  env.built_with_cuda = true;
  env.visible_devices =
      torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
#endif
  env.cuda_visible_devices = cuda_visible_devices_from_env();
  return env;
}

c10::Device torch_device_for(const ModelSpec& spec, const DeviceEnvironment& env) {
  if (!spec.device || spec.device->device.is_cpu()) return c10::Device(c10::kCPU);
  const DeviceSetting& d = *spec.device;
  int ordinal = -1;
  try {
    ordinal = resolve_device(d.device, env);
  } catch (const std::runtime_error& e) {
    const std::string problem = "variant '" + spec.variant + "': " + e.what();
    if (d.file.empty()) throw std::runtime_error(d.field + ": " + problem);
    throw SpecError(d.file, d.field, problem);
  }
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(ordinal));
}

#ifdef TESSERA_WITH_CUDA
struct WorkerStreamGuard::Impl {
  explicit Impl(c10::cuda::CUDAStream stream) : guard(stream) {}
  c10::cuda::CUDAStreamGuard guard;
};

WorkerStreamGuard::WorkerStreamGuard(const c10::Device& device) {
  if (!device.is_cuda()) return;
  // One stream per worker thread and device, taken from libtorch's pool the first time.
  thread_local std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  auto it = streams.find(device.index());
  if (it == streams.end()) {
    it = streams
             .emplace(device.index(),
                      c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index()))
             .first;
  }
  impl_ = std::make_unique<Impl>(it->second);
}
#else
struct WorkerStreamGuard::Impl {};

WorkerStreamGuard::WorkerStreamGuard(const c10::Device&) {}
#endif

WorkerStreamGuard::~WorkerStreamGuard() = default;

}  // namespace tessera
