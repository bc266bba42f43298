#pragma once

#include <memory>

#include "exec/model.hpp"
#include "exec/model_spec.hpp"

namespace tessera {

// Loads or builds the model for `spec`: a zoo architecture with seeded random weights
// (no weights can be downloaded here), a TorchScript file, or the no-op model. Runs one
// probe batch to learn the output shape. Errors (a missing file, an input shape the
// network cannot take) are std::runtime_error naming the variant.
std::unique_ptr<Model> load_model(const ModelSpec& spec);

// Sets libtorch's intra-op threads for the calling thread (and inter-op threads to 1 the
// first time). Every thread that runs models calls it once.
void configure_torch_threads(int threads);

}  // namespace tessera
