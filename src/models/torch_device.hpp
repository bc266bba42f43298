#pragma once

// Internal to tessera_exec: turns a model's DeviceSetting into a libtorch device, and holds
// the CUDA-only parts of running a batch (a CUDA stream per worker thread), compiled only
// when TESSERA_WITH_CUDA is defined (CMake option TESSERA_CUDA, docs/serve.md). Only .cpp
// files of src/exec include this header. Thread-safe: no shared mutable state (the
// per-thread streams are thread_local).

#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "core/device.hpp"
#include "models/model_factory.hpp"
#include "models/model_spec.hpp"

namespace tessera {

// The device `spec` asks for (the CPU if unset). An unusable device is an error naming the
// file and field it came from and the variant: a SpecError, or for `--device` a
// std::runtime_error starting "--device: ".
c10::Device torch_device_for(const ModelSpec& spec, const DeviceEnvironment& env);

// While alive, the calling thread's libtorch work on `device` goes to that thread's own
// CUDA stream (one per worker thread and device, from libtorch's pool); a no-op on the CPU
// or without the CUDA path.
class WorkerStreamGuard {
 public:
  explicit WorkerStreamGuard(const c10::Device& device);
  ~WorkerStreamGuard();
  WorkerStreamGuard(const WorkerStreamGuard&) = delete;
  WorkerStreamGuard& operator=(const WorkerStreamGuard&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
