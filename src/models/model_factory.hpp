#pragma once

#include <memory>

#include "models/model.hpp"
#include "models/model_spec.hpp"

namespace tessera {

// What this process can run on: whether tessera was compiled with the CUDA path
// (TESSERA_CUDA, docs/serve.md#serving-on-gpus), how many CUDA devices libtorch sees, and
// CUDA_VISIBLE_DEVICES.
DeviceEnvironment torch_device_environment();

// Loads or builds the model for `spec` on its device (spec.device; the CPU if unset): a zoo
// architecture with seeded random weights (no weights can be downloaded here), a TorchScript file,
// or the no-op model. Runs one probe batch to learn the output shape. Errors (a missing file, an
// input shape the network cannot take) are std::runtime_error naming the variant; a device this
// build or machine cannot use is an error naming the file, the field (or `--device`) and the
// variant, e.g. "this tessera was built against a CPU-only libtorch".
std::unique_ptr<Model> load_model(const ModelSpec& spec);

// Sets libtorch's intra-op threads for the calling thread (and inter-op threads to 1 the
// first time). Every thread that runs models calls it once.
void configure_torch_threads(int threads);

}  // namespace tessera
